// Unit tests of the analysis' one membership rule (which statements belong to a training step)
// and of the planner on it, over small ASTs against the mock libtorch headers.
#include "AnalysedSnippet.h"

using namespace ampmigrate;
using namespace clang;

namespace {

struct Analysed : unittest::AnalysedSnippet {
  using AnalysedSnippet::AnalysedSnippet;

  const TrainingStep *onlyStep() const {
    const TrainingStep *Found = nullptr;
    for (const FunctionAnalysis &FA : TU.Functions)
      for (const TrainingStep &T : FA.Steps) {
        EXPECT_EQ(Found, nullptr) << "more than one step";
        Found = &T;
      }
    EXPECT_NE(Found, nullptr) << "no step";
    return Found;
  }

  /// The text of the statement holding `E`, as written.
  std::string text(const Stmt *S) const {
    return StepFinder::textOf(AST->getASTContext(), S->getSourceRange());
  }

  /// The file after applying every planned edit (or the blockers' reasons, joined).
  std::string migrated(std::string *Blockers = nullptr) {
    ASTContext &Ctx = AST->getASTContext();
    std::vector<MigrationPlan> Plans = planMigrations(Ctx, Rules, TU, PlannerOptions());
    tooling::Replacements Reps;
    for (const MigrationPlan &P : Plans) {
      for (const Blocker &B : P.Blockers)
        if (Blockers)
          *Blockers += B.Reason + "\n";
      for (const tooling::Replacement &R : P.Edits)
        if (llvm::Error E = Reps.add(R))
          ADD_FAILURE() << llvm::toString(std::move(E));
    }
    StringRef Code = Ctx.getSourceManager().getBufferData(Ctx.getSourceManager().getMainFileID());
    llvm::Expected<std::string> Out = tooling::applyAllReplacements(Code, Reps);
    if (!Out) {
      ADD_FAILURE() << llvm::toString(Out.takeError());
      return "";
    }
    return *Out;
  }
};

const char *TwoOptimizersClipBetweenSteps = R"cpp(
void train(Net &enc, Net &dec, const torch::Tensor &x, const torch::Tensor &y) {
  torch::optim::SGD enc_opt(enc->parameters(), torch::optim::SGDOptions(0.1));
  torch::optim::SGD dec_opt(dec->parameters(), torch::optim::SGDOptions(0.1));
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = torch::mse_loss(dec->forward(enc->forward(x)), y);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  scaler.unscale_(enc_opt);
  scaler.unscale_(dec_opt);
  scaler.step(enc_opt);
  torch::nn::utils::clip_grad_norm_(dec_opt.parameters(), 1.0);
  scaler.step(dec_opt);
  scaler.update();
}
)cpp";

TEST(StepMembership, ClipBetweenTwoStepsBelongsToTheStep) {
  Analysed A(TwoOptimizersClipBetweenSteps);
  const TrainingStep *T = A.onlyStep();
  ASSERT_NE(T, nullptr);
  ASSERT_EQ(T->Clips.size(), 1u);
  EXPECT_EQ(T->Steps.size(), 2u);
  EXPECT_TRUE(T->GradAccesses.empty());
  // The clip names the second optimizer's parameters.
  EXPECT_TRUE(T->stepsOptimizer(T->Clips.front()->ParamsOwner));
  EXPECT_EQ(T->Clips.front()->ParamsOwner, T->Steps[1]->Optimizer);
}

TEST(StepMembership, ClipBetweenTwoStepsIsRewrittenOntoThatOptimizersGrads) {
  Analysed A(TwoOptimizersClipBetweenSteps);
  std::string Blockers;
  std::string Out = A.migrated(&Blockers);
  EXPECT_EQ(Blockers, "");
  EXPECT_NE(Out.find("scaler.step(enc_opt, grads_enc_opt);\n  "
                     "amp::clip_by_global_norm_(grads_dec_opt, 1.0);\n  scaler.step(dec_opt, grads_dec_opt);"),
            std::string::npos)
      << Out;
  EXPECT_EQ(Out.find("clip_grad_norm_"), std::string::npos) << Out;
}

