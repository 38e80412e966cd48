// A mixed step: a plain (fp32) path beside the scaled one, chosen by one condition.
#include "StepEmitter.h"
#include "StepPlanner.h"

using namespace clang;

namespace ampmigrate {

bool StepPlanner::inMixedBackward(const Stmt *E) const {
  if (!T.mixed())
    return false;
  return within(E, T.Backwards.front()->BackwardStmt) || within(E, plainBackward().BackwardStmt);
}

std::string StepPlanner::mixedReturn(const std::string &Scaled) const {
  std::string Cond = text(T.Plain.Condition->getSourceRange());
  const Expr *Bare = T.Plain.Condition->IgnoreParenImpCasts();
  if (!isa<DeclRefExpr, MemberExpr, CXXMemberCallExpr>(Bare) &&
      !(isa<UnaryOperator>(Bare) && cast<UnaryOperator>(Bare)->getOpcode() == UO_LNot))
    Cond = "(" + Cond + ")";
  std::string Plain = text(plainBackward().Loss->getSourceRange());
  return T.Plain.ScaledWhenTrue ? Cond + " ? " + Scaled + " : " + Plain
                                : Cond + " ? " + Plain + " : " + Scaled;
}

const Expr *StepPlanner::bare(const Expr *E) {
  for (int I = 0; I < 8 && E; ++I) {
    E = E->IgnoreParenImpCasts();
    if (const auto *EW = dyn_cast<ExprWithCleanups>(E))
      E = EW->getSubExpr();
    else if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(E))
      E = MT->getSubExpr();
    else if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E))
      E = BT->getSubExpr();
    else
      break;
  }
  return E;
}

bool StepPlanner::onlyReads(const Expr *E) const {
  E = bare(E);
  if (!E)
    return false;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    return isa<VarDecl, EnumConstantDecl>(DRE->getDecl());
  if (const auto *ME = dyn_cast<MemberExpr>(E))
    return isa<FieldDecl>(ME->getMemberDecl()) && onlyReads(ME->getBase());
  if (isa<CXXThisExpr, CXXBoolLiteralExpr>(E))
    return true;
  if (const auto *U = dyn_cast<UnaryOperator>(E))
    return (U->getOpcode() == UO_LNot || U->getOpcode() == UO_Deref) && onlyReads(U->getSubExpr());
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (BO->getOpcode() == BO_LAnd || BO->getOpcode() == BO_LOr)
      return onlyReads(BO->getLHS()) && onlyReads(BO->getRHS());
    if (BO->getOpcode() == BO_EQ || BO->getOpcode() == BO_NE)
      return (isNullPointer(BO->getRHS(), Ctx) && onlyReads(BO->getLHS())) ||
             (isNullPointer(BO->getLHS(), Ctx) && onlyReads(BO->getRHS()));
    return false;
  }
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E)) {
    auto Op = OC->getOperator();
    if ((Op == OO_Arrow || Op == OO_Star || Op == OO_Exclaim) && OC->getNumArgs() == 1)
      return onlyReads(OC->getArg(0));
    if ((Op == OO_EqualEqual || Op == OO_ExclaimEqual) && OC->getNumArgs() == 2)
      return (isNullPointer(OC->getArg(1), Ctx) && onlyReads(OC->getArg(0))) ||
             (isNullPointer(OC->getArg(0), Ctx) && onlyReads(OC->getArg(1)));
    return false;
  }
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    return MD && MD->isConst() && MC->getNumArgs() == 0 && !MD->isVirtual() &&
           onlyReads(MC->getImplicitObjectArgument());
  }
  return false;
}

std::vector<const ValueDecl *> StepPlanner::declsRead(const Expr *E) {
  class Reads : public AnalysedBodyVisitor {
  public:
    std::vector<const ValueDecl *> Found;
    bool visitStmt(Stmt *S) override {
      if (const auto *D = dyn_cast<DeclRefExpr>(S); D && isa<VarDecl>(D->getDecl()))
        Found.push_back(D->getDecl());
      else if (const auto *M = dyn_cast<MemberExpr>(S); M && isa<FieldDecl>(M->getMemberDecl()))
        Found.push_back(M->getMemberDecl());
      return true;
    }
  } R;
  R.walk(E);
  return R.Found;
}

