// Unit tests of single concern planners (StepConcerns.h) and of the edit writers (StepEditWriter.h):
// a planner takes the step's context and the facts decided before it and returns its slice of the
// descriptor, or blockers and no slice; an edit writer turns a hand-built descriptor into edits.
#include "StepConcerns.h"
#include "StepEditWriter.h"
#include "StepPlanner.h"
#include "AnalysedSnippet.h"

using namespace ampmigrate;
using namespace clang;

namespace {

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

/// The snippet's only step, its context, and its shape as the facts the concerns read.
struct OneStep : unittest::AnalysedSnippet {
  explicit OneStep(const std::string &Code) : AnalysedSnippet(Code) {
    if (!AST || TU.Functions.size() != 1 || TU.Functions.front().Steps.size() != 1) {
      ADD_FAILURE() << "not exactly one step";
      return;
    }
    const FunctionAnalysis &FA = TU.Functions.front();
    Tgt = Rules.Target;
    Names = namesIn(FA.Function);
    C = std::make_unique<StepContext>(AST->getASTContext(), Rules, FA, FA.Steps.front(), Opts, Tgt, TU);
    ConcernPlan<StepShape> Shape = planStepShape(*C, /*Refused=*/false, Names);
    EXPECT_TRUE(Shape.Blockers.empty());
    static_cast<StepShape &>(Facts) = Shape.Plan;
  }
  /// The text of the snippet at [Begin, End).
  std::string textAt(unsigned Begin, unsigned End) const { return C->Buffer.slice(Begin, End).str(); }

  PlannerOptions Opts;
  TargetApi Tgt;
  llvm::StringSet<> Names;
  std::unique_ptr<StepContext> C;
  StepFacts Facts;
};

TEST(ConcernPlanners, ShapeDecidesTheNamesOnce) {
  OneStep S(stepWithClip(""));
  ASSERT_TRUE(S.C);
  EXPECT_EQ(S.Facts.GradsName, "grads");
  EXPECT_EQ(S.Facts.GradFnName, "grad_fn");
  ASSERT_EQ(S.Facts.AllBackwards.size(), 1u);
  // Taken from the function's names: a second step of the function would get grads2.
  EXPECT_TRUE(S.Names.count("grads"));
}

TEST(ConcernPlanners, ClipPlannerReturnsItsSliceFromTheFacts) {
  OneStep S(stepWithClip("  torch::nn::utils::clip_grad_norm_(model->parameters(), /*max*/ 1.0);"));
  ASSERT_TRUE(S.C);
  // The planner reads the grads' name from the facts, not from another concern.
  S.Facts.GradsName = "g";
  ConcernPlan<std::vector<ClipEdit>> P = planClips(*S.C, S.Facts, S.Names);
  EXPECT_TRUE(P.Blockers.empty());
  ASSERT_EQ(P.Plan.size(), 1u);
  const ClipEdit &Clip = P.Plan.front();
  EXPECT_EQ(Clip.How, ClipEdit::Form::Statement);
  EXPECT_EQ(Clip.Grads, "g");
  EXPECT_EQ(Clip.MaxNorm, "/*max*/ 1.0");
  EXPECT_EQ(S.textAt(Clip.StmtBegin, Clip.StmtEnd),
            "torch::nn::utils::clip_grad_norm_(model->parameters(), /*max*/ 1.0);");
}

TEST(ConcernPlanners, ARefusedClipIsABlockerAndNoSlice) {
  OneStep S(stepWithClip("  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0, 1.0);"));
  ASSERT_TRUE(S.C);
  ConcernPlan<std::vector<ClipEdit>> P = planClips(*S.C, S.Facts, S.Names);
  EXPECT_TRUE(P.Plan.empty());
  ASSERT_EQ(P.Blockers.size(), 1u);
  EXPECT_NE(P.Blockers.front().Reason.find("is not L2"), std::string::npos);
}

TEST(ConcernPlanners, ScalerCallsGetTheGradsOfTheFacts) {
  OneStep S(stepWithClip(""));
  ASSERT_TRUE(S.C);
  ConcernPlan<std::vector<CallEdit>> P = planScalerCalls(*S.C, S.Facts);
  EXPECT_TRUE(P.Blockers.empty());
  // unscale_(opt) and step(opt) each take the grads before their `)`.
  ASSERT_EQ(P.Plan.size(), 2u);
  for (const CallEdit &E : P.Plan) {
    EXPECT_EQ(E.What, CallEdit::Kind::GradsArgument);
    EXPECT_EQ(E.Grads, "grads");
    EXPECT_EQ(S.textAt(E.Begin, E.Begin + 1), ")");
  }
}

/// The edits an edit writer makes of a descriptor, in order.
std::vector<Edit> written(const StepDescriptor &D, const TargetApi &Tgt) {
  std::vector<Edit> Edits;
  std::map<unsigned, std::string> Joined;
  std::vector<tooling::Replacement> Elsewhere;
  EditSink Out(Edits, Joined, Elsewhere);
  StepEditWriter(D, Tgt, Out).write();
  for (const auto &[At, Text] : Joined)
    Edits.push_back({At, 0, Text});
  return Edits;
}

TEST(EditWriters, HandBuiltDescriptorBecomesItsEdits) {
  TargetApi Tgt;
  Tgt.ClipInPlace = "amp::clip_grad_norm_";
  Tgt.Step = "amp::step";
  StepDescriptor D;
  D.GradsName = "grads";
  ClipEdit Clip;
  Clip.StmtBegin = 10;
  Clip.StmtEnd = 20;
  Clip.Grads = "grads";
  Clip.MaxNorm = "1.0";
  D.Clips.push_back(Clip);
  D.Calls.push_back({CallEdit::Kind::OptimizerStep, 30, 40, "opt", "grads"});
  D.ZeroGrads.push_back({/*Clears=*/true, 50, 60});
  D.ZeroGrads.push_back({/*Clears=*/false, 70, 75});
  D.Include = Edit{0, 0, "#include <amp/torch.h>\n"};
  std::vector<Edit> E = written(D, Tgt);
  ASSERT_EQ(E.size(), 5u);
  // The writers' order: calls, clips, zero_grads, the include.
  EXPECT_EQ(E[0].Offset, 30u);
  EXPECT_EQ(E[0].Text, "amp::step(opt, grads)");
  EXPECT_EQ(E[1].Offset, 10u);
  EXPECT_EQ(E[1].Length, 10u);
  EXPECT_EQ(E[1].Text, "amp::clip_grad_norm_(grads, 1.0);");
  EXPECT_EQ(E[2].Text, "grads.clear();");
  EXPECT_EQ(E[3].Offset, 70u);
  EXPECT_EQ(E[3].Length, 5u);
  EXPECT_EQ(E[3].Text, "");
  EXPECT_EQ(E[4].Text, "#include <amp/torch.h>\n");
}

TEST(EditWriters, AnEmptyDescriptorWritesNothing) {
  EXPECT_TRUE(written(StepDescriptor(), TargetApi()).empty());
}

} // namespace