TEST(StepMembership, ClipAfterTheLastStepIsNotAMember) {
  Analysed A(R"cpp(
void train(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
}
)cpp");
  const TrainingStep *T = A.onlyStep();
  ASSERT_NE(T, nullptr);
  EXPECT_TRUE(T->Clips.empty());
}

TEST(StepMembership, GradReadersAndParameterConsumersBetweenBackwardAndStep) {
  Analysed A(R"cpp(
void average(std::vector<torch::Tensor> params, int n);
void train(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, int world) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  for (auto &p : model->parameters())
    p.grad() /= world;
  average(model->parameters(), world);
  auto norm = loss.item<float>();
  scaler.unscale_(opt);
  scaler.step(opt);
  scaler.update();
  (void)norm;
}
)cpp");
  const TrainingStep *T = A.onlyStep();
  ASSERT_NE(T, nullptr);
  ASSERT_EQ(T->GradAccesses.size(), 2u);
  EXPECT_EQ(T->GradAccesses[0].How, GradAccess::Kind::GradAccessor);
  EXPECT_EQ(A.text(T->GradAccesses[0].Statement).rfind("for (auto &p : model->parameters())", 0), 0u);
  EXPECT_EQ(T->GradAccesses[1].How, GradAccess::Kind::ParametersPassed);
  EXPECT_EQ(A.text(T->GradAccesses[1].Statement), "average(model->parameters(), world)");
  // Never left behind: the loop over the gradients alone would carry over to the explicit grads,
  // but the helper given the parameters cannot; the step is reported naming it, nothing is edited.
  std::string Blockers;
  A.migrated(&Blockers);
  EXPECT_EQ(Blockers.find("for (auto &p"), std::string::npos) << Blockers;
  EXPECT_NE(Blockers.find("`average(model->parameters(), world)` hands the parameters"),
            std::string::npos) << Blockers;
}

TEST(StepMembership, ZeroGradOfAnotherOptimizerIsNotAMember) {
  Analysed A(R"cpp(
void train(Net &model, torch::optim::SGD &opt, torch::optim::SGD &other, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  opt.zero_grad();
  other.zero_grad();
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}
)cpp");
  const TrainingStep *T = A.onlyStep();
  ASSERT_NE(T, nullptr);
  ASSERT_EQ(T->ZeroGrads.size(), 1u);
  EXPECT_EQ(T->ZeroGrads.front()->Owner, T->Steps.front()->Optimizer);
}

} // namespace

// A step without a scaler (bf16 autocast): the scope, the plain backward of the loss computed in
// it, the optimizer's own step(); the rest by the same rule as a scaled step.
const char *NoScalerStep = R"cpp(
void log_norm(std::vector<torch::Tensor> params);
void train(Net &model, torch::optim::SGD &opt, torch::optim::SGD &other, const torch::Tensor &x) {
  opt.zero_grad();
  other.zero_grad();
  torch::Tensor loss;
  {
    at::autocast::set_cpu_enabled(true);
    loss = model->forward(x).sum();
    at::autocast::set_cpu_enabled(false);
  }
  loss.backward();
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  log_norm(model->parameters());
  opt.step();
  torch::nn::utils::clip_grad_norm_(model->parameters(), 2.0);
}
)cpp";

