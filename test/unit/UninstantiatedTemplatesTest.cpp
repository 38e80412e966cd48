// Unit tests of the analysis of templates this translation unit never instantiates: which calls
// of their definition stay unresolved, and that their steps and scopes are neither planned on
// what those calls might be nor called inference.
#include "AnalysedSnippet.h"

using namespace ampmigrate;
using namespace clang;

namespace {

const char *TrainStep = R"cpp(
template <class Model>
void train_step(Model &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  opt.zero_grad();
  at::autocast::set_enabled(true);
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}
)cpp";

const FunctionAnalysis *analysisOf(const TranslationUnitAnalysis &TU, StringRef Name) {
  for (const FunctionAnalysis &FA : TU.Functions)
    if (FA.Function->getName() == Name)
      return &FA;
  return nullptr;
}

std::string blockersOf(unittest::AnalysedSnippet &A, size_t *Edits = nullptr) {
  std::string Out;
  for (const MigrationPlan &P : planMigrations(A.AST->getASTContext(), A.Rules, A.TU, PlannerOptions())) {
    for (const Blocker &B : P.Blockers)
      Out += B.Reason + "\n";
    if (Edits)
      *Edits += P.Edits.size();
  }
  return Out;
}

TEST(UninstantiatedTemplates, CallsOnATemplateParameterAreUnresolvedAndNamed) {
  unittest::AnalysedSnippet A(TrainStep);
  const FunctionAnalysis *FA = analysisOf(A.TU, "train_step");
  ASSERT_NE(FA, nullptr);
  ASSERT_FALSE(FA->UnresolvedCalls.empty());
  std::vector<std::string> Texts;
  for (const CallExpr *CE : FA->UnresolvedCalls)
    Texts.push_back(StepFinder::textOf(A.AST->getASTContext(), CE->getSourceRange()));
  // The forward, the tensor method on its result, and scale() of the loss of dependent type and
  // the backward on that: the autocast calls, step() and update() are resolved.
  EXPECT_EQ(Texts, (std::vector<std::string>{"model->forward(x).sum()", "model->forward(x)",
                                             "scaler.scale(loss).backward()", "scaler.scale(loss)"}));
  EXPECT_FALSE(FA->InferenceOnly);
  size_t Edits = 0;
  std::string Why = blockersOf(A, &Edits);
  EXPECT_EQ(Edits, 0u);
  EXPECT_NE(Why.find("this step is in the function template 'train_step', which this translation "
                     "unit never instantiates; its calls on dependent types are not resolved "
                     "(`model->forward(x).sum()` at line 11)"),
            std::string::npos)
      << Why;
  EXPECT_EQ(Why.find("different functions"), std::string::npos) << Why;
}

TEST(UninstantiatedTemplates, OneInstantiationIsAnalysedResolved) {
  unittest::AnalysedSnippet A(std::string(TrainStep) +
                              "void run(Net &n, torch::optim::SGD &o, const torch::Tensor &x) {\n"
                              "  train_step(n, o, x);\n}\n");
  const FunctionAnalysis *FA = analysisOf(A.TU, "train_step");
  ASSERT_NE(FA, nullptr);
  EXPECT_TRUE(FA->Function->isTemplateInstantiation());
  EXPECT_TRUE(FA->UnresolvedCalls.empty());
  size_t Edits = 0;
  EXPECT_EQ(blockersOf(A, &Edits), "");
  EXPECT_GT(Edits, 0u);
}

TEST(UninstantiatedTemplates, ATemplateWithNothingDependentIsAnalysedAsWritten) {
  unittest::AnalysedSnippet A(R"cpp(
template <int N>
void fixed(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  auto loss = model->forward(x).sum() * N;
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}
)cpp");
  const FunctionAnalysis *FA = analysisOf(A.TU, "fixed");
  ASSERT_NE(FA, nullptr);
  EXPECT_TRUE(FA->UnresolvedCalls.empty());
  ASSERT_EQ(FA->Steps.size(), 1u);
  EXPECT_EQ(blockersOf(A), "");
}

TEST(UninstantiatedTemplates, AScopeWhoseValuesGoToAnUnresolvedCallIsNotInference) {
  unittest::AnalysedSnippet A(R"cpp(
template <class Model>
torch::Tensor predict_or_train(Model &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  auto out = model->forward(x);
  at::autocast::set_enabled(false);
  return consume(out);
}
)cpp");
  const FunctionAnalysis *FA = analysisOf(A.TU, "predict_or_train");
  ASSERT_NE(FA, nullptr);
  EXPECT_FALSE(FA->UnresolvedCalls.empty());
  EXPECT_FALSE(FA->InferenceOnly);
}

} // namespace

namespace {

const char *LambdaStep = R"cpp(
void run(Net &net, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  auto step = [&](auto &model) {
    at::autocast::set_enabled(true);
    auto loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
  };
  CALL
}
)cpp";

std::string withCall(const char *Call) {
  std::string Code = LambdaStep;
  Code.replace(Code.find("CALL"), 4, Call);
  return Code;
}

TEST(UninstantiatedTemplates, AGenericLambdaNothingCallsIsUnresolved) {
  unittest::AnalysedSnippet A(withCall("(void)step;"));
  const FunctionAnalysis *FA = analysisOf(A.TU, "run");
  ASSERT_NE(FA, nullptr);
  EXPECT_FALSE(FA->UnresolvedCalls.empty());
  EXPECT_EQ(FA->UncalledLambdas.size(), 1u);
  std::string Why = blockersOf(A);
  EXPECT_NE(Why.find("this step is in the generic lambda at line 7, which nothing in this "
                     "translation unit calls"),
            std::string::npos)
      << Why;
}

TEST(UninstantiatedTemplates, AGenericLambdaCalledOnceIsResolved) {
  unittest::AnalysedSnippet A(withCall("step(net);"));
  const FunctionAnalysis *FA = analysisOf(A.TU, "run");
  ASSERT_NE(FA, nullptr);
  EXPECT_TRUE(FA->UnresolvedCalls.empty());
  EXPECT_TRUE(FA->UncalledLambdas.empty());
  EXPECT_EQ(blockersOf(A).find("nothing in this translation unit calls"), std::string::npos);
}

} // namespace
