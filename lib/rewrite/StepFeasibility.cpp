// Whether a step can be rewritten at all, before any edit: its shape, its optimizers, its backwards.
#include "StepShape.h"
#include "MixedSteps.h"
#include "Naming.h"
#include "StepLambda.h"
#include "ampmigrate/SourceText.h"

using namespace clang;

namespace ampmigrate {

namespace {

/// The step's shape: its scaled backwards and steps, its scope (here or in a called function),
/// its optimizers, the names the rewrite declares, a mixed step's two paths.
class ShapePlanner : public ShapeConcern {
public:
  using ShapeConcern::ShapeConcern;

  /// False (with the blockers) when the step cannot be rewritten.
  bool plan();

private:
  /// A scale() of the step's scaler that backward() runs on only through a larger expression
  /// (`(use_amp ? scaler.scale(loss) : loss).backward()`): there is a scaled backward, just not
  /// one of the shapes the rewrite knows. Reported at the backward with what to write instead.
  bool blockScaleInsideBackwardReceiver();
  /// Why a step with a scaled backward has no scaler step(): elsewhere, or none in the class.
  std::string noScalerStepReason() const;
  /// Finds the scope in a called function (Out.CalleeFA and the rest); false when there is none.
  bool findCalleeScope();
  /// Several losses, each `scaler.scale(loss_i).backward()`, as consecutive statements of one
  /// block (PyTorch's multi-loss pattern, the first with retain_graph): `.grad` held the sum of
  /// their grads, which is the grad of the sum of the scaled losses. The function handed to
  /// value_and_grad returns that sum. Sets Out.AllBackwards.
  bool planSeveralBackwards();
};

} // namespace

ConcernPlan<StepShape> planStepShape(const StepContext &C, bool Refused, llvm::StringSet<> &Names) {
  StepFacts Building;
  Building.Refused = Refused;
  return planShapeWith<ShapePlanner>(C, std::move(Building), Names);
}

bool ShapePlanner::blockScaleInsideBackwardReceiver() {
  for (const ScalerCall &SC : FA.ScalerCalls) {
    if (SC.Kind != ScalerCall::Method::Scale || (T.Scaler && !(SC.Scaler == T.Scaler)))
      continue;
    for (const Stmt *P = PM.getParent(SC.Call); P; P = PM.getParent(P)) {
      const auto *MC = dyn_cast<CXXMemberCallExpr>(P);
      const CXXMethodDecl *MD = MC ? MC->getMethodDecl() : nullptr;
      if (!MD || !MD->getIdentifier() || MD->getName() != "backward" ||
          !C.within(SC.Call, MC->getImplicitObjectArgument()))
        continue;
      const Expr *Recv = MC->getImplicitObjectArgument();
      block(MC->getBeginLoc(),
            "backward() runs on `" + firstLine(C.text(Recv->getSourceRange())) +
                "`, which holds the scale() call inside a larger expression; write the scaled "
                "and the plain path as `if (...) scaler.scale(loss).backward(); else "
                "loss.backward();` (rewritten as a mixed step) or migrate this step by hand");
      return true;
    }
    // `torch::autograd::backward({scaler.scale(loss)})`: the same computation, as a free function.
    for (const Stmt *P = PM.getParent(SC.Call); P; P = PM.getParent(P)) {
      const auto *CE = dyn_cast<CallExpr>(P);
      const FunctionDecl *FD = CE ? CE->getDirectCallee() : nullptr;
      if (!FD || isa<CXXMethodDecl>(FD) || !FD->getIdentifier())
        continue;
      std::string Name = qualifiedName(FD);
      if (Name != "torch::autograd::backward" && Name != "torch::autograd::grad")
        continue;
      block(CE->getBeginLoc(),
            "the scaled loss is backpropagated by `" + Name + "(...)`, which the rewrite does not "
            "take for a training step's backward; write it as `" +
                firstLine(C.text(SC.Call->getSourceRange())) +
                ".backward()` (the same computation) to have it migrated, or migrate this step by "
                "hand");
      return true;
    }
  }
  return false;
}

bool ShapePlanner::findCalleeScope() {
  if (T.Backwards.size() != 1)
    return false;
  const ImplicitBackward &B = *T.Backwards.front();
  // `loss` of `loss.backward()` or `scale(loss)`, also `(loss / accum)`.
  const VarDecl *V = B.ScaleStmt ? nullptr : B.LossVar;
  if (!V || !V->isLocalVarDecl() || !V->getInit())
    return false;
  const Expr *Init = V->getInit()->IgnoreImplicit();
  for (int I = 0; I < 4; ++I) {
    if (const auto *CE = dyn_cast<CXXConstructExpr>(Init); CE && CE->getNumArgs() == 1)
      Init = CE->getArg(0)->IgnoreImplicit();
    else if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(Init))
      Init = MT->getSubExpr()->IgnoreImplicit();
    else if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(Init))
      Init = BT->getSubExpr()->IgnoreImplicit();
    else
      break;
  }
  const auto *Call = dyn_cast<CallExpr>(Init);
  const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr;
  if (!Callee)
    return false;
  const FunctionAnalysis *Found = nullptr;
  for (const FunctionAnalysis &Other : TU.Functions)
    if (&Other != &FA && Other.Function->getCanonicalDecl() == Callee->getCanonicalDecl())
      Found = &Other;
  if (!Found)
    return false;
  const AutocastScope *Scope = nullptr;
  for (const AutocastScope &S : Found->Scopes) {
    if (S.DisablesAutocast)
      continue;
    if (Scope) {
      block(Call->getBeginLoc(), "'" + Callee->getNameAsString() +
                                     "' holds several autocast scopes; migrate it by hand");
      return false;
    }
    Scope = &S;
  }
  if (!Scope)
    return false;
  std::string Name = "'" + Callee->getNameAsString() + "'";
  if (!Found->ScalerCalls.empty() || !Found->InactiveAmpCode.empty()) {
    block(Call->getBeginLoc(), "the autocast scope is in " + Name + ", which also scales or steps; "
                               "migrate it by hand");
    return false;
  }
  // A `.grad` use in the loss function (a norm logged before the forward) reads the last step's
  // gradients in the original; explicit grads never reach `.grad`.
  // Also one in a function it calls (a logging helper reading the grad norm).
  if (GradUse G = firstGradUse(Found->Function->getBody(), SM); G.Access) {
    std::string Use = "`" + C.text(G.Access->getSourceRange()) + "` at " + C.where(G.Access->getBeginLoc());
    if (G.Call != G.Access)
      Use += ", through `" + C.text(G.Call->getSourceRange()) + "` at " + C.where(G.Call->getBeginLoc());
    block(G.Call->getBeginLoc(),
          "the loss function " + Name + " uses .grad (" + Use + "), where the original finds "
              "the last step's gradients; the explicit grads of " + Tgt.ValueAndGrad +
              " never reach .grad, so it would find none: migrate this step by hand");
    return false;
  }
  if (Scope->Shape == AutocastScope::Kind::Unclosed || Scope->LeaksAt.isValid()) {
    block(Scope->ReportLoc, "the autocast scope in " + Name + " is not closed on every path");
    return false;
  }
  if (Scope->Enable && Scope->Enable->InLambda) {
    block(Scope->ReportLoc, "the autocast scope is inside a lambda");
    return false;
  }
  if (SM.getFileID(SM.getExpansionLoc(Found->Function->getBody()->getBeginLoc())) != File) {
    block(Call->getBeginLoc(), "the autocast scope is in " + Name + ", in another file; both "
                               "files must change together, migrate by hand");
    return false;
  }
  // The statement declaring the loss must be in the backward's block, before it.
  const Stmt *Decl = nullptr;
  for (const Stmt *P = PM.getParent(Call); P; P = PM.getParent(P))
    if (isa<DeclStmt>(P)) {
      Decl = P;
      break;
    }
  if (!Decl || !B.BackwardStmt || C.parentCompound(Decl) != C.parentCompound(B.BackwardStmt) ||
      C.off(Decl->getBeginLoc()) > C.off(B.Backward->getBeginLoc()))
    return false;
  Out.CalleeFA = Found;
  Out.CalleeScope = Scope;
  Out.CalleeCallStmt = Decl;
  Out.CalleeCall = Call;
  return true;
}