TEST(StepMembership, NoScalerStepMembersByTheSameRule) {
  Analysed A(NoScalerStep);
  const TrainingStep *T = A.onlyStep();
  ASSERT_NE(T, nullptr);
  EXPECT_TRUE(T->Unscaled);
  EXPECT_FALSE(T->Scaler);
  ASSERT_NE(T->Scope, nullptr);
  ASSERT_EQ(T->Backwards.size(), 1u);
  EXPECT_EQ(T->Backwards.front()->Scale, nullptr);
  EXPECT_EQ(A.text(T->Backwards.front()->Loss), "loss");
  ASSERT_EQ(T->Steps.size(), 1u);
  EXPECT_EQ(A.text(T->Steps.front()->OptimizerArg), "opt");
  EXPECT_TRUE(T->Unscales.empty());
  // The window is [backward, step()]: the first clip is in, the one after step() is not.
  ASSERT_EQ(T->Clips.size(), 1u);
  EXPECT_EQ(A.text(T->Clips.front()->Call), "torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0)");
  // zero_grad() of the step's optimizer only.
  ASSERT_EQ(T->ZeroGrads.size(), 1u);
  EXPECT_EQ(T->ZeroGrads.front()->Owner, T->Steps.front()->Optimizer);
  // The parameters handed to other code inside the window.
  ASSERT_EQ(T->GradAccesses.size(), 1u);
  EXPECT_EQ(T->GradAccesses[0].How, GradAccess::Kind::ParametersPassed);
  EXPECT_EQ(A.text(T->GradAccesses[0].Statement), "log_norm(model->parameters())");
  std::string Blockers;
  A.migrated(&Blockers);
  EXPECT_NE(Blockers.find("`log_norm(model->parameters())` hands the parameters (or the model or "
                          "optimizer) to code that may read or write .grad between backward() and step()"),
            std::string::npos) << Blockers;
}

TEST(StepMembership, NoScalerStepIsRewrittenOntoExplicitGrads) {
  Analysed A(R"cpp(
void train(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  opt.zero_grad();
  torch::Tensor loss;
  {
    at::autocast::set_cpu_enabled(true);
    loss = model->forward(x).sum();
    at::autocast::set_cpu_enabled(false);
  }
  loss.backward();
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  opt.step();
}
)cpp");
  std::string Blockers;
  std::string Out = A.migrated(&Blockers);
  EXPECT_EQ(Blockers, "");
  EXPECT_NE(Out.find("  auto grad_fn = amp::value_and_grad([&] {\n"
                     "    loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();\n"
                     "    return loss;\n"
                     "  }, amp::parameters_of(opt));\n"
                     "  auto [loss_value, grads] = grad_fn();\n"
                     "  amp::check_holds(opt, model->parameters());\n"
                     "  amp::clip_by_global_norm_(grads, 1.0);\n"
                     "  amp::step(opt, grads);\n"),
            std::string::npos)
      << Out;
  EXPECT_EQ(Out.find("zero_grad"), std::string::npos) << Out;
  EXPECT_EQ(Out.find("backward"), std::string::npos) << Out;
}

TEST(StepMembership, BackwardOfALossNotComputedInTheScopeIsNoStep) {
  Analysed A(R"cpp(
void train(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::Tensor out;
  {
    at::autocast::set_cpu_enabled(true);
    out = model->forward(x);
    at::autocast::set_cpu_enabled(false);
  }
  auto loss = model->forward(x).sum();
  loss.backward();
  opt.step();
}
)cpp");
  for (const FunctionAnalysis &FA : A.TU.Functions)
    EXPECT_TRUE(FA.Steps.empty());
}

// A mixed step: the scaled path under a run-time flag, the fp32 path beside it, split over two
// ifs on one optional scaler, one zero_grad() for both, a clip after the unscale_.
const char *MixedSplitIfs = R"cpp(
void train(Net &model, torch::optim::SGD &opt, std::optional<torch::amp::GradScaler> &scaler,
           const torch::Tensor &x) {
  opt.zero_grad();
  if (scaler)
    at::autocast::set_enabled(true);
  auto loss = model->forward(x).sum();
  if (scaler)
    at::autocast::set_enabled(false);
  if (scaler)
    scaler->scale(loss).backward();
  else
    loss.backward();
  if (scaler)
    scaler->unscale_(opt);
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  if (scaler) {
    scaler->step(opt);
    scaler->update();
  } else {
    opt.step();
  }
}
)cpp";