bool StepPlanner::names(const Expr *E, const ValueDecl *D) {
  for (int I = 0; I < 16 && E; ++I) {
    E = bare(E);
    if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
      return DRE->getDecl() == D;
    if (const auto *ME = dyn_cast<MemberExpr>(E)) {
      if (ME->getMemberDecl() == D)
        return true;
      E = ME->getBase();
    } else if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->getOpcode() == UO_Deref) {
      E = U->getSubExpr();
    } else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E);
               OC && (OC->getOperator() == OO_Arrow || OC->getOperator() == OO_Star) &&
               OC->getNumArgs() == 1) {
      E = OC->getArg(0);
    } else {
      return false;
    }
  }
  return false;
}

const Expr *StepPlanner::writeOf(const Stmt *S, const ValueDecl *D) const {
  class Writes : public AnalysedBodyVisitor {
  public:
    const ValueDecl *D;
    const Expr *Found = nullptr;
    explicit Writes(const ValueDecl *D) : D(D) {}
    bool hit(const Expr *E) {
      if (!Found)
        Found = E;
      return true;
    }
    bool visitStmt(Stmt *S) override {
      if (const auto *BO = dyn_cast<BinaryOperator>(S))
        return BO->isAssignmentOp() && names(BO->getLHS(), D) ? hit(BO) : true;
      if (const auto *U = dyn_cast<UnaryOperator>(S)) {
        bool Writes = U->isIncrementDecrementOp() || U->getOpcode() == UO_AddrOf;
        return Writes && names(U->getSubExpr(), D) ? hit(U) : true;
      }
      if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(S)) {
        bool Assign = OC->isAssignmentOp() || OC->getOperator() == OO_PlusPlus ||
                      OC->getOperator() == OO_MinusMinus || OC->getOperator() == OO_Amp;
        return Assign && OC->getNumArgs() >= 1 && names(OC->getArg(0), D) ? hit(OC) : true;
      }
      const auto *CE = dyn_cast<CallExpr>(S);
      if (!CE)
        return true;
      // As RecursiveASTVisitor's Visit* order: the call, then the member call.
      callWrites(CE);
      if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
        const CXXMethodDecl *MD = MC->getMethodDecl();
        if (MD && !MD->isConst() && names(MC->getImplicitObjectArgument(), D))
          hit(MC);
      }
      return true;
    }
    void callWrites(const CallExpr *CE) {
      const FunctionDecl *FD = CE->getDirectCallee();
      if (!FD)
        return;
      for (unsigned I = 0; I < CE->getNumArgs() && I < FD->getNumParams(); ++I) {
        QualType PT = FD->getParamDecl(I)->getType();
        bool Mutable = (PT->isReferenceType() || PT->isPointerType()) &&
                       !PT->getPointeeType().isConstQualified();
        if (Mutable && names(CE->getArg(I), D)) {
          hit(CE);
          return;
        }
      }
    }
  } W(D);
  W.walk(S);
  return W.Found;
}

bool StepPlanner::sameCondition(const Expr *A, const Expr *B) const {
  llvm::FoldingSetNodeID IA, IB;
  A->IgnoreParenImpCasts()->Profile(IA, Ctx, /*Canonical=*/true);
  B->IgnoreParenImpCasts()->Profile(IB, Ctx, /*Canonical=*/true);
  return IA == IB;
}

const Stmt *StepPlanner::firstOf(const Stmt *Side) {
  if (const auto *CS = dyn_cast<CompoundStmt>(Side)) {
    for (const Stmt *X : CS->body())
      if (!isa<NullStmt>(X))
        return X;
    return nullptr;
  }
  return Side;
}

bool StepPlanner::onlyStatement(const Stmt *Side, const Stmt *S) {
  if (const auto *CS = dyn_cast<CompoundStmt>(Side))
    return llvm::all_of(CS->body(), [&](const Stmt *X) { return X == S || isa<NullStmt>(X); });
  return Side == S;
}

