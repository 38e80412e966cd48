// Unit tests of the per-function summaries (CallSummaries.h): what a main file's functions are
// summarised as, the run's index across translation units (transitive, unknown, merged), and its
// round trip through the result cache's JSON.
#include "AnalysedSnippet.h"
#include "ampmigrate/CallSummaries.h"

using namespace ampmigrate;
using namespace clang;

namespace {

/// The snippet's summaries by qualified name.
std::map<std::string, FunctionSummary> summaries(const std::string &Body, SummaryIndex *Index = nullptr) {
  unittest::AnalysedSnippet A(Body);
  std::map<std::string, FunctionSummary> Out;
  if (!A.AST)
    return Out;
  ASTContext &Ctx = A.AST->getASTContext();
  SummaryIndex I = summariseMainFile(Ctx, A.Rules);
  for (const auto &[USR, S] : I.Functions)
    Out[S.Name] = S;
  if (Index)
    *Index = I;
  return Out;
}

TEST(CallSummaries, FactsThroughTheBodiesOfTheTranslationUnit) {
  auto S = summaries(R"cpp(
void elsewhere(Net &m);
void reads(Net &m) { for (auto &p : m->parameters()) p.grad().sum(); }
void clears(Net &m) { for (auto &p : m->parameters()) p.grad().zero_(); }
void enables() { at::autocast::set_enabled(true); }
void disables() { at::autocast::set_enabled(false); }
void calls(Net &m) { reads(m); enables(); elsewhere(m); }
)cpp");
  ASSERT_EQ(S.count("reads"), 1u);
  EXPECT_EQ(S["reads"].GradAt, S["reads"].GradReadAt);
  EXPECT_FALSE(S["reads"].GradReadAt.empty());
  EXPECT_FALSE(S["clears"].GradAt.empty());
  EXPECT_TRUE(S["clears"].GradReadAt.empty()) << "clearing .grad is not reading it";
  EXPECT_FALSE(S["enables"].AutocastAt.empty());
  EXPECT_TRUE(S["disables"].AutocastAt.empty()) << "set_enabled(false) enables nothing";
  // Callees with bodies are folded in; the one without stays named by USR.
  EXPECT_FALSE(S["calls"].GradReadAt.empty());
  EXPECT_FALSE(S["calls"].AutocastAt.empty());
  ASSERT_EQ(S["calls"].External.size(), 1u);
  EXPECT_NE(S["calls"].External.front().find("elsewhere"), std::string::npos);
  EXPECT_EQ(S.count("elsewhere"), 0u) << "a declaration is not summarised";
}

// What a body does in library code counts too (issue #37): an optimizer's step() or a model's
// zero_grad() acts on .grad without a `.grad()` of the project's, and a call through a function
// pointer runs what is not known.
TEST(CallSummaries, LibraryGradActionsAndIndirectCalls) {
  auto S = summaries(R"cpp(
void steps(torch::optim::SGD &o) { o.step(); }
void zeroes(Net &m) { m->zero_grad(); }
void hook(void (*cb)()) { cb(); }
void calls_hook(void (*cb)()) { hook(cb); }
float plain(float v) { return v * 2; }
)cpp");
  EXPECT_FALSE(S["steps"].GradAt.empty());
  EXPECT_FALSE(S["zeroes"].GradAt.empty());
  EXPECT_FALSE(S["hook"].IndirectAt.empty());
  EXPECT_FALSE(S["calls_hook"].IndirectAt.empty()) << "through a callee with a body";
  EXPECT_TRUE(S["plain"].GradAt.empty());
  EXPECT_TRUE(S["plain"].IndirectAt.empty());
  EXPECT_TRUE(S["plain"].BackwardAt.empty());
}

TEST(CallSummaries, TheIndexFollowsFunctionsAcrossFiles) {
  SummaryIndex Index;
  auto summary = [](std::string Name, std::string Where, std::string Autocast, std::vector<std::string> Ext) {
    FunctionSummary S;
    S.Name = std::move(Name);
    S.Where = std::move(Where);
    S.AutocastAt = std::move(Autocast);
    S.External = std::move(Ext);
    return S;
  };
  FunctionSummary A = summary("a", "a.cpp:1", "", {"c:@F@b#"});
  FunctionSummary B = summary("b", "b.cpp:3", "", {"c:@F@c#"});
  FunctionSummary C = summary("c", "c.cpp:5", "c.cpp:6", {});
  Index.add("c:@F@a#", A);
  Index.add("c:@F@b#", B);
  CalleeAnswer Unknown = askIndex(Index, "c:@F@a#", CalleeFact::EnablesAutocast);
  EXPECT_EQ(Unknown.K, CalleeAnswer::Kind::Unknown);
  EXPECT_EQ(Unknown.Function, "c:@F@c#") << "names the function no summary has";
  Index.add("c:@F@c#", C);
  CalleeAnswer Yes = askIndex(Index, "c:@F@a#", CalleeFact::EnablesAutocast);
  EXPECT_EQ(Yes.K, CalleeAnswer::Kind::Yes);
  EXPECT_EQ(Yes.Function, "c");
  EXPECT_EQ(Yes.Where, "c.cpp:6");
  EXPECT_EQ(askIndex(Index, "c:@F@a#", CalleeFact::ReadsGrad).K, CalleeAnswer::Kind::No);
}

TEST(CallSummaries, TwoSummariesOfOneFunctionKeepEveryFact) {
  SummaryIndex Index;
  FunctionSummary X, Y;
  X.Name = Y.Name = "f";
  X.Where = "x.cpp:1";
  X.External = {"v"};
  X.BackwardAt = "x.cpp:4";
  Y.Where = "y.cpp:1";
  Y.GradAt = Y.GradReadAt = "y.cpp:2";
  Y.External = {"w"};
  Index.add("u", X);
  Index.add("u", Y);
  EXPECT_EQ(Index.Functions["u"].GradReadAt, "y.cpp:2");
  EXPECT_EQ(Index.Functions["u"].BackwardAt, "x.cpp:4");
  EXPECT_EQ(Index.Functions["u"].External, (std::vector<std::string>{"v", "w"}));
}

TEST(CallSummaries, ACallerOfAnotherFileThatTrains) {
  SummaryIndex Index;
  FunctionSummary Eval, Train;
  Eval.Name = "evaluate";
  Eval.External = {"c:@F@forward_and_loss#"};
  Train.Name = "train_step";
  Train.External = {"c:@F@forward_and_loss#"};
  Train.BackwardAt = "trainer.cpp:8";
  Index.add("c:@F@evaluate#", Eval);
  EXPECT_EQ(trainingCallerIn(Index, "c:@F@forward_and_loss#"), nullptr) << "a caller that does not train";
  Index.add("c:@F@train_step#", Train);
  const FunctionSummary *T = trainingCallerIn(Index, "c:@F@forward_and_loss#");
  ASSERT_NE(T, nullptr);
  EXPECT_EQ(T->Name, "train_step");
}

TEST(CallSummaries, RoundTripThroughJSON) {
  SummaryIndex Index;
  summaries(R"cpp(
void helper(Net &m) { for (auto &p : m->parameters()) p.grad().sum(); }
void other(Net &m);
void top(Net &m) { helper(m); other(m); }
void hook(void (*cb)()) { cb(); }
)cpp", &Index);
  ASSERT_FALSE(Index.empty());
  std::optional<SummaryIndex> Back = SummaryIndex::fromJSON(Index.toJSON());
  ASSERT_TRUE(Back);
  ASSERT_EQ(Back->Functions.size(), Index.Functions.size());
  for (const auto &[USR, S] : Index.Functions) {
    const FunctionSummary &T = Back->Functions.at(USR);
    EXPECT_EQ(T.Name, S.Name);
    EXPECT_EQ(T.Where, S.Where);
    EXPECT_EQ(T.GradReadAt, S.GradReadAt);
    EXPECT_EQ(T.BackwardAt, S.BackwardAt);
    EXPECT_EQ(T.IndirectAt, S.IndirectAt);
    EXPECT_EQ(T.External, S.External);
  }
  EXPECT_FALSE(SummaryIndex::fromJSON(llvm::json::Value(3)));
}

} // namespace
