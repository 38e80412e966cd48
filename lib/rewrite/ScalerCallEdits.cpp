// The unscale_/step/update calls, the checked unscale, and a step's optimizer steps without a
// scaler (planScalerCalls, planOptimizerSteps).
#include "StepEditWriter.h"
#include "StepConcerns.h"

using namespace clang;

namespace ampmigrate {

namespace {

/// The scaler's calls (or a step's optimizer steps without one), each recorded as its CallEdits
/// in Out or blocked.
class ScalerCallPlanner : public StepConcern {
public:
  ScalerCallPlanner(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers,
                    std::vector<CallEdit> &Out)
      : StepConcern(C, F, Blockers), Out(Out) {}

  void checkScalerCalls();
  /// A step without a scaler: `optimizer.step();` becomes `amp::step(optimizer, grads);`, which
  /// puts the explicit grads where step() reads them for the duration of the call.
  void checkOptimizerSteps(llvm::ArrayRef<const ScalerCall *> Steps);

private:
  std::vector<CallEdit> &Out;

  /// Renames CamelCase or other spellings of a scaler method to amp::GradScaler's.
  void checkRename(const ScalerCall *SC);
  void checkGradsArgument(const ScalerCall *SC);
  /// A checked unscale whose answer is used (`bool finite = scaler.unscale_and_check(opt);`)
  /// becomes the target's checked unscale on the grads, which answers whether every grad is
  /// finite (`scaler.unscale_and_check(opt, grads)`), negated for a method whose true means
  /// "an inf or NaN was found". What the user's answer means comes from the rules, never from
  /// its name: a method in neither list, or one that answers something other than a bool, is
  /// reported.
  void checkCheckedUnscale(const ScalerCall *U);
};

} // namespace

ConcernPlan<std::vector<CallEdit>> planScalerCalls(const StepContext &C, const StepFacts &F) {
  ConcernPlan<std::vector<CallEdit>> P;
  ScalerCallPlanner(C, F, P.Blockers, P.Plan).checkScalerCalls();
  return P;
}

ConcernPlan<std::vector<CallEdit>> planOptimizerSteps(const StepContext &C, const StepFacts &F,
                                                      llvm::ArrayRef<const ScalerCall *> Steps) {
  ConcernPlan<std::vector<CallEdit>> P;
  ScalerCallPlanner(C, F, P.Blockers, P.Plan).checkOptimizerSteps(Steps);
  return P;
}

void ScalerCallPlanner::checkRename(const ScalerCall *SC) {
  const auto *ME = dyn_cast<MemberExpr>(SC->Call->getCallee());
  if (!ME)
    return;
  std::string Want = canonicalMethod(SC->Kind);
  if (ME->getMemberDecl()->getName() == Want)
    return;
  unsigned B, E;
  if (!C.fileRange(ME->getMemberLoc(), B, E)) {
    block(SC->Call->getBeginLoc(), "the scaler call is inside a macro body");
    return;
  }
  Out.push_back({CallEdit::Kind::Rename, B, E, Want, ""});
}

void ScalerCallPlanner::checkGradsArgument(const ScalerCall *SC) {
  // The implicit form takes the optimizer alone; anything else a project scaler is given (the
  // module whose .grad it reads) has no place in the explicit form.
  for (unsigned I = 1; I < SC->Call->getNumArgs(); ++I) {
    const Expr *A = SC->Call->getArg(I);
    if (isa<CXXDefaultArgExpr>(A))
      continue;
    block(A->getBeginLoc(), "`" + firstLine(C.text(SC->Call->getSourceRange())) + "` passes `" +
                                C.text(A->getSourceRange()) + "` besides the optimizer; the "
                                "explicit-grad form takes the optimizer and the grads only, "
                                "and what this argument is for is not known (a module whose "
                                ".grad the scaler reads?): migrate this step by hand");
    return;
  }
  SourceLocation RP = SC->Call->getRParenLoc();
  if (RP.isMacroID()) {
    block(SC->Call->getBeginLoc(), "the scaler call is inside a macro body");
    return;
  }
  Out.push_back({CallEdit::Kind::GradsArgument, C.off(RP), C.off(RP), "", F.gradsFor(SC->Optimizer)});
}

void ScalerCallPlanner::checkScalerCalls() {
  for (const ScalerCall *U : T.Unscales) {
    if (U->HasExplicitGrads)
      continue;
    if (U->ResultUsed) {
      checkCheckedUnscale(U);
      continue;
    }
    checkRename(U);
    checkGradsArgument(U);
  }
  for (const ScalerCall *S : T.Steps) {
    checkRename(S);
    checkGradsArgument(S);
  }
  for (const ScalerCall *U : T.Updates)
    checkRename(U);
  for (const ScalerCall *G : T.Others)
    checkRename(G);
}

void ScalerCallPlanner::checkCheckedUnscale(const ScalerCall *U) {
  std::string Call = "`" + firstLine(C.text(U->Call->getSourceRange())) + "`";
  const CXXMethodDecl *MD = U->Call->getMethodDecl();
  std::string Name = MD->getNameAsString();
  const ScalerMethodNames &N = Rules.ScalerMethods;
  bool Finite = llvm::is_contained(N.CheckedFinite, Name);
  bool FoundInf = llvm::is_contained(N.CheckedFoundInf, Name);
  if (!U->Call->getType()->isBooleanType()) {
    block(U->Call->getBeginLoc(),
          "the result of " + Call + " is used, and its type is '" +
              U->Call->getType().getAsString() + "', not bool; the checked unscale " +
              Tgt.CheckedUnscale + "(optimizer, grads) answers whether every grad is finite: "
              "migrate this step by hand");
    return;
  }
  if (!Finite && !FoundInf) {
    block(U->Call->getBeginLoc(),
          "the result of " + Call + " is used (a checked unscale), and the rules do not say "
          "what its answer means: name '" + Name + "' in scaler.methods.checked-unscale-finite "
          "(true when every grad is finite) or checked-unscale-found-inf (true when an inf or "
          "NaN was found) of a rule file, or migrate this step by hand");
    return;
  }
  const auto *ME = dyn_cast<MemberExpr>(U->Call->getCallee());
  unsigned MB, MEnd, CB, CEnd;
  if (!ME || !C.fileRange(ME->getMemberLoc(), MB, MEnd) ||
      !C.fileRange(U->Call->getSourceRange(), CB, CEnd)) {
    block(U->Call->getBeginLoc(), "the scaler call is inside a macro body");
    return;
  }
  if (FoundInf)
    Out.push_back({CallEdit::Kind::Negate, CB, CB, "", ""});
  if (Name != Tgt.CheckedUnscale)
    Out.push_back({CallEdit::Kind::Rename, MB, MEnd, Tgt.CheckedUnscale, ""});
  checkGradsArgument(U);
}

void ScalerCallPlanner::checkOptimizerSteps(llvm::ArrayRef<const ScalerCall *> Steps) {
  if (Steps.empty())
    return;
  if (Tgt.Step.empty()) {
    block(Steps.front()->Call->getBeginLoc(), "a step without a scaler needs target.step in the rules");
    return;
  }
  for (const ScalerCall *S : Steps) {
    if (C.resultUsed(S->Call) || S->Call->getBeginLoc().isMacroID()) {
      block(S->Call->getBeginLoc(), "`" + firstLine(C.text(S->Call->getSourceRange())) +
                                        "` is not a statement of its own (its result is used, "
                                        "or it is inside a macro); migrate this step by hand");
      continue;
    }
    unsigned B, E;
    if (!C.fileRange(S->Call->getSourceRange(), B, E)) {
      block(S->Call->getBeginLoc(), "the optimizer's step() is inside a macro");
      continue;
    }
    Out.push_back({CallEdit::Kind::OptimizerStep, B, E, C.text(S->OptimizerArg->getSourceRange()),
                   F.gradsFor(S->Optimizer)});
  }
}

void StepEditWriter::writeCalls(const std::vector<CallEdit> &Calls) const {
  for (const CallEdit &C : Calls)
    switch (C.What) {
    case CallEdit::Kind::Rename: Out.replace(C.Begin, C.End - C.Begin, C.Name); break;
    case CallEdit::Kind::GradsArgument: Out.insert(C.Begin, ", " + C.Grads); break;
    case CallEdit::Kind::Negate: Out.insert(C.Begin, "!"); break;
    case CallEdit::Kind::OptimizerStep:
      Out.replace(C.Begin, C.End - C.Begin, Tgt.Step + "(" + C.Name + ", " + C.Grads + ")");
      break;
    }
}

} // namespace ampmigrate