std::string ShapePlanner::noScalerStepReason() const {
  const CXXRecordDecl *Class = T.ScalerClass ? T.ScalerClass->getDefinition() : nullptr;
  bool HasStep = Class && llvm::any_of(Class->methods(), [&](const CXXMethodDecl *M) {
                   return methodNamed(M, Rules.ScalerMethods.Step);
                 });
  if (!Class || HasStep)
    return "the scaler's step() is not in this function; scaling and stepping in different "
           "functions cannot be rewritten together";
  // A port with no step(): its caller steps the optimizer (`if (!sc.has_overflow()) opt.step();`).
  unsigned After = C.off(T.Backwards.front()->Backward->getBeginLoc());
  std::string Stepped;
  for (const ScalerCall &S : FA.OptimizerSteps)
    if (C.off(S.Call->getBeginLoc()) > After) {
      Stepped = " (here the optimizer steps itself: `" + C.text(S.Call->getSourceRange()) + "` at " +
                lineText(SM, S.Call->getBeginLoc()) + ")";
      break;
    }
  return "the scaler class '" + Class->getNameAsString() + "' has no step method (scaler.methods.step)" +
         Stepped + ", and the rewrite needs the scaler's step(optimizer), which becomes step(optimizer, "
         "grads) and skips the step on overflow itself; migrate this step by hand";
}