TEST(StepMembership, MixedStepIsOneStepWithThePlainPathAsMembers) {
  Analysed A(MixedSplitIfs);
  const TrainingStep *T = A.onlyStep();
  ASSERT_NE(T, nullptr);
  ASSERT_TRUE(T->mixed());
  EXPECT_EQ(A.text(T->Plain.Condition), "scaler");
  EXPECT_TRUE(T->Plain.ScaledWhenTrue);
  EXPECT_EQ(T->Plain.Ifs.size(), 3u); // the backwards', the unscale_'s, the steps'
  ASSERT_EQ(T->Plain.Backwards.size(), 1u);
  EXPECT_EQ(A.text(T->Plain.Backwards.front()->Backward), "loss.backward()");
  ASSERT_EQ(T->Plain.Steps.size(), 1u);
  EXPECT_EQ(A.text(T->Plain.Steps.front()->Call), "opt.step()");
  EXPECT_EQ(T->Steps.size(), 1u);
  EXPECT_EQ(T->Clips.size(), 1u);
  EXPECT_EQ(T->ZeroGrads.size(), 1u);
  // The plain path's step() is a member, not a .grad reader left behind.
  EXPECT_TRUE(T->GradAccesses.empty());
}

TEST(StepMembership, MixedStepIsRewrittenOnBothPaths) {
  Analysed A(MixedSplitIfs);
  std::string Blockers;
  std::string Out = A.migrated(&Blockers);
  EXPECT_EQ(Blockers, "");
  EXPECT_NE(Out.find("  auto grad_fn = amp::value_and_grad([&] {\n"
                     "    auto loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();\n"
                     "    return scaler ? scaler->scale(loss) : loss;\n"
                     "  }, amp::parameters_of(opt));\n"
                     "  auto [loss_value, grads] = grad_fn();\n"
                     "  if (scaler)\n"
                     "    scaler->unscale_(opt, grads);\n"
                     "  amp::check_holds(opt, model->parameters());\n"
                     "  amp::clip_by_global_norm_(grads, 1.0);\n"
                     "  if (scaler) {\n"
                     "    scaler->step(opt, grads);\n"
                     "    scaler->update();\n"
                     "  } else {\n"
                     "    amp::step(opt, grads);\n"
                     "  }\n"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("std::optional<amp::GradScaler> &scaler"), std::string::npos) << Out;
  EXPECT_NE(Out.find("amp::auto_mixed_precision(model, scaler ? amp::Level::O2 : amp::Level::O0, torch::kCUDA)"),
            std::string::npos)
      << Out;
  EXPECT_EQ(Out.find("backward"), std::string::npos) << Out;
}

TEST(StepMembership, OptimizerStepOfTheStepsOptimizerOffThePlainPathReadsGrad) {
  Analysed A(R"cpp(
void train(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  opt.step();
  scaler.step(opt);
  scaler.update();
}
)cpp");
  const TrainingStep *T = A.onlyStep();
  ASSERT_NE(T, nullptr);
  EXPECT_FALSE(T->mixed());
  ASSERT_EQ(T->GradAccesses.size(), 1u);
  EXPECT_EQ(A.text(T->GradAccesses.front().Statement), "opt.step()");
}

// A generic lambda is read through its instantiation: the same membership as a plain lambda's
// (in its pattern every call on `batch`, and so the loss and its backward, is dependent).
const char *GenericLambdaStep = R"cpp(
void train(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
           const std::vector<torch::Tensor> &batches) {
  auto step = [&](const auto &batch) {
    opt.zero_grad();
    at::autocast::set_enabled(true);
    auto loss = model->forward(batch).mean();
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    scaler.unscale_(opt);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(opt);
    scaler.update();
  };
  for (const auto &b : batches)
    step(b);
}
)cpp";

TEST(StepMembership, GenericLambdaStepHasTheMembersOfAPlainOne) {
  Analysed A(GenericLambdaStep);
  const TrainingStep *T = A.onlyStep();
  ASSERT_NE(T, nullptr);
  EXPECT_NE(T->Scope, nullptr);
  EXPECT_EQ(T->Backwards.size(), 1u);
  EXPECT_EQ(T->Unscales.size(), 1u);
  EXPECT_EQ(T->Steps.size(), 1u);
  EXPECT_EQ(T->Updates.size(), 1u);
  EXPECT_EQ(T->Clips.size(), 1u);
  EXPECT_EQ(T->ZeroGrads.size(), 1u);
  EXPECT_EQ(T->Forwards.size(), 1u);
}

