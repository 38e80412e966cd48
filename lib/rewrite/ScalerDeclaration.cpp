// The scaler's declaration in the step's function: its type and constructor options.
#include "StepPlanner.h"
#include "ScalerSpellings.h"

using namespace clang;

namespace ampmigrate {

namespace {

class RefCollector : public AnalysedBodyVisitor<RefCollector> {
public:
  const ValueDecl *Target;
  std::vector<const Expr *> Refs;
  explicit RefCollector(const ValueDecl *T) : Target(T) {}
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    if (E->getDecl() == Target)
      Refs.push_back(E);
    return true;
  }
  bool VisitMemberExpr(MemberExpr *E) {
    if (E->getMemberDecl() == Target)
      Refs.push_back(E);
    return true;
  }
};

} // namespace

bool StepPlanner::mapOptions(const CXXConstructorDecl *Ctor, llvm::ArrayRef<const Expr *> Args,
                             SourceLocation Loc, std::string &Out) {
  Out = Tgt.ScalerOptions + "()";
  for (unsigned I = 0; I < Args.size(); ++I) {
    if (isa<CXXDefaultArgExpr>(Args[I]))
      continue;
    std::string Param = I < Ctor->getNumParams() ? Ctor->getParamDecl(I)->getNameAsString() : "";
    std::string Setter;
    for (const auto &[Opt, Names] : Rules.ScalerOptionParams)
      if (llvm::is_contained(Names, Param))
        Setter = Opt;
    if (Setter.empty()) {
      block(Loc, "scaler constructor argument " + std::to_string(I + 1) +
                     (Param.empty() ? "" : " ('" + Param + "')") +
                     " has no known meaning; map it in a rule file (scaler.options)");
      return false;
    }
    Out += "." + Setter + "(" + text(Args[I]->getSourceRange()) + ")";
  }
  return true;
}

void StepPlanner::planScalerDecl() {
  const ValueDecl *D = T.Scaler.Decl;
  if (!D || !T.ScalerClass) {
    block(stepLoc(), "the scaler object could not be identified");
    return;
  }
  const CXXRecordDecl *Class = T.ScalerClass->getCanonicalDecl();
  if (qualifiedName(Class) == StringRef(Tgt.ScalerClass))
    return;
  const auto *VD = dyn_cast<VarDecl>(D);
  if (!VD || isa<ParmVarDecl>(VD) || !VD->isLocalVarDecl()) {
    // A parameter, a member, a global: the object crosses function (and file) boundaries.
    planScalerFlow(Class);
    return;
  }
  // A local of the step's function from here on.
  if (SM.getFileID(SM.getExpansionLoc(D->getLocation())) != File) {
    block(D->getLocation(), "the scaler is declared in another file");
    return;
  }
  // Every use of the scaler must be one of the calls this plan rewrites.
  RefCollector RC(D);
  RC.TraverseStmt(const_cast<Stmt *>(FA.Function->getBody()));
  std::vector<const Expr *> Unknown;
  for (const Expr *R : RC.Refs) {
    bool IsCall = llvm::any_of(FA.ScalerCalls, [&](const ScalerCall &C) {
      return C.Scaler.Decl == D && within(R, C.Call);
    });
    if (!IsCall)
      Unknown.push_back(R);
  }
  if (!Unknown.empty()) {
    // Passed on (to a function, into another holder): follow it through the translation unit.
    planScalerFlow(Class);
    return;
  }
  // Its type, wherever it is spelled in the declaration.
  TypeLocFinder TF(Class);
  TF.TraverseDecl(const_cast<VarDecl *>(VD));
  ConstructFinder CF(Class);
  if (VD->getInit())
    CF.TraverseStmt(const_cast<Expr *>(VD->getInit()));
  if (TF.Ranges.empty() && CF.Constructs.empty()) {
    block(D->getLocation(), "the scaler's type is not spelled in its declaration (auto from a "
                            "function call?); change it by hand");
    return;
  }
  std::set<unsigned> Seen;
  for (SourceRange R : TF.Ranges) {
    unsigned B, E;
    if (!fileRange(R, B, E)) {
      block(D->getLocation(), "the scaler's type is spelled inside a macro");
      return;
    }
    if (Seen.insert(B).second)
      Edits.push_back({B, E - B, Tgt.ScalerClass});
  }
  for (const CXXConstructExpr *CE : CF.Constructs) {
    unsigned Written = 0;
    for (const Expr *A : CE->arguments())
      if (!isa<CXXDefaultArgExpr>(A))
        ++Written;
    if (!Written)
      continue;
    std::string Opts;
    llvm::SmallVector<const Expr *, 6> Args(CE->arguments());
    if (!mapOptions(CE->getConstructor(), Args, CE->getBeginLoc(), Opts))
      return;
    unsigned B, E;
    if (!fileRange(SourceRange(CE->getArg(0)->getBeginLoc(), CE->getArg(Written - 1)->getEndLoc()), B, E)) {
      block(CE->getBeginLoc(), "the scaler's constructor arguments are inside a macro");
      return;
    }
    Edits.push_back({B, E - B, Opts});
  }
  for (const CallExpr *MC : CF.MakeCalls) {
    if (MC->getNumArgs() == 0)
      continue;
    const CXXConstructorDecl *Ctor = nullptr;
    for (const CXXConstructorDecl *C : Class->getDefinition()->ctors())
      if (!C->isCopyOrMoveConstructor() && C->getNumParams() >= MC->getNumArgs() &&
          C->getMinRequiredArguments() <= MC->getNumArgs()) {
        if (Ctor) {
          block(MC->getBeginLoc(), "several scaler constructors fit these arguments");
          return;
        }
        Ctor = C;
      }
    if (!Ctor) {
      block(MC->getBeginLoc(), "no scaler constructor fits these arguments");
      return;
    }
    std::string Opts;
    llvm::SmallVector<const Expr *, 6> Args(MC->arguments());
    if (!mapOptions(Ctor, Args, MC->getBeginLoc(), Opts))
      return;
    unsigned B, E;
    if (!fileRange(SourceRange(MC->getArg(0)->getBeginLoc(), MC->getArg(MC->getNumArgs() - 1)->getEndLoc()), B, E)) {
      block(MC->getBeginLoc(), "the scaler's constructor arguments are inside a macro");
      return;
    }
    Edits.push_back({B, E - B, Opts});
  }
}

} // namespace ampmigrate
