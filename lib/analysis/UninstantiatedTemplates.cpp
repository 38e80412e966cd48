// Code this translation unit never instantiates (a template's definition, a generic lambda nothing
// calls): the calls clang leaves unresolved there, and the reason a step or scope there is not
// migrated.
#include "FunctionAnalyser.h"
#include "ampmigrate/SourceText.h"
#include "ampmigrate/GenericLambdas.h"
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

void findUnresolvedCalls(const FunctionBody &Body, FunctionAnalysis &FA) {
  bool Template = Body.FD->isDependentContext();
  for (const CallExpr *CE : Body.Calls) {
    if (!isUnresolvedCall(CE))
      continue;
    if (Template) {
      FA.UnresolvedCalls.push_back(CE);
      continue;
    }
    // Outside a template, dependent code is the body of a generic lambda read in its own
    // definition: one nothing here calls (a lambda called with several types is read there too,
    // and is not this case).
    const LambdaExpr *Uncalled = nullptr;
    for (const Stmt *P = Body.PM.getParent(CE); P; P = Body.PM.getParent(P))
      if (const auto *LE = dyn_cast<LambdaExpr>(P); LE && LE->isGenericLambda() && lambdaInstantiations(LE) == 0)
        Uncalled = LE; // the outermost
    if (!Uncalled)
      continue;
    FA.UnresolvedCalls.push_back(CE);
    if (!llvm::is_contained(FA.UncalledLambdas, Uncalled))
      FA.UncalledLambdas.push_back(Uncalled);
  }
}

/// The uncalled generic lambda of `FA` that holds the file offset `At`, if any.
static const LambdaExpr *uncalledLambdaAt(const SourceManager &SM, const FunctionAnalysis &FA, unsigned At) {
  for (const LambdaExpr *LE : FA.UncalledLambdas) {
    unsigned B = SM.getFileOffset(SM.getExpansionLoc(LE->getBeginLoc()));
    unsigned E = SM.getFileOffset(SM.getExpansionLoc(LE->getEndLoc()));
    if (At >= B && At <= E)
      return LE;
  }
  return nullptr;
}

bool unresolvedAt(const SourceManager &SM, const FunctionAnalysis &FA, unsigned At) {
  if (FA.UnresolvedCalls.empty())
    return false;
  return FA.Function->isDependentContext() || uncalledLambdaAt(SM, FA, At);
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

std::string uninstantiatedReason(const ASTContext &Ctx, const FunctionAnalysis &FA,
                                 llvm::StringRef What, unsigned From) {
  const SourceManager &SM = Ctx.getSourceManager();
  auto Offset = [&](const Stmt *S) { return SM.getFileOffset(SM.getExpansionLoc(S->getBeginLoc())); };
  const LambdaExpr *Lambda = FA.Function->isDependentContext() ? nullptr : uncalledLambdaAt(SM, FA, From);
  auto Inside = [&](const CallExpr *CE) {
    return !Lambda || (Offset(CE) >= Offset(Lambda) &&
                       Offset(CE) <= SM.getFileOffset(SM.getExpansionLoc(Lambda->getEndLoc())));
  };
  // The first unresolved call from `From` on names the gap; else the first of the code.
  const CallExpr *Named = nullptr;
  for (const CallExpr *CE : FA.UnresolvedCalls)
    if (Inside(CE) && (!Named || (Offset(Named) < From && Offset(CE) >= From)))
      Named = CE;
  std::string Text = StepFinder::textOf(Ctx, Named->getSourceRange());
  Text = Text.substr(0, Text.find('\n'));
  std::string Gap = "; its calls on dependent types are not resolved (`" + Text + "` at " +
                    lineText(SM, Named->getBeginLoc()) + "), so what they do is not known: ";
  if (Lambda)
    return What.str() + " is in the generic lambda at " + lineText(SM, Lambda->getBeginLoc()) +
           ", which nothing in this translation unit calls" + Gap +
           "call it in this file (a generic lambda called with one type is read through that "
           "call), or migrate by hand";
  return What.str() + " is in " + templateHolding(FA.Function) +
         ", which this translation unit never instantiates" + Gap +
         "instantiate it in a file of the compile database, or migrate by hand";
}

} // namespace ampmigrate