TEST(StepMembership, LambdaStepConvertsTheCapturedModelOnceOutsideIt) {
  Analysed A(GenericLambdaStep);
  std::string Blockers;
  std::string Out = A.migrated(&Blockers);
  EXPECT_EQ(Blockers, "");
  EXPECT_NE(Out.find("  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);\n"
                     "  auto step = [&, amp_model](const auto &batch) {\n"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("    scaler.step(opt, grads);"), std::string::npos) << Out;
}

TEST(StepMembership, StepAcrossALambdaBoundaryIsBlocked) {
  Analysed A(R"cpp(
void train(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  auto fwd_bwd = [&] {
    at::autocast::set_enabled(true);
    auto loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
  };
  fwd_bwd();
  scaler.step(opt);
  scaler.update();
}
)cpp");
  std::string Blockers;
  A.migrated(&Blockers);
  EXPECT_NE(Blockers.find("the step crosses a lambda boundary"), std::string::npos) << Blockers;
}

const char *SplitTrainer = R"cpp(
class Trainer {
public:
  void run(const torch::Tensor &x) { CLEAR scaled(x); stepped(); }
private:
  void scaled(const torch::Tensor &x) {
    at::autocast::set_enabled(true);
    auto loss = model_->forward(x).mean();
    at::autocast::set_enabled(false);
    scaler_.scale(loss).backward();
  }
  void stepped() { scaler_.step(opt_); scaler_.update(); opt_.zero_grad(); }
  Net model_;
  torch::optim::SGD opt_;
  torch::amp::GradScaler scaler_;
};
)cpp";

std::string splitTrainer(const std::string &Clear) {
  std::string S = SplitTrainer;
  S.replace(S.find("CLEAR"), 5, Clear);
  return S;
}

TEST(StepMembership, StepSplitOverTwoMethodsIsMigratedWithTheGradsInAMember) {
  Analysed A(splitTrainer(""));
  std::string Blockers;
  std::string Out = A.migrated(&Blockers);
  EXPECT_EQ(Blockers, "");
  EXPECT_NE(Out.find("  amp::GradScaler scaler_;\n  std::vector<torch::Tensor> grads_; // the grads from "
                     "scaled() to stepped()\n"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("  auto [scaled_loss, micro_grads] = grad_fn();\n    amp::accumulate_grads(grads_, micro_grads);"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("scaler_.step(opt_, grads_); scaler_.update(); grads_.clear(); }"), std::string::npos) << Out;
}

TEST(StepMembership, ZeroGradInTheCallerOfASplitStepClearsTheMember) {
  Analysed A(splitTrainer("opt_.zero_grad();"));
  std::string Blockers;
  std::string Out = A.migrated(&Blockers);
  EXPECT_EQ(Blockers, "");
  EXPECT_NE(Out.find("void run(const torch::Tensor &x) { grads_.clear(); scaled(x); stepped(); }"),
            std::string::npos)
      << Out;
}

TEST(StepMembership, HalvesOfASplitStepReadElsewhereAreReportedNamingBoth) {
  Analysed A(splitTrainer("auto g = opt_.parameters()[0].grad();"));
  std::string Blockers;
  A.migrated(&Blockers);
  EXPECT_NE(Blockers.find("the step is split over two methods of 'Trainer': its unscale_()/step()/"
                          "update() are in 'stepped' (line 16), both called from 'run'"),
            std::string::npos)
      << Blockers;
  EXPECT_NE(Blockers.find("its scaled backward is in 'scaled' (line 14), both called from 'run'"),
            std::string::npos)
      << Blockers;
  EXPECT_NE(Blockers.find("`opt_.parameters()[0].grad()` in 'run'"), std::string::npos) << Blockers;
}
