// Whether a step can be rewritten at all, before any edit: its shape, its optimizers, its backwards.
#include "StepPlanner.h"

using namespace clang;

namespace ampmigrate {

bool StepPlanner::blockScaleInsideBackwardReceiver() {
  for (const ScalerCall &SC : FA.ScalerCalls) {
    if (SC.Kind != ScalerCall::Method::Scale || (T.Scaler && !(SC.Scaler == T.Scaler)))
      continue;
    for (const Stmt *P = PM.getParent(SC.Call); P; P = PM.getParent(P)) {
      const auto *MC = dyn_cast<CXXMemberCallExpr>(P);
      const CXXMethodDecl *MD = MC ? MC->getMethodDecl() : nullptr;
      if (!MD || !MD->getIdentifier() || MD->getName() != "backward" ||
          !within(SC.Call, MC->getImplicitObjectArgument()))
        continue;
      const Expr *Recv = MC->getImplicitObjectArgument();
      block(MC->getBeginLoc(),
            "backward() runs on `" + firstLine(text(Recv->getSourceRange())) +
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
                firstLine(text(SC.Call->getSourceRange())) +
                ".backward()` (the same computation) to have it migrated, or migrate this step by "
                "hand");
      return true;
    }
  }
  return false;
}

bool StepPlanner::feasible() {
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
    block(T.Backwards.front()->Backward->getBeginLoc(),
          "the scaler's step() is not in this function; scaling and stepping in different "
          "functions cannot be rewritten together");
    return false;
  }
  if (auto Why = lambdaBoundaryBlocker(T, FA.Function, PM, Ctx)) {
    block(Why->Loc, Why->Reason);
    return false;
  }
  if (!T.Scope && !findCalleeScope()) {
    if (Blockers.empty())
      block(T.Backwards.front()->Backward->getBeginLoc(),
            std::string("no autocast scope precedes this ") + (T.Unscaled ? "" : "scaled ") +
                "backward in this function, so the forward pass to hand to "
                "amp::value_and_grad is unknown");
    return false;
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
        block(T.Steps[I]->Call->getBeginLoc(), "step() called more than once for one backward");
        return false;
      }
  for (const ScalerCall *U : T.Unscales)
    if (!llvm::any_of(T.Steps, [&](const ScalerCall *S) { return S->Optimizer == U->Optimizer; })) {
      block(U->Call->getBeginLoc(), "unscale_() of an optimizer that no step() of this step uses");
      return false;
    }
  Desc.GradsName = freshName("grads");
  Desc.GradFnName = freshName("grad_fn");
  if (T.Steps.size() == 1) {
    Desc.OptParams = optimizerParams(T.Steps.front());
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
      std::string Arg = text(S->OptimizerArg->getSourceRange());
      Args += (Args.empty() ? "" : ", ") + Arg;
      std::string Base = S->Optimizer.Decl ? S->Optimizer.Decl->getName().str() : "opt";
      while (!Base.empty() && Base.back() == '_')
        Base.pop_back();
      Desc.PerOptimizer.push_back({S->Optimizer, freshName("grads_" + Base)});
    }
    Desc.OptimizerArgs = Args;
    Desc.OptParams = Tgt.ParametersOf + "(" + Args + ")";
  }

  if (T.mixed() && !planMixed(*T.Backwards.front()))
    return false;
  checkConcerns(*T.Backwards.front());
  return Blockers.empty();
}

bool StepPlanner::planSeveralBackwards() {
  Desc.AllBackwards.assign(T.Backwards.begin(), T.Backwards.end());
  llvm::sort(Desc.AllBackwards, [&](const ImplicitBackward *A, const ImplicitBackward *B) {
    return off(A->Backward->getBeginLoc()) < off(B->Backward->getBeginLoc());
  });
  if (Desc.AllBackwards.size() == 1)
    return true;
  const ImplicitBackward *First = Desc.AllBackwards.front();
  const CompoundStmt *C = First->BackwardStmt ? parentCompound(First->BackwardStmt) : nullptr;
  for (size_t I = 0; I < Desc.AllBackwards.size(); ++I) {
    const ImplicitBackward *B = Desc.AllBackwards[I];
    bool Consecutive = false;
    if (C && B->BackwardStmt && !B->ScaleStmt && parentCompound(B->BackwardStmt) == C) {
      if (I == 0)
        Consecutive = true;
      else
        for (auto It = C->body_begin(); It != C->body_end(); ++It)
          if (*It == Desc.AllBackwards[I - 1]->BackwardStmt && std::next(It) != C->body_end() &&
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

} // namespace ampmigrate
