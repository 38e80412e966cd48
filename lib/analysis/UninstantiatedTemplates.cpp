// Templates this translation unit never instantiates: the calls of their definition that clang
// leaves unresolved, and the reason a step or scope there is not migrated.
#include "FunctionAnalyser.h"
#include "ampmigrate/SourceText.h"
#include "ampmigrate/StepFinder.h"

#include "clang/AST/DeclTemplate.h"

using namespace clang;

namespace ampmigrate {

bool isUnresolvedCall(const CallExpr *CE) {
  // A call on or of a dependent type has a dependent type itself (`model->forward(x)`,
  // `scaler.scale(loss)` of an `auto loss` that came from one); so has a call of an overload
  // set that argument-dependent lookup completes only in an instantiation.
  if (CE->isTypeDependent())
    return true;
  const Expr *Callee = CE->getCallee()->IgnoreParenImpCasts();
  return isa<CXXDependentScopeMemberExpr, UnresolvedMemberExpr, UnresolvedLookupExpr,
             DependentScopeDeclRefExpr>(Callee);
}

std::vector<const CallExpr *> unresolvedCallsOf(const FunctionDecl *FD,
                                                const std::vector<const CallExpr *> &Calls) {
  std::vector<const CallExpr *> Out;
  if (!FD->isDependentContext())
    return Out;
  for (const CallExpr *CE : Calls)
    if (isUnresolvedCall(CE))
      Out.push_back(CE);
  return Out;
}

/// How a message names the template that holds `FD`: a function template, or a member function
/// of a class template (also of a class nested in one).
static std::string templateHolding(const FunctionDecl *FD) {
  if (FD->getDescribedFunctionTemplate())
    return "the function template '" + FD->getQualifiedNameAsString() + "'";
  for (const DeclContext *DC = FD->getDeclContext(); DC; DC = DC->getParent()) {
    const auto *RD = dyn_cast<CXXRecordDecl>(DC);
    if (!RD)
      continue;
    if (const ClassTemplateDecl *CT = RD->getDescribedClassTemplate())
      return "the member function '" + FD->getNameAsString() + "' of the class template '" +
             CT->getQualifiedNameAsString() + "'";
    if (isa<ClassTemplatePartialSpecializationDecl>(RD))
      return "the member function '" + FD->getNameAsString() +
             "' of a partial specialization of '" + RD->getQualifiedNameAsString() + "'";
  }
  return "the template code of '" + FD->getQualifiedNameAsString() + "'";
}

std::string uninstantiatedTemplateReason(const ASTContext &Ctx, const FunctionAnalysis &FA,
                                         llvm::StringRef What, unsigned From) {
  const SourceManager &SM = Ctx.getSourceManager();
  auto Offset = [&](const Stmt *S) { return SM.getFileOffset(SM.getExpansionLoc(S->getBeginLoc())); };
  // The first unresolved call from `From` on names the gap; else the function's first.
  const CallExpr *Named = FA.UnresolvedCalls.front();
  for (const CallExpr *CE : FA.UnresolvedCalls)
    if (Offset(CE) >= From) {
      Named = CE;
      break;
    }
  std::string Text = StepFinder::textOf(Ctx, Named->getSourceRange());
  Text = Text.substr(0, Text.find('\n'));
  return What.str() + " is in " + templateHolding(FA.Function) +
         ", which this translation unit never instantiates; its calls on dependent types are not "
         "resolved (`" + Text + "` at " + lineText(SM, Named->getBeginLoc()) +
         "), so what they do is not known: instantiate it in a file of the compile database, or "
         "migrate by hand";
}

} // namespace ampmigrate
