// A mixed step: a plain (fp32) path beside the scaled one, chosen by one condition.
#include "MixedSteps.h"
#include "StepEditWriter.h"

using namespace clang;

namespace ampmigrate {

bool inMixedBackward(const StepContext &C, const Stmt *E) {
  const TrainingStep &T = C.T;
  if (!T.mixed())
    return false;
  return C.within(E, T.Backwards.front()->BackwardStmt) ||
         C.within(E, T.Plain.Backwards.front()->BackwardStmt);
}

std::string mixedReturn(const StepContext &C, const std::string &Scaled) {
  const TrainingStep &T = C.T;
  std::string Cond = C.text(T.Plain.Condition->getSourceRange());
  const Expr *Bare = T.Plain.Condition->IgnoreParenImpCasts();
  if (!isa<DeclRefExpr, MemberExpr, CXXMemberCallExpr>(Bare) &&
      !(isa<UnaryOperator>(Bare) && cast<UnaryOperator>(Bare)->getOpcode() == UO_LNot))
    Cond = "(" + Cond + ")";
  std::string Plain = C.text(T.Plain.Backwards.front()->Loss->getSourceRange());
  return T.Plain.ScaledWhenTrue ? Cond + " ? " + Scaled + " : " + Plain
                                : Cond + " ? " + Plain + " : " + Scaled;
}

namespace {

/// The statement of branch `Side` that comes first (Side itself when it is not a block).
const Stmt *firstOf(const Stmt *Side) {
  if (const auto *CS = dyn_cast<CompoundStmt>(Side)) {
    for (const Stmt *X : CS->body())
      if (!isa<NullStmt>(X))
        return X;
    return nullptr;
  }
  return Side;
}

/// Whether `S` is all that branch `Side` holds.
bool onlyStatement(const Stmt *Side, const Stmt *S) {
  if (const auto *CS = dyn_cast<CompoundStmt>(Side))
    return llvm::all_of(CS->body(), [&](const Stmt *X) { return X == S || isa<NullStmt>(X); });
  return Side == S;
}

/// The checks of a mixed step's two paths (feasibility, with the step's shape), and the
/// backwards leaving their branches.
class MixedPaths : public StepConcern {
public:
  MixedPaths(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers)
      : StepConcern(C, F, Blockers) {}

