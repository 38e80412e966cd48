// Generic lambdas read through their instantiation (see GenericLambdas.h).
#include "ampmigrate/GenericLambdas.h"

#include "clang/AST/DeclTemplate.h"

using namespace clang;

namespace ampmigrate {

static llvm::SmallVector<const CXXMethodDecl *, 2> instantiatedOperators(const LambdaExpr *LE) {
  llvm::SmallVector<const CXXMethodDecl *, 2> Out;
  if (!LE->isGenericLambda())
    return Out;
  const FunctionTemplateDecl *FT = LE->getCallOperator()->getDescribedFunctionTemplate();
  if (!FT)
    return Out;
  for (const FunctionDecl *Spec : FT->specializations())
    if (const auto *MD = dyn_cast<CXXMethodDecl>(Spec); MD && MD->getBody() &&
                                                         MD->isTemplateInstantiation())
      Out.push_back(MD);
  return Out;
}

unsigned lambdaInstantiations(const LambdaExpr *LE) { return instantiatedOperators(LE).size(); }

/// The lambda's own call operator, found among its class's members: LambdaExpr::getCallOperator
/// looks it up by name, and a name lookup walks every enclosing context (quadratic time in
/// lambdas nested in lambdas).
static const CXXMethodDecl *ownCallOperator(const LambdaExpr *LE) {
  for (const Decl *D : LE->getLambdaClass()->decls()) {
    if (const auto *FT = dyn_cast<FunctionTemplateDecl>(D))
      D = FT->getTemplatedDecl();
    if (const auto *M = dyn_cast<CXXMethodDecl>(D); M && M->getOverloadedOperator() == OO_Call)
      return M;
  }
  return LE->getCallOperator();
}

const CXXMethodDecl *analysedCallOperator(const LambdaExpr *LE) {
  if (!LE->isGenericLambda())
    return ownCallOperator(LE);
  auto Ops = instantiatedOperators(LE);
  return Ops.size() == 1 ? Ops.front() : LE->getCallOperator();
}

const CompoundStmt *analysedLambdaBody(const LambdaExpr *LE) {
  if (!LE->isGenericLambda())
    return LE->getCompoundStmtBody();
  const CXXMethodDecl *Op = analysedCallOperator(LE);
  if (Op != LE->getCallOperator())
    return dyn_cast_or_null<CompoundStmt>(Op->getBody());
  return LE->getCompoundStmtBody();
}

} // namespace ampmigrate
