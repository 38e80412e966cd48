// Unit tests of the analysis' scope facts that the reasons of scopes without a rewritable step
// rest on (issue #38 item 7): a hole in a function-long scope, and where a scope's values leave
// its function (handed to a function that trains, a loss returned to a caller in another file).
#include "AnalysedSnippet.h"

using namespace ampmigrate;

namespace {

const FunctionAnalysis *functionNamed(const TranslationUnitAnalysis &TU, llvm::StringRef Name) {
  for (const FunctionAnalysis &FA : TU.Functions)
    if (FA.Function->getName() == Name)
      return &FA;
  ADD_FAILURE() << "no analysed function " << Name.str();
  return nullptr;
}

TEST(ScopeFacts, OffAndOnInsideTheLoopIsAHoleInOneScope) {
  unittest::AnalysedSnippet A(R"cpp(
void train(Net &m, torch::optim::SGD &opt, const torch::Tensor &x, int n) {
  at::autocast::set_enabled(true);
  for (int i = 0; i < n; ++i) {
    auto y = m->forward(x);
    at::autocast::set_enabled(false);
    auto loss = y.sum();
    loss.backward();
    at::autocast::set_enabled(true);
    opt.step();
  }
  at::autocast::set_enabled(false);
}
)cpp");
  const FunctionAnalysis *FA = functionNamed(A.TU, "train");
  ASSERT_TRUE(FA);
  ASSERT_EQ(FA->Scopes.size(), 1u);
  const AutocastScope &S = FA->Scopes.front();
  ASSERT_EQ(S.Holes.size(), 1u);
  EXPECT_NE(S.Disable, S.Holes.front().Off);
  EXPECT_LT(S.Begin, S.End);
  ASSERT_EQ(FA->Steps.size(), 1u);
  EXPECT_EQ(FA->Steps.front().Scope, &S);
}

TEST(ScopeFacts, ACloseInsideTheLoopWithNoReEnableIsNoHole) {
  unittest::AnalysedSnippet A(R"cpp(
void train(Net &m, torch::optim::SGD &opt, const torch::Tensor &x, int n) {
  at::autocast::set_enabled(true);
  for (int i = 0; i < n; ++i) {
    auto loss = m->forward(x).sum();
    at::autocast::set_enabled(false);
    loss.backward();
    opt.step();
  }
}
)cpp");
  const FunctionAnalysis *FA = functionNamed(A.TU, "train");
  ASSERT_TRUE(FA);
  ASSERT_EQ(FA->Scopes.size(), 1u);
  EXPECT_TRUE(FA->Scopes.front().Holes.empty());
}

TEST(ScopeFacts, ValuesHandedToAFunctionThatTrainsAreNotInference) {
  unittest::AnalysedSnippet A(R"cpp(
void optimize(torch::optim::SGD &opt, const torch::Tensor &loss) {
  loss.backward();
  opt.step();
}
void update(Net &m, torch::optim::SGD &opt, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  auto loss = m->forward(x).sum();
  at::autocast::set_enabled(false);
  optimize(opt, loss);
}
)cpp");
  const FunctionAnalysis *FA = functionNamed(A.TU, "update");
  ASSERT_TRUE(FA);
  EXPECT_FALSE(FA->InferenceOnly);
  ASSERT_EQ(FA->Scopes.size(), 1u);
  ASSERT_TRUE(FA->Scopes.front().HandedTo);
  EXPECT_EQ(FA->Scopes.front().HandedTo->getDirectCallee()->getName(), "optimize");
  ASSERT_TRUE(FA->Scopes.front().HandedToBackward);
}

TEST(ScopeFacts, ALossReturnedToNoCallerHereIsNotInferenceButAForwardOutputIs) {
  unittest::AnalysedSnippet A(R"cpp(
torch::Tensor forward_and_loss(Net &m, const torch::Tensor &x, const torch::Tensor &y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(m->forward(x), y);
  at::autocast::set_enabled(false);
  return loss;
}
torch::Tensor predict(Net &m, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  auto out = m->forward(x);
  at::autocast::set_enabled(false);
  return out;
}
)cpp");
  const FunctionAnalysis *Loss = functionNamed(A.TU, "forward_and_loss");
  const FunctionAnalysis *Predict = functionNamed(A.TU, "predict");
  ASSERT_TRUE(Loss && Predict);
  EXPECT_FALSE(Loss->InferenceOnly);
  EXPECT_TRUE(Loss->Scopes.front().ReturnedUncalled);
  EXPECT_TRUE(Predict->InferenceOnly);
  EXPECT_FALSE(Predict->Scopes.front().ReturnedUncalled);
}

} // namespace
