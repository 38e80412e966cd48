// Unit tests of the planner's feasibility stage alone (assessStep): a step is refused there, with
// its reason and location, before any edit writer runs; a feasible step's descriptor holds what the
// edit writers will write. Small ASTs against the mock libtorch headers.
#include "StepPlanner.h"
#include "AnalysedSnippet.h"

using namespace ampmigrate;
using namespace clang;

namespace {

struct Analysed : unittest::AnalysedSnippet {
  using AnalysedSnippet::AnalysedSnippet;

  /// Feasibility of the only step of the snippet.
  std::optional<StepAssessment> assessOnlyStep() {
    if (!AST || TU.Functions.size() != 1 || TU.Functions.front().Steps.size() != 1) {
      ADD_FAILURE() << "not exactly one step";
      return std::nullopt;
    }
    const FunctionAnalysis &FA = TU.Functions.front();
    return assessStep(AST->getASTContext(), Rules, TU, FA, FA.Steps.front(), PlannerOptions());
  }

  std::vector<MigrationPlan> plans() {
    return planMigrations(AST->getASTContext(), Rules, TU, PlannerOptions());
  }

  /// "line:column" of a location in the snippet's file.
  std::string at(SourceLocation L) const {
    PresumedLoc P = AST->getSourceManager().getPresumedLoc(L);
    return std::to_string(P.getLine()) + ":" + std::to_string(P.getColumn());
  }
};

/// A step whose clip is written as `CLIP` (a statement of its own after unscale_).
std::string stepWithClip(const std::string &Clip) {
  return R"cpp(
void train(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  scaler.unscale_(opt);
)cpp" + Clip + R"cpp(
  scaler.step(opt);
  scaler.update();
}
)cpp";
}

TEST(StepFeasibility, ClipWithAnotherNormThanL2IsRefusedByFeasibility) {
  Analysed A(stepWithClip("  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0, 1.0);"));
  std::optional<StepAssessment> S = A.assessOnlyStep();
  ASSERT_TRUE(S);
  ASSERT_EQ(S->Blockers.size(), 1u);
  EXPECT_EQ(S->Blockers.front().Reason, "clip norm type 1.0 is not L2; clip_by_global_norm only does the L2 norm");
  // The clip call: line 16 of the file (4 lines of prelude, the snippet's leading newline).
  EXPECT_EQ(A.at(S->Blockers.front().Loc), "16:3");
  // Nothing was decided for the clip; the rest of the step was checked as usual.
  EXPECT_TRUE(S->Descriptor.Clips.empty());
  EXPECT_EQ(S->Descriptor.GradsName, "grads");

  std::vector<MigrationPlan> Plans = A.plans();
  ASSERT_EQ(Plans.size(), 1u);
  ASSERT_EQ(Plans.front().Blockers.size(), 1u);
  EXPECT_EQ(Plans.front().Blockers.front().Reason, S->Blockers.front().Reason);
  EXPECT_TRUE(Plans.front().Edits.empty());
}

TEST(StepFeasibility, ClipThatThrowsOnNonFiniteNormIsRefusedByFeasibility) {
  Analysed A(stepWithClip("  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0, 2.0, true);"));
  std::optional<StepAssessment> S = A.assessOnlyStep();
  ASSERT_TRUE(S);
  ASSERT_EQ(S->Blockers.size(), 1u);
  EXPECT_NE(S->Blockers.front().Reason.find("error_if_nonfinite = `true`"), std::string::npos)
      << S->Blockers.front().Reason;
  EXPECT_TRUE(S->Descriptor.Clips.empty());
}

TEST(StepFeasibility, FeasibleStepYieldsItsDescriptor) {
  Analysed A(stepWithClip("  double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), 0.5);\n"
                          "  (void)norm;"));
  std::optional<StepAssessment> S = A.assessOnlyStep();
  ASSERT_TRUE(S);
  EXPECT_TRUE(S->Blockers.empty());
  const StepDescriptor &D = S->Descriptor;
  EXPECT_EQ(D.GradsName, "grads");
  EXPECT_EQ(D.GradFnName, "grad_fn");
  EXPECT_EQ(D.OptParams, "amp::parameters_of(opt)");
  EXPECT_FALSE(D.Accumulation.On);
  // The clip: its result initialises a declaration, so the call becomes the norm.
  ASSERT_EQ(D.Clips.size(), 1u);
  EXPECT_EQ(D.Clips.front().How, ClipEdit::Form::NormInDeclaration);
  EXPECT_EQ(D.Clips.front().Grads, "grads");
  EXPECT_EQ(D.Clips.front().MaxNorm, "0.5");
  // unscale_ and step take the grads; nothing is renamed.
  ASSERT_EQ(D.Calls.size(), 2u);
  for (const CallEdit &C : D.Calls) {
    EXPECT_EQ(C.What, CallEdit::Kind::GradsArgument);
    EXPECT_EQ(C.Grads, "grads");
  }
  // The forward region: the lambda's pieces (the edit writer puts them together with the names).
  ASSERT_TRUE(D.Lambda.has_value());
  EXPECT_EQ(D.Lambda->Returns, "scaler.scale(loss)");
  EXPECT_EQ(D.Lambda->ValueName, "scaled_loss");
  EXPECT_EQ(D.Lambda->Indent, "  ");
  EXPECT_EQ(D.Lambda->Body, "    loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();\n");
  EXPECT_NE(D.Lambda->Before.find("auto amp_model = amp::auto_mixed_precision(model"), std::string::npos)
      << D.Lambda->Before;
  EXPECT_TRUE(D.Include.has_value());

  std::vector<MigrationPlan> Plans = A.plans();
  ASSERT_EQ(Plans.size(), 1u);
  EXPECT_TRUE(Plans.front().Blockers.empty());
  EXPECT_FALSE(Plans.front().Edits.empty());
}

