// The facts of a scaler's data flow: what holds a scaler class (the types that hold it, the holder
// an expression names, a holder's declarations); the uses of the holders are ScalerUseIndex's.
#include "ampmigrate/ScalerUses.h"
#include "ampmigrate/ExpressionFacts.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLExtras.h"

using namespace clang;

namespace ampmigrate {

bool holdsClass(QualType QT, const CXXRecordDecl *Class) {
  for (int I = 0; I < 8 && !QT.isNull(); ++I) {
    QT = QT.getNonReferenceType();
    if (QT->isPointerType()) {
      QT = QT->getPointeeType();
      continue;
    }
    const CXXRecordDecl *RD = QT->getAsCXXRecordDecl();
    if (!RD)
      return false;
    if (RD->getCanonicalDecl() == Class)
      return true;
    const auto *TS = dyn_cast<ClassTemplateSpecializationDecl>(RD);
    if (!TS || TS->getTemplateArgs().size() == 0 ||
        TS->getTemplateArgs()[0].getKind() != TemplateArgument::Type)
      return false;
    QT = TS->getTemplateArgs()[0].getAsType();
  }
  return false;
}

const Expr *throughSameObject(const Expr *E, const CXXRecordDecl *Class) {
  return ignoreWrappers(E, [Class](const Expr *X) -> const Expr * {
    if (const auto *U = dyn_cast<UnaryOperator>(X); U && (U->getOpcode() == UO_Deref || U->getOpcode() == UO_AddrOf))
      return U->getSubExpr();
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(X); OC && OC->getOperator() == OO_Star && OC->getNumArgs() == 1)
      return OC->getArg(0);
    if (const auto *CE = dyn_cast<CXXConstructExpr>(X); CE && CE->getConstructor()->isCopyOrMoveConstructor() &&
                                                        CE->getNumArgs() >= 1 && holdsClass(CE->getType(), Class))
      return CE->getArg(0);
    if (const auto *C = dyn_cast<CallExpr>(X); C && C->getNumArgs() == 1 && C->getDirectCallee() &&
                                               C->getDirectCallee()->isInStdNamespace() &&
                                               C->getDirectCallee()->getIdentifier() &&
                                               (C->getDirectCallee()->getName() == "move" ||
                                                C->getDirectCallee()->getName() == "forward"))
      return C->getArg(0);
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(X);
        MC && MC->getNumArgs() == 0 && MC->getMethodDecl() && MC->getMethodDecl()->getIdentifier() &&
        (MC->getMethodDecl()->getName() == "get" || MC->getMethodDecl()->getName() == "value") &&
        MC->getMethodDecl()->getParent()->getCanonicalDecl() != Class)
      return MC->getImplicitObjectArgument();
    return X;
  });
}

const ValueDecl *holderOf(const Expr *E, const CXXRecordDecl *Class) {
  E = throughSameObject(E, Class);
  const ValueDecl *D = nullptr;
  if (const auto *DR = dyn_cast<DeclRefExpr>(E))
    D = DR->getDecl();
  else if (const auto *ME = dyn_cast<MemberExpr>(E))
    D = ME->getMemberDecl();
  if (!D || !isa<VarDecl, FieldDecl>(D) || !holdsClass(D->getType(), Class))
    return nullptr;
  return D;
}

std::vector<const DeclaratorDecl *> declarationsOf(const ValueDecl *H) {
  std::vector<const DeclaratorDecl *> Out;
  if (const auto *PV = dyn_cast<ParmVarDecl>(H)) {
    if (const auto *FD = dyn_cast<FunctionDecl>(PV->getDeclContext())) {
      unsigned I = PV->getFunctionScopeIndex();
      for (const FunctionDecl *R : FD->redecls())
        if (I < R->getNumParams())
          Out.push_back(R->getParamDecl(I));
      return Out;
    }
  }
  if (const auto *VD = dyn_cast<VarDecl>(H)) {
    for (const VarDecl *R : VD->redecls())
      Out.push_back(R);
    return Out;
  }
  if (const auto *FD = dyn_cast<FieldDecl>(H))
    Out.push_back(FD);
  return Out;
}

bool takesClass(const FunctionDecl *FD, const CXXRecordDecl *Class) {
  return llvm::any_of(FD->parameters(), [&](const ParmVarDecl *P) { return holdsClass(P->getType(), Class); });
}

bool ScalerUseIndex::traverseDecl(Decl *D) {
  if (!isa<TranslationUnitDecl>(D) && D->getLocation().isValid() &&
      SM.isInSystemHeader(SM.getExpansionLoc(D->getLocation())))
    return true;
  return descend(D);
}

bool ScalerUseIndex::visitStmt(Stmt *S) {
  if (auto *E = dyn_cast<CallExpr>(S))
    return visitCall(E);
  if (auto *E = dyn_cast<CXXConstructExpr>(S))
    return visitConstruct(E);
  if (auto *E = dyn_cast<DeclRefExpr>(S))
    return visitDeclRef(E);
  if (auto *E = dyn_cast<MemberExpr>(S))
    return visitMember(E);
  return true;
}

bool ScalerUseIndex::visitCall(CallExpr *E) {
  Callees.insert(E->getCallee()->IgnoreParenImpCasts());
  if (const FunctionDecl *FD = E->getDirectCallee(); FD && takesClass(FD, Class))
    Calls[FD->getCanonicalDecl()].push_back(E);
  return true;
}

bool ScalerUseIndex::visitConstruct(CXXConstructExpr *E) {
  if (takesClass(E->getConstructor(), Class) && !E->getConstructor()->isCopyOrMoveConstructor())
    Calls[E->getConstructor()->getCanonicalDecl()].push_back(E);
  return true;
}

bool ScalerUseIndex::visitDeclRef(DeclRefExpr *E) {
  if (const auto *FD = dyn_cast<FunctionDecl>(E->getDecl())) {
    if (takesClass(FD, Class) && !Callees.count(E))
      NamedOtherwise.try_emplace(FD->getCanonicalDecl(), E);
    return true;
  }
  if (holdsClass(E->getDecl()->getType(), Class))
    Refs[E->getDecl()->getCanonicalDecl()].push_back(E);
  return true;
}

bool ScalerUseIndex::visitMember(MemberExpr *E) {
  if (isa<FieldDecl>(E->getMemberDecl()) && holdsClass(E->getMemberDecl()->getType(), Class))
    Refs[E->getMemberDecl()->getCanonicalDecl()].push_back(E);
  else if (const auto *MD = dyn_cast<CXXMethodDecl>(E->getMemberDecl());
           MD && takesClass(MD, Class) && !Callees.count(E))
    NamedOtherwise.try_emplace(MD->getCanonicalDecl(), E);
  return true;
}

} // namespace ampmigrate
