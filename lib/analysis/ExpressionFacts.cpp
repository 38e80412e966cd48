// What an expression reads and writes, as facts the planner asks about conditions and flags
// (ExpressionFacts.h).
#include "ampmigrate/ExpressionFacts.h"
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/GenericLambdas.h"

#include "clang/AST/ExprCXX.h"
#include "clang/AST/IgnoreExpr.h"

using namespace clang;

namespace ampmigrate {

namespace {

bool isNullPointer(const Expr *E, ASTContext &Ctx) {
  return E->IgnoreParenImpCasts()->isNullPointerConstant(Ctx, Expr::NPC_ValueDependentIsNotNull) !=
         Expr::NPCK_NotNull;
}

} // namespace

const Expr *ignoreWrappers(const Expr *E, llvm::function_ref<const Expr *(const Expr *)> Also) {
  while (E) {
    // What Expr::IgnoreParenImpCasts and Expr::IgnoreImplicit look through, to a fixpoint.
    E = IgnoreExprNodes(E, IgnoreParensSingleStep, IgnoreImplicitCastsExtraSingleStep,
                        IgnoreImplicitSingleStep);
    const Expr *Next = Also ? Also(E) : E;
    if (Next == E)
      return E;
    E = Next;
  }
  return E;
}

bool onlyReads(const Expr *E, ASTContext &Ctx) {
  E = ignoreWrappers(E);
  if (!E)
    return false;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    return isa<VarDecl, EnumConstantDecl>(DRE->getDecl());
  if (const auto *ME = dyn_cast<MemberExpr>(E))
    return isa<FieldDecl>(ME->getMemberDecl()) && onlyReads(ME->getBase(), Ctx);
  if (isa<CXXThisExpr, CXXBoolLiteralExpr>(E))
    return true;
  if (const auto *U = dyn_cast<UnaryOperator>(E))
    return (U->getOpcode() == UO_LNot || U->getOpcode() == UO_Deref) && onlyReads(U->getSubExpr(), Ctx);
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (BO->getOpcode() == BO_LAnd || BO->getOpcode() == BO_LOr)
      return onlyReads(BO->getLHS(), Ctx) && onlyReads(BO->getRHS(), Ctx);
    if (BO->getOpcode() == BO_EQ || BO->getOpcode() == BO_NE)
      return (isNullPointer(BO->getRHS(), Ctx) && onlyReads(BO->getLHS(), Ctx)) ||
             (isNullPointer(BO->getLHS(), Ctx) && onlyReads(BO->getRHS(), Ctx));
    return false;
  }
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E)) {
    auto Op = OC->getOperator();
    if ((Op == OO_Arrow || Op == OO_Star || Op == OO_Exclaim) && OC->getNumArgs() == 1)
      return onlyReads(OC->getArg(0), Ctx);
    if ((Op == OO_EqualEqual || Op == OO_ExclaimEqual) && OC->getNumArgs() == 2)
      return (isNullPointer(OC->getArg(1), Ctx) && onlyReads(OC->getArg(0), Ctx)) ||
             (isNullPointer(OC->getArg(0), Ctx) && onlyReads(OC->getArg(1), Ctx));
    return false;
  }
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    return MD && MD->isConst() && MC->getNumArgs() == 0 && !MD->isVirtual() &&
           onlyReads(MC->getImplicitObjectArgument(), Ctx);
  }
  return false;
}

std::vector<const ValueDecl *> declsRead(const Expr *E) {
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

bool refersToAny(const Expr *E, const llvm::SmallPtrSetImpl<const VarDecl *> &Vars) {
  struct Refs : AstVisitor {
    const llvm::SmallPtrSetImpl<const VarDecl *> &Vars;
    bool Found = false;
    explicit Refs(const llvm::SmallPtrSetImpl<const VarDecl *> &Vars) : Vars(Vars) {}
    bool visitStmt(Stmt *St) override {
      if (const auto *R = dyn_cast<DeclRefExpr>(St))
        if (const auto *V = dyn_cast<VarDecl>(R->getDecl()); V && Vars.contains(V))
          Found = true;
      return !Found;
    }
  } R(Vars);
  R.walk(E);
  return R.Found;
}

bool names(const Expr *E, const ValueDecl *D) {
  for (int I = 0; I < 16 && E; ++I) {
    E = ignoreWrappers(E);
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

const Expr *writeOf(const Stmt *S, const ValueDecl *D) {
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

bool sameCondition(const Expr *A, const Expr *B, ASTContext &Ctx) {
  llvm::FoldingSetNodeID IA, IB;
  A->IgnoreParenImpCasts()->Profile(IA, Ctx, /*Canonical=*/true);
  B->IgnoreParenImpCasts()->Profile(IB, Ctx, /*Canonical=*/true);
  return IA == IB;
}

} // namespace ampmigrate