bool ShapePlanner::plan() {
  SourceLocation FnLoc = FA.Function->getLocation();
  if (T.Backwards.empty() && blockScaleInsideBackwardReceiver())
    return false;
  if (T.Backwards.empty()) {
    block(T.Steps.empty() ? FnLoc : T.Steps.front()->Call->getBeginLoc(),
          "no scaled backward (scaler.scale(loss).backward()) in this function; the scope, "
          "scaling and stepping are in different functions");
    return false;
  }
  if (T.Steps.empty()) {
    block(T.Backwards.front()->Backward->getBeginLoc(), noScalerStepReason());
    return false;
  }
  if (auto Why = lambdaBoundaryBlocker(T, FA.Function, PM, Ctx)) {
    block(Why->Loc, Why->Reason);
    return false;
  }
  if (!T.Scope && !findCalleeScope()) {
    unsigned BackwardAt = C.off(T.Backwards.front()->Backward->getBeginLoc());
    for (const VarDecl *G : FA.HeldGuards)
      if (Blockers.empty() && !F.Refused && C.off(G->getBeginLoc()) < BackwardAt) {
        const auto *Holder = cast<ClassTemplateSpecializationDecl>(G->getType()->getAsCXXRecordDecl());
        std::string Guard = Holder->getTemplateArgs()[0].getAsType().getUnqualifiedType().getAsString(
            Ctx.getPrintingPolicy());
        block(G->getLocation(),
              "the autocast scope is guard '" + Guard + "' held in the std::" +
                  Holder->getName().str() + " '" + G->getName().str() +
                  "', opened and ended by calls on the holder (emplace, make_unique, reset) "
                  "rather than by a block; a held guard is not rewritten yet: declare the guard "
                  "in a block around the forward, or migrate this step by hand");
        return false;
      }
    if (!Blockers.empty() || F.Refused)
      return false;
    // A step without a scaler is kept only for a loss computed under autocast elsewhere; a
    // scaled step without any scope is an fp32 forward, rewritten at O0 (UnscopedRegion.cpp).
    if (T.Unscaled) {
      block(T.Backwards.front()->Backward->getBeginLoc(),
            "no autocast scope precedes this backward in this function, so the forward pass to "
            "hand to amp::value_and_grad is unknown");
      return false;
    }
    if (T.mixed()) {
      block(T.Backwards.front()->Backward->getBeginLoc(),
            "no autocast scope precedes this scaled backward, and a step with a scaled and a "
            "plain path (chosen by `" + firstLine(C.text(T.Plain.Condition->getSourceRange())) +
                "`) and an fp32 forward is not rewritten yet: migrate this step by hand");
      return false;
    }
    Out.Unscoped = true;
  }
  if (!planSeveralBackwards())
    return false;
  for (const ScalerCall *S : T.Steps)
    if (!S->Optimizer || !S->OptimizerArg) {
      block(S->Call->getBeginLoc(), "the optimizer of this step() could not be identified");
      return false;
    }
  for (size_t I = 0; I < T.Steps.size(); ++I)
    for (size_t J = 0; J < I; ++J)
      if (T.Steps[I]->Optimizer == T.Steps[J]->Optimizer) {
        // A remainder flush: the loop of the backward steps every k-th micro-batch, and the
        // last partial accumulation is stepped after the loop.
        const Stmt *Loop = nullptr;
        for (const Stmt *P = PM.getParent(T.Backwards.front()->Backward); P && !Loop; P = PM.getParent(P))
          if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
            Loop = P;
        if (Loop && C.within(T.Steps[J]->Call, Loop) && !C.within(T.Steps[I]->Call, Loop)) {
          block(T.Steps[I]->Call->getBeginLoc(),
                "this step() after the accumulation loop (" + lineText(SM, Loop->getBeginLoc()) +
                    ") flushes the last partial accumulation, which the loop's step() (" +
                    lineText(SM, T.Steps[J]->Call->getBeginLoc()) +
                    ") did not take; a remainder flush is not rewritten yet: migrate this step "
                    "by hand");
          return false;
        }
        block(T.Steps[I]->Call->getBeginLoc(), "step() called more than once for one backward");
        return false;
      }
  for (const ScalerCall *U : T.Unscales)
    if (!llvm::any_of(T.Steps, [&](const ScalerCall *S) { return S->Optimizer == U->Optimizer; })) {
      block(U->Call->getBeginLoc(), "unscale_() of an optimizer that no step() of this step uses");
      return false;
    }
  Out.GradsName = freshName(Names, "grads");
  Out.GradFnName = freshName(Names, "grad_fn");
  if (T.Steps.size() == 1) {
    Out.OptParams = C.optimizerParams(T.Steps.front());
  } else {
    // One loss, several optimizers sharing the scaler: grads w.r.t. all their parameters, then
    // one list per optimizer for its unscale_/step.
    if (Tgt.ParametersOf.empty() || Tgt.SplitGrads.empty()) {
      block(T.Steps[1]->Call->getBeginLoc(), "several optimizers step with one scaled loss; the "
                                              "rules name no target.parameters-of / split-grads");
      return false;
    }
    std::string Args;
    for (const ScalerCall *S : T.Steps) {
      std::string Arg = C.text(S->OptimizerArg->getSourceRange());
      Args += (Args.empty() ? "" : ", ") + Arg;
      std::string Base = S->Optimizer.Decl ? S->Optimizer.Decl->getName().str() : "opt";
      while (!Base.empty() && Base.back() == '_')
        Base.pop_back();
      Out.PerOptimizer.push_back({S->Optimizer, freshName(Names, "grads_" + Base)});
    }
    Out.OptimizerArgs = Args;
    Out.OptParams = Tgt.ParametersOf + "(" + Args + ")";
  }

  if (T.mixed() && !checkMixedPaths(C, F, Blockers))
    return false;
  return true;
}

