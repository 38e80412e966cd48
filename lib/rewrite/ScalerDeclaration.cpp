// The scaler's declaration in the step's function: its type and constructor options.
#include "StepPlanner.h"
#include "ScalerSpellings.h"

using namespace clang;

namespace ampmigrate {

namespace {

class RefCollector : public AnalysedBodyVisitor {
public:
  const ValueDecl *Target;
  std::vector<const Expr *> Refs;
  explicit RefCollector(const ValueDecl *T) : Target(T) {}
  bool visitStmt(Stmt *S) override {
    if (const auto *E = dyn_cast<DeclRefExpr>(S); E && E->getDecl() == Target)
      Refs.push_back(E);
    else if (const auto *E = dyn_cast<MemberExpr>(S); E && E->getMemberDecl() == Target)
      Refs.push_back(E);
    return true;
  }
};

} // namespace

const DeclStmt *StepPlanner::declStmtOf(const VarDecl *VD) const {
  class Finder : public AstVisitor {
  public:
    const VarDecl *VD;
    const DeclStmt *Found = nullptr;
    bool visitStmt(Stmt *S) override {
      if (const auto *DS = dyn_cast<DeclStmt>(S); DS && !Found)
        for (const Decl *D : DS->decls())
          if (D == VD)
            Found = DS;
      return true;
    }
  } F;
  F.VD = VD;
  F.walk(FA.Function->getBody());
  return F.Found;
}

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

void StepPlanner::checkScalerDecl() {
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
    checkScalerFlow(Class);
    return;
  }
  // A local of the step's function from here on.
  if (SM.getFileID(SM.getExpansionLoc(D->getLocation())) != File) {
    block(D->getLocation(), "the scaler is declared in another file");
    return;
  }
  // Every use of the scaler must be one of the calls this plan rewrites.
  RefCollector RC(D);
  RC.walk(FA.Function->getBody());
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
    checkScalerFlow(Class);
    return;
  }
  // Declared in one statement with others (`GradScaler scaler_g(1024.0), scaler_d(1024.0);`): the
  // type is spelled once for all of them, so all of them change type; each must be the scaler of
  // a step migrated with this one (planMigrations checks, and blocks them together).
  std::vector<const VarDecl *> Declared{VD};
  if (const DeclStmt *DS = declStmtOf(VD); DS && !DS->isSingleDecl()) {
    for (const Decl *Other : DS->decls()) {
      const auto *OV = dyn_cast<VarDecl>(Other);
      if (OV == VD)
        continue;
      const CXXRecordDecl *OC = OV ? OV->getType()->getAsCXXRecordDecl() : nullptr;
      if (!OC || OC->getCanonicalDecl() != Class) {
        block(D->getLocation(), "the scaler is declared in one statement with `" +
                                    (isa<NamedDecl>(Other) ? cast<NamedDecl>(Other)->getNameAsString()
                                                           : std::string("another declaration")) +
                                    "`, which is not a scaler of its type; declare the scaler in a "
                                    "statement of its own");
        return;
      }
      Declared.push_back(OV);
      ScalerSiblings.push_back(OV);
    }
  }
  // Its type, wherever it is spelled in the declaration.
  TypeLocFinder TF(Class);
  TF.walk(VD);
  ConstructFinder CF(Class);
  for (const VarDecl *V : Declared)
    if (V->getInit())
      CF.walk(V->getInit());
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
      Desc.ScalerType.replace({B, E - B, Tgt.ScalerClass});
  }
  auto EditConstruction = [&](const Expr *Construction) {
    std::string Opts;
    SourceRange Written;
    if (!constructionOptions(Construction, Class, Opts, Written))
      return false;
    if (Written.isInvalid())
      return true;
    unsigned B, E;
    if (!fileRange(Written, B, E)) {
      block(Construction->getBeginLoc(), "the scaler's constructor arguments are inside a macro");
      return false;
    }
    Desc.ScalerType.replace({B, E - B, Opts});
    return true;
  };
  for (const CXXConstructExpr *CE : CF.Constructs)
    if (!EditConstruction(CE))
      return;
  for (const CallExpr *MC : CF.MakeCalls)
    if (!EditConstruction(MC))
      return;
}

bool StepPlanner::constructionOptions(const Expr *Construction, const CXXRecordDecl *Class,
                                      std::string &Opts, SourceRange &Written) {
  Written = SourceRange();
  llvm::SmallVector<const Expr *, 6> Args;
  const CXXConstructorDecl *Ctor = nullptr;
  unsigned NumWritten = 0;
  if (const auto *CE = dyn_cast<CXXConstructExpr>(Construction)) {
    Args.append(CE->arg_begin(), CE->arg_end());
    for (const Expr *A : Args)
      if (!isa<CXXDefaultArgExpr>(A))
        ++NumWritten;
    if (!NumWritten)
      return true;
    Ctor = CE->getConstructor();
  } else {
    const auto *MC = cast<CallExpr>(Construction);
    Args.append(MC->arg_begin(), MC->arg_end());
    NumWritten = Args.size();
    if (!NumWritten)
      return true;
    for (const CXXConstructorDecl *C : Class->getDefinition()->ctors())
      if (!C->isCopyOrMoveConstructor() && C->getNumParams() >= NumWritten &&
          C->getMinRequiredArguments() <= NumWritten) {
        if (Ctor) {
          block(MC->getBeginLoc(), "several scaler constructors fit these arguments");
          return false;
        }
        Ctor = C;
      }
    if (!Ctor) {
      block(MC->getBeginLoc(), "no scaler constructor fits these arguments");
      return false;
    }
  }
  if (!mapOptions(Ctor, Args, Construction->getBeginLoc(), Opts))
    return false;
  Written = SourceRange(Args.front()->getBeginLoc(), Args[NumWritten - 1]->getEndLoc());
  return true;
}

} // namespace ampmigrate