bool StepPlanner::onMixedPath(const Stmt *E, const Stmt *Top) const {
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

bool StepPlanner::planMixed(const ImplicitBackward &B) {
  const PlainBranch &P = T.Plain;
  const IfStmt *If = P.Ifs.front();
  const ImplicitBackward &PB = plainBackward();
  std::string Cond = "`" + firstLine(text(P.Condition->getSourceRange())) + "`";
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
  const CompoundStmt *Block = parentCompound(If);
  if (!Block || If->getBeginLoc().isMacroID())
    return Fail(If->getBeginLoc(), "the if choosing the scaled or the plain path is not a "
                                   "statement of a block");
  // The condition is evaluated once more, at the end of the function given to value_and_grad,
  // to pick what it returns: it must read only, and the forward region must not change it.
  // (Calls are judged by onlyReads: a const method without arguments is a read.)
  bool Effects = P.Condition->HasSideEffects(Ctx, /*IncludePossibleEffects=*/false);
  if (Effects || !onlyReads(P.Condition))
    return Fail(P.Condition->getBeginLoc(),
                "the scaled and the plain path are chosen by " + Cond + ", which " +
                    (Effects ? "has side effects"
                             : "is not a variable, a member, a pointer or optional test or a "
                               "const method call") +
                    "; it would be evaluated again to choose what " + Tgt.ValueAndGrad +
                    " differentiates: store it in a variable first or migrate by hand");
  const Stmt *R0 = Desc.CalleeCallStmt; // the region starts at the scope, or at the callee's call
  if (const AutocastScope *S = T.Scope) {
    const Stmt *ScopeStart = S->GuardDeclStmt ? S->GuardDeclStmt
                                              : (S->Enable->Removable ? S->Enable->Removable : S->Enable->Call);
    R0 = childOf(ScopeStart, Block);
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
        !sameCondition(P.Ifs[I]->getCond(), P.Condition) || ScaledOnThen != P.ScaledWhenTrue)
      return Fail(P.Ifs[I]->getCond()->getBeginLoc(),
                  "the scaled and the plain path are chosen by " + Cond + " at " +
                      where(P.Condition->getBeginLoc()) + " and by `" +
                      firstLine(text(P.Ifs[I]->getCond()->getSourceRange())) + "` here" +
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
    if (!within(E, Block) || !onMixedPath(E, Block))
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

void StepPlanner::checkMixedBackwards(const ImplicitBackward &B) {
  const IfStmt *If = T.Plain.Ifs.front();
  const Stmt *ScaledSide = T.Plain.ScaledWhenTrue ? If->getThen() : If->getElse();
  const Stmt *PlainSide = T.Plain.PlainSides.front();
  const ImplicitBackward &PB = plainBackward();
  Edit E;
  if (onlyStatement(ScaledSide, B.BackwardStmt) && onlyStatement(PlainSide, PB.BackwardStmt)) {
    if (removal(If, E))
      Desc.MixedBackwards.push_back({E.Offset, E.Offset + E.Length, false});
    else
      block(If->getBeginLoc(), "the if choosing the path is inside a macro");
    return;
  }
  for (const auto &[Side, St] : {std::pair(ScaledSide, B.BackwardStmt), std::pair(PlainSide, PB.BackwardStmt)}) {
    if (Side == St) { // `if (c) loss.backward(); else { ... }`: the branch keeps a statement
      CharSourceRange R = stmtRange(St);
      if (R.isInvalid()) {
        block(St->getBeginLoc(), "backward() is inside a macro");
        return;
      }
      unsigned SB = SM.getFileOffset(R.getBegin()), SE = SM.getFileOffset(R.getEnd());
      Desc.MixedBackwards.push_back({SB, SE, true});
      continue;
    }
    if (!removal(St, E)) {
      block(St->getBeginLoc(), "backward() is inside a macro");
      return;
    }
    Desc.MixedBackwards.push_back({E.Offset, E.Offset + E.Length, false});
  }
}

void StepEmitter::emitMixedBackwards() const {
  for (const BranchEdit &E : D.MixedBackwards) {
    if (E.LeavesEmptyBlock)
      Out.replace(E.Begin, E.End - E.Begin, "{}");
    else
      Out.remove(E.Begin, E.End);
  }
}

} // namespace ampmigrate