bool ShapePlanner::planSeveralBackwards() {
  Out.AllBackwards.assign(T.Backwards.begin(), T.Backwards.end());
  llvm::sort(Out.AllBackwards, [&](const ImplicitBackward *A, const ImplicitBackward *B) {
    return C.off(A->Backward->getBeginLoc()) < C.off(B->Backward->getBeginLoc());
  });
  if (Out.AllBackwards.size() == 1)
    return true;
  const ImplicitBackward *First = Out.AllBackwards.front();
  const CompoundStmt *Block = First->BackwardStmt ? C.parentCompound(First->BackwardStmt) : nullptr;
  for (size_t I = 0; I < Out.AllBackwards.size(); ++I) {
    const ImplicitBackward *B = Out.AllBackwards[I];
    bool Consecutive = false;
    if (Block && B->BackwardStmt && !B->ScaleStmt && C.parentCompound(B->BackwardStmt) == Block) {
      if (I == 0)
        Consecutive = true;
      else
        for (auto It = Block->body_begin(); It != Block->body_end(); ++It)
          if (*It == Out.AllBackwards[I - 1]->BackwardStmt && std::next(It) != Block->body_end() &&
              *std::next(It) == B->BackwardStmt)
            Consecutive = true;
    }
    if (!Consecutive) {
      block(B->Backward->getBeginLoc(),
            "several scaled backward calls share one scaler and are not consecutive "
            "`scaler.scale(loss).backward()` statements of one block (unrolled gradient "
            "accumulation?); not rewritten automatically");
      return false;
    }
  }
  return true;
}

const ValueDecl *StepShape::callerModel(const ObjectRef &M) const {
  const auto *PVD = dyn_cast_or_null<ParmVarDecl>(M.Decl);
  if (!PVD || !CalleeCall)
    return M.Decl;
  unsigned I = PVD->getFunctionScopeIndex();
  if (I >= CalleeCall->getNumArgs())
    return nullptr;
  const Expr *A = CalleeCall->getArg(I)->IgnoreParenImpCasts();
  if (const auto *DRE = dyn_cast<DeclRefExpr>(A))
    return DRE->getDecl();
  if (const auto *ME = dyn_cast<MemberExpr>(A))
    return ME->getMemberDecl();
  return nullptr;
}

} // namespace ampmigrate