  /// Validates a mixed step; false (with a blocker) when it cannot be rewritten with the same
  /// meaning.
  bool planMixed(const ImplicitBackward &B);
  /// The backwards leave the branches; a branch left empty goes (the whole if when both do).
  void checkMixedBackwards(const ImplicitBackward &B, std::vector<BranchEdit> &Out);

private:
  /// Whether the path from `E` up to `Top` crosses only blocks and the ifs of the mixed step:
  /// no loop, no other condition (each element runs once, when its path is taken).
  bool onMixedPath(const Stmt *E, const Stmt *Top) const;
};

} // namespace

bool checkMixedPaths(const StepContext &C, const StepFacts &Shape, std::vector<Blocker> &Blockers) {
  return MixedPaths(C, Shape, Blockers).planMixed(*C.T.Backwards.front());
}

ConcernPlan<std::vector<BranchEdit>> planMixedBackwards(const StepContext &C, const StepFacts &F) {
  ConcernPlan<std::vector<BranchEdit>> P;
  MixedPaths(C, F, P.Blockers).checkMixedBackwards(*C.T.Backwards.front(), P.Plan);
  return P;
}

bool MixedPaths::onMixedPath(const Stmt *E, const Stmt *Top) const {
  const Stmt *St = E;
  while (St && PM.getParent(St) && !isa<CompoundStmt, IfStmt>(PM.getParent(St)))
    St = PM.getParent(St);
  for (const Stmt *P = St ? PM.getParent(St) : nullptr; P; P = PM.getParent(P)) {
    if (P == Top)
      return true;
    if (isa<CompoundStmt>(P))
      continue;
    if (const auto *If = dyn_cast<IfStmt>(P); If && llvm::is_contained(T.Plain.Ifs, If))
      continue;
    return false;
  }
  return false;
}

bool MixedPaths::planMixed(const ImplicitBackward &B) {
  const PlainBranch &P = T.Plain;
  const IfStmt *If = P.Ifs.front();
  const ImplicitBackward &PB = *T.Plain.Backwards.front();
  std::string Cond = "`" + firstLine(C.text(P.Condition->getSourceRange())) + "`";
  auto Fail = [&](SourceLocation L, const std::string &Why) {
    block(L, Why);
    return false;
  };
  if (T.Backwards.size() != 1 || P.Backwards.size() != 1)
    return Fail(B.Backward->getBeginLoc(),
                "a scaled and a plain path chosen by " + Cond + " with several backward "
                "calls; not rewritten automatically");
  if (T.Steps.size() != 1)
    return Fail(T.Steps[1]->Call->getBeginLoc(),
                "several optimizers in a step with a scaled and a plain path (chosen by " + Cond +
                    "); not rewritten automatically");
  if (B.ScaleStmt)
    return Fail(B.Backward->getBeginLoc(),
                "the scaled loss of the path chosen by " + Cond + " is a statement of its own; "
                "write scaler.scale(loss).backward() or migrate by hand");
  if (If->getInit() || If->getConditionVariable())
    return Fail(If->getBeginLoc(), "the if choosing the scaled or the plain path declares a "
                                   "variable; not rewritten automatically");
  const CompoundStmt *Block = C.parentCompound(If);
  if (!Block || If->getBeginLoc().isMacroID())
    return Fail(If->getBeginLoc(), "the if choosing the scaled or the plain path is not a "
                                   "statement of a block");
  // The condition is evaluated once more, at the end of the function given to value_and_grad,
  // to pick what it returns: it must read only, and the forward region must not change it.
  // (Calls are judged by onlyReads: a const method without arguments is a read.)
  bool Effects = P.Condition->HasSideEffects(Ctx, /*IncludePossibleEffects=*/false);
  if (Effects || !onlyReads(P.Condition, Ctx))
    return Fail(P.Condition->getBeginLoc(),
                "the scaled and the plain path are chosen by " + Cond + ", which " +
                    (Effects ? "has side effects"
                             : "is not a variable, a member, a pointer or optional test or a "
                               "const method call") +
                    "; it would be evaluated again to choose what " + Tgt.ValueAndGrad +
                    " differentiates: store it in a variable first or migrate by hand");
  const Stmt *R0 = F.CalleeCallStmt; // the region starts at the scope, or at the callee's call
  if (const AutocastScope *S = T.Scope) {
    const Stmt *ScopeStart = S->GuardDeclStmt ? S->GuardDeclStmt
                                              : (S->Enable->Removable ? S->Enable->Removable : S->Enable->Call);
    R0 = C.childOf(ScopeStart, Block);
  }
  bool InRegion = false;
  for (const Stmt *Child : Block->body()) {
    if (Child == R0)
      InRegion = true;
    if (Child == If)
      break;
    if (!InRegion)
      continue;
    for (const ValueDecl *D : declsRead(P.Condition))
      if (const Expr *W = writeOf(Child, D))
        return Fail(W->getBeginLoc(), "the scaled and the plain path are chosen by " + Cond +
                                          ", which the forward region changes here; it would be "
                                          "evaluated again to choose what " + Tgt.ValueAndGrad +
                                          " differentiates: migrate by hand");
  }
  // The later ifs must choose the same way: the same condition, the scaled calls on the same side.
  for (size_t I = 1; I < P.Ifs.size(); ++I) {
    bool ScaledOnThen = P.PlainSides[I] != P.Ifs[I]->getThen();
    if (P.Ifs[I]->getInit() || P.Ifs[I]->getConditionVariable() ||
        !sameCondition(P.Ifs[I]->getCond(), P.Condition, Ctx) || ScaledOnThen != P.ScaledWhenTrue)
      return Fail(P.Ifs[I]->getCond()->getBeginLoc(),
                  "the scaled and the plain path are chosen by " + Cond + " at " +
                      C.where(P.Condition->getBeginLoc()) + " and by `" +
                      firstLine(C.text(P.Ifs[I]->getCond()->getSourceRange())) + "` here" +
                      (ScaledOnThen != P.ScaledWhenTrue ? " (the scaler's calls on the other branch)" : "") +
                      "; the paths may not pair up: choose both by one condition or migrate by hand");
  }
  if (P.Steps.empty())
    return Fail(PB.Backward->getBeginLoc(),
                "the plain path (no scaler) chosen by " + Cond + " has no step() of the "
                "optimizer in this function; its gradients would be lost: migrate by hand");
  // Each element runs once on its path, in the if's block: no accumulation, no other condition.
  std::vector<const Stmt *> Elements{B.Backward, PB.Backward};
  for (const auto *List : {&T.Unscales, &T.Steps, &T.Updates, &P.Steps})
    for (const ScalerCall *C : *List)
      Elements.push_back(C->Call);
  for (const Stmt *E : Elements)
    if (!C.within(E, Block) || !onMixedPath(E, Block))
      return Fail(E->getBeginLoc(), "a step with a scaled and a plain path (chosen by " + Cond +
                                        ") has this call outside them or under another loop "
                                        "or condition (a gradient accumulation?); not "
                                        "rewritten automatically");
  // The backwards come first in their branches: the function returns the loss as it was there.
  const Stmt *ScaledSide = P.ScaledWhenTrue ? If->getThen() : If->getElse();
  for (const auto &[Side, Bw] : {std::pair(ScaledSide, &B), std::pair(P.PlainSides.front(), &PB)})
    if (!Bw->BackwardStmt || firstOf(Side) != Bw->BackwardStmt || Bw->BackwardStmt->getBeginLoc().isMacroID())
      return Fail(Bw->Backward->getBeginLoc(),
                  "backward() is not the first statement of its branch of the if on " + Cond +
                      "; what the function given to " + Tgt.ValueAndGrad +
                      " returns must be the loss as backward() saw it: migrate by hand");
  return true;
}

void MixedPaths::checkMixedBackwards(const ImplicitBackward &B, std::vector<BranchEdit> &Out) {
  const IfStmt *If = T.Plain.Ifs.front();
  const Stmt *ScaledSide = T.Plain.ScaledWhenTrue ? If->getThen() : If->getElse();
  const Stmt *PlainSide = T.Plain.PlainSides.front();
  const ImplicitBackward &PB = *T.Plain.Backwards.front();
  Edit E;
  if (onlyStatement(ScaledSide, B.BackwardStmt) && onlyStatement(PlainSide, PB.BackwardStmt)) {
    if (C.removal(If, E))
      Out.push_back({E.Offset, E.Offset + E.Length, false});
    else
      block(If->getBeginLoc(), "the if choosing the path is inside a macro");
    return;
  }
  for (const auto &[Side, St] : {std::pair(ScaledSide, B.BackwardStmt), std::pair(PlainSide, PB.BackwardStmt)}) {
    if (Side == St) { // `if (c) loss.backward(); else { ... }`: the branch keeps a statement
      CharSourceRange R = C.stmtRange(St);
      if (R.isInvalid()) {
        block(St->getBeginLoc(), "backward() is inside a macro");
        return;
      }
      unsigned SB = SM.getFileOffset(R.getBegin()), SE = SM.getFileOffset(R.getEnd());
      Out.push_back({SB, SE, true});
      continue;
    }
    if (!C.removal(St, E)) {
      block(St->getBeginLoc(), "backward() is inside a macro");
      return;
    }
    Out.push_back({E.Offset, E.Offset + E.Length, false});
  }
}

void StepEditWriter::writeMixedBackwards() const {
  for (const BranchEdit &E : D.MixedBackwards) {
    if (E.LeavesEmptyBlock)
      Out.replace(E.Begin, E.End - E.Begin, "{}");
    else
      Out.remove(E.Begin, E.End);
  }
}

} // namespace ampmigrate
