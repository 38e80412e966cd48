// The data-flow facts of a step that its membership does not give: which earlier autocast scopes
// feed its forward region, which local containers hold the parameters (issue #37).
#include "FunctionAnalyser.h"

using namespace clang;

namespace ampmigrate {

bool StepMembers::isParameterValue(const Expr *E) const {
  if (parametersCall(E))
    return true;
  const auto *DRE = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
  const auto *V = DRE ? dyn_cast<VarDecl>(DRE->getDecl()) : nullptr;
  if (!V)
    return false;
  // The loop variable of `for (auto &p : <parameters>)`.
  for (const Stmt *P = PM.getParent(V->getInit() ? (const Stmt *)V->getInit() : nullptr); P;
       P = PM.getParent(P))
    if (const auto *FR = dyn_cast<CXXForRangeStmt>(P))
      return FR->getLoopVariable() == V && parametersCall(FR->getRangeInit());
  return false;
}

bool StepMembers::collectsParameters(const VarDecl *V) const {
  if (!V || !V->isLocalVarDecl())
    return false;
  auto [It, New] = CollectsParameters.try_emplace(V, false);
  if (!New)
    return It->second;
  struct Fills : AnalysedBodyVisitor {
    const StepMembers &A;
    const VarDecl *V;
    bool Found = false;
    Fills(const StepMembers &A, const VarDecl *V) : A(A), V(V) {}
    bool names(const Expr *E) const { return E && resolveObject(E).Decl == V; }
    bool visitStmt(Stmt *S) override {
      if (const auto *MC = dyn_cast<CXXMemberCallExpr>(S)) {
        const CXXMethodDecl *MD = MC->getMethodDecl();
        if (MD && MD->getIdentifier() && names(MC->getImplicitObjectArgument()) &&
            llvm::is_contained({"push_back", "emplace_back", "insert", "assign", "append"},
                               MD->getName()) &&
            llvm::any_of(MC->arguments(), [&](const Expr *Arg) { return A.isParameterValue(Arg); }))
          Found = true;
      }
      if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S);
          Op && Op->getOperator() == OO_Equal && Op->getNumArgs() == 2 && names(Op->getArg(0)) &&
          A.isParameterValue(Op->getArg(1)))
        Found = true;
      return !Found;
    }
  } F(*this, V);
  F.walk(FD->getBody());
  CollectsParameters[V] = F.Found;
  return F.Found;
}

void StepMembers::addFeedingScopes(TrainingStep &T, unsigned FirstBackward) {
  if (!T.Scope || FirstBackward == ~0u)
    return;
  // Every variable use of the function: where, which, and whether it writes (an assignment's
  // left side, a declaration).
  struct Use {
    unsigned At;
    const ValueDecl *Var;
    bool Writes;
  };
  struct Uses : AnalysedBodyVisitor {
    const StepMembers &A;
    std::vector<Use> All;
    explicit Uses(const StepMembers &A) : A(A) {}
    static const ValueDecl *target(const Expr *E) {
      const auto *DRE = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
      return DRE ? DRE->getDecl() : nullptr;
    }
    bool visitStmt(Stmt *S) override {
      if (const auto *DRE = dyn_cast<DeclRefExpr>(S))
        All.push_back({A.offsetOf(DRE->getLocation()), DRE->getDecl(), false});
      const ValueDecl *Written = nullptr;
      if (const auto *BO = dyn_cast<BinaryOperator>(S); BO && BO->isAssignmentOp())
        Written = target(BO->getLHS());
      if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S);
          Op && Op->getOperator() == OO_Equal && Op->getNumArgs() == 2)
        Written = target(Op->getArg(0));
      if (Written)
        All.push_back({A.offsetOf(S->getBeginLoc()), Written, true});
      return true;
    }
    bool visitDecl(Decl *D) override {
      if (const auto *V = dyn_cast<VarDecl>(D))
        All.push_back({A.offsetOf(V->getLocation()), V, true});
      return true;
    }
  } U(*this);
  U.walk(FD->getBody());
  for (const AutocastScope &S : FA.Scopes) {
    if (&S == T.Scope || S.DisablesAutocast || S.Shape == AutocastScope::Kind::Unclosed ||
        S.End >= T.Scope->Begin)
      continue;
    // A backward between the two ends the earlier scope's step.
    if (llvm::any_of(FA.BackwardCalls, [&](const CXXMemberCallExpr *B) {
          unsigned O = offsetOf(B->getBeginLoc());
          return O > S.End && O < T.Scope->Begin;
        }))
      continue;
    llvm::SmallPtrSet<const ValueDecl *, 8> Written;
    for (const Use &W : U.All)
      if (W.Writes && W.At >= S.Begin && W.At <= S.End)
        Written.insert(W.Var);
    if (llvm::any_of(U.All, [&](const Use &R) {
          return !R.Writes && R.At >= T.Scope->Begin && R.At < FirstBackward && Written.count(R.Var);
        }))
      T.FeedingScopes.push_back(&S);
  }
}

} // namespace ampmigrate
