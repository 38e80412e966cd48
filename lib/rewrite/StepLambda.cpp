// Training steps inside lambdas (see StepLambda.h).
#include "StepLambda.h"
#include "ampmigrate/SourceText.h"
#include "ampmigrate/StepFinder.h"

#include "clang/AST/DeclCXX.h"
#include "clang/Basic/SourceManager.h"

using namespace clang;

namespace ampmigrate {

const LambdaExpr *enclosingLambda(const Stmt *S, const ParentMap &PM) {
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
    if (const auto *L = dyn_cast<LambdaExpr>(P))
      return L;
  return nullptr;
}

/// "the lambda at line N" or "'f' itself".
static std::string bodyName(const LambdaExpr *L, const FunctionDecl *Fn, const SourceManager &SM) {
  if (L)
    return "the lambda at " + lineText(SM, L->getBeginLoc());
  return "'" + Fn->getNameAsString() + "' outside its lambdas";
}

std::optional<Blocker> lambdaBoundaryBlocker(const TrainingStep &T, const FunctionDecl *Fn,
                                             const ParentMap &PM, const ASTContext &Ctx) {
  if (T.Backwards.empty())
    return std::nullopt;
  const SourceManager &SM = Ctx.getSourceManager();
  const CXXMemberCallExpr *Backward = T.Backwards.front()->Backward;
  const LambdaExpr *Home = enclosingLambda(Backward, PM);
  std::optional<Blocker> Out;
  auto Check = [&](const Stmt *S, llvm::StringRef What) {
    if (Out || !S)
      return;
    const LambdaExpr *L = enclosingLambda(S, PM);
    if (L == Home)
      return;
    Out = Blocker{S->getBeginLoc(),
                  "the step crosses a lambda boundary: the scaled backward (" +
                      lineText(SM, Backward->getBeginLoc()) + ") runs in " +
                      bodyName(Home, Fn, SM) + " and " + What.str() + " in " +
                      bodyName(L, Fn, SM) + "; the grads of amp::value_and_grad live in one "
                      "body: put the whole step in one lambda (or none) or migrate by hand"};
  };
  if (const AutocastScope *S = T.Scope) {
    if (S->GuardDeclStmt)
      Check(S->GuardDeclStmt, "the autocast guard");
    else if (S->Enable)
      Check(S->Enable->Call, "the autocast scope");
  }
  for (const ImplicitBackward *B : T.Backwards)
    Check(B->Backward, "another backward()");
  auto Calls = [&](llvm::ArrayRef<const ScalerCall *> List, llvm::StringRef Name) {
    for (const ScalerCall *C : List)
      Check(C->Call, Name);
  };
  Calls(T.Unscales, "unscale_()");
  Calls(T.Steps, "step()");
  Calls(T.Updates, "update()");
  for (const ClipCall *C : T.Clips)
    Check(C->Call, "the clip");
  for (const GradAccess &G : T.GradAccesses)
    Check(G.Access, "a statement touching .grad");
  return Out;
}

/// Whether the model's declaration lies inside the lambda `L` (a parameter of its call operator,
/// a local or an init-capture of its body).
static bool declaredIn(const ObjectRef &Model, const LambdaExpr *L, const SourceManager &SM) {
  if (Model.IsThis || !Model.Decl || isa<FieldDecl>(Model.Decl))
    return false;
  const auto *VD = dyn_cast<VarDecl>(Model.Decl);
  if (!VD)
    return true; // a binding or something else: keep the conversion where it is used
  if (VD->isInitCapture())
    return true;
  SourceLocation D = SM.getExpansionLoc(VD->getLocation());
  SourceRange R(SM.getExpansionLoc(L->getBeginLoc()), SM.getExpansionLoc(L->getEndLoc()));
  return !SM.isBeforeInTranslationUnit(D, R.getBegin()) &&
         !SM.isBeforeInTranslationUnit(R.getEnd(), D);
}

std::optional<LambdaConversionPoint> conversionOutsideLambdas(const Stmt *RegionStart,
                                                              const ObjectRef &Model,
                                                              const FunctionDecl *Fn,
                                                              const ParentMap &PM,
                                                              const SourceManager &SM) {
  (void)Fn;
  LambdaConversionPoint P;
  const LambdaExpr *Outermost = nullptr;
  for (const LambdaExpr *L = enclosingLambda(RegionStart, PM); L && !declaredIn(Model, L, SM);
       L = enclosingLambda(L, PM)) {
    P.Crossed.insert(P.Crossed.begin(), L);
    Outermost = L;
  }
  if (!Outermost)
    return std::nullopt;
  // The statement of a block (or a loop's or if's body) that holds the lambda.
  const Stmt *Cur = Outermost;
  for (const Stmt *Par = PM.getParent(Cur); Par; Cur = Par, Par = PM.getParent(Par))
    if (isa<CompoundStmt>(Par))
      break;
  P.Anchor = Cur;
  return P;
}

std::optional<Edit> captureByCopy(const LambdaExpr *LE, llvm::StringRef Name,
                                  const SourceManager &SM) {
  if (LE->getCaptureDefault() == LCD_ByCopy)
    return Edit{0, 0, ""};
  SourceLocation Close = LE->getIntroducerRange().getEnd();
  if (Close.isMacroID() || LE->getIntroducerRange().getBegin().isMacroID())
    return std::nullopt;
  bool Empty = LE->getCaptureDefault() == LCD_None && LE->explicit_capture_begin() == LE->explicit_capture_end();
  return Edit{SM.getFileOffset(Close), 0, (Empty ? "" : ", ") + Name.str()};
}

} // namespace ampmigrate