TEST(StepFeasibility, EveryRefusedClipIsReportedInSourceOrder) {
  // A clip refused does not stop the checks of the next one: both reasons, in order.
  Analysed A(stepWithClip("  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0, 1.0);\n"
                          "  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0, 3.0);"));
  std::optional<StepAssessment> S = A.assessOnlyStep();
  ASSERT_TRUE(S);
  ASSERT_EQ(S->Blockers.size(), 2u);
  EXPECT_EQ(S->Blockers[0].Reason, "clip norm type 1.0 is not L2; clip_by_global_norm only does the L2 norm");
  EXPECT_EQ(S->Blockers[1].Reason, "clip norm type 3.0 is not L2; clip_by_global_norm only does the L2 norm");
  EXPECT_EQ(A.at(S->Blockers[0].Loc), "16:3");
  EXPECT_EQ(A.at(S->Blockers[1].Loc), "17:3");
}

} // namespace

namespace {

/// The only step of the function named `Fn` in the snippet, assessed.
std::optional<StepAssessment> assessStepOf(Analysed &A, llvm::StringRef Fn) {
  for (const FunctionAnalysis &FA : A.TU.Functions)
    if (FA.Function->getName() == Fn && FA.Steps.size() == 1)
      return assessStep(A.AST->getASTContext(), A.Rules, A.TU, FA, FA.Steps.front(), PlannerOptions());
  ADD_FAILURE() << "no function '" << Fn.str() << "' with one step";
  return std::nullopt;
}

const char *Fp32Model = R"cpp(
struct FpImpl : torch::nn::Module { torch::Tensor forward(const torch::Tensor &x) { return x * 2; } };
TORCH_MODULE(Fp);
)cpp";

} // namespace

// Issue #38 "Shape 2": a scaler and no autocast scope. The region is what the loss is computed
// from, after the zero_grad() that ends the previous step; no model is converted (O0).
TEST(StepFeasibility, ScaledStepWithNoScopeIsRewrittenAtO0) {
  Analysed A(std::string(Fp32Model) + R"cpp(
void train(Fp &model, torch::optim::SGD &opt, const torch::Tensor &x, int steps) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    auto out = model->forward(x);
    auto loss = out.sum();
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
  }
}
)cpp");
  std::optional<StepAssessment> S = assessStepOf(A, "train");
  ASSERT_TRUE(S);
  EXPECT_TRUE(S->Blockers.empty()) << S->Blockers.front().Reason;
  EXPECT_TRUE(S->Descriptor.Unscoped);
  ASSERT_TRUE(S->Descriptor.Lambda);
  EXPECT_EQ(S->Descriptor.Lambda->Body, "      auto out = model->forward(x);\n      auto loss = out.sum();\n");
  EXPECT_EQ(S->Descriptor.Lambda->Before, ""); // no amp::auto_mixed_precision line
  EXPECT_EQ(S->Descriptor.Lambda->Returns, "scaler.scale(loss)");
}

// The model's forward is declared but defined elsewhere: it may open autocast itself.
TEST(StepFeasibility, ScaledStepWithNoScopeAndAForwardElsewhereIsRefused) {
  Analysed A(R"cpp(
void train(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  auto loss = model->forward(x).sum();
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}
)cpp");
  std::optional<StepAssessment> S = assessStepOf(A, "train");
  ASSERT_TRUE(S);
  ASSERT_EQ(S->Blockers.size(), 1u);
  EXPECT_NE(S->Blockers.front().Reason.find("runs 'NetImpl::forward', whose body is in no file of this "
                                            "run or of its compilation database"),
            std::string::npos)
      << S->Blockers.front().Reason;
  EXPECT_EQ(A.at(S->Blockers.front().Loc), "8:15"); // `model->forward(x)`
}

// The analysis gives a step with no scope the forwards of its block, not one of an earlier block.
TEST(StepFeasibility, ScaledStepWithNoScopeOwnsTheForwardsOfItsBlock) {
  Analysed A(std::string(Fp32Model) + R"cpp(
void train(Fp &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  { auto warm = model->forward(x); }
  auto loss = model->forward(x).sum();
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}
)cpp");
  const FunctionAnalysis *Train = nullptr;
  for (const FunctionAnalysis &FA : A.TU.Functions)
    if (FA.Function->getName() == "train")
      Train = &FA;
  ASSERT_TRUE(Train);
  {
    const FunctionAnalysis &FA = *Train;
    ASSERT_EQ(FA.Steps.size(), 1u);
    const TrainingStep &T = FA.Steps.front();
    EXPECT_EQ(T.Scope, nullptr);
    ASSERT_EQ(T.Forwards.size(), 1u);
    EXPECT_EQ(A.at(T.Forwards.front()->Call->getBeginLoc()), "12:15");
  }
}
