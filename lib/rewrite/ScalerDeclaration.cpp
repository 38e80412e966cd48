// The scaler's declaration in the step's function: its type and constructor options.
#include "ScalerTypePlanner.h"
#include "ScalerSpellings.h"
#include "ampmigrate/IncludeInsertion.h"
#include "clang/Tooling/Transformer/SourceCode.h"
#include <cmath>

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

/// `pow(a, b)` / `std::pow(a, b)` / `exp2(b)` of constants, which clang does not evaluate as a
/// constant expression: scaler option defaults are written so (`init_scale = pow(2.0, 16)`).
std::optional<double> foldedPower(const Expr *E, const ASTContext &Ctx) {
  const auto *CE = dyn_cast<CallExpr>(E->IgnoreParenImpCasts());
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || !F->getIdentifier())
    return std::nullopt;
  llvm::SmallVector<double, 2> Args;
  for (const Expr *A : CE->arguments()) {
    Expr::EvalResult R;
    if (A->isValueDependent() || !A->EvaluateAsRValue(R, Ctx))
      return std::nullopt;
    if (R.Val.isFloat())
      Args.push_back(R.Val.getFloat().convertToDouble());
    else if (R.Val.isInt())
      Args.push_back(static_cast<double>(R.Val.getInt().getExtValue()));
    else
      return std::nullopt;
  }
  llvm::StringRef Name = F->getName();
  if (Args.size() == 2 && (Name == "pow" || Name == "powf" || Name == "powl"))
    return std::pow(Args[0], Args[1]);
  if (Args.size() == 1 && (Name == "exp2" || Name == "exp2f" || Name == "exp2l"))
    return std::exp2(Args[0]);
  return std::nullopt;
}

/// The options class a constructor parameter takes (by value or const reference): a class that
/// is not a tensor; null otherwise.
const CXXRecordDecl *optionsClassOf(const ParmVarDecl *P, const RuleSet &Rules) {
  QualType T = P->getType().getNonReferenceType().getUnqualifiedType();
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  if (!RD || !(RD = RD->getDefinition()) || isTensorType(T, Rules))
    return nullptr;
  return RD;
}

/// The setter calls of an options object built in the argument itself, `Opts{}.a(x).b(y)` or
/// `Opts().a(x)` (a default-constructed object, then one-argument methods of its class), in the
/// order written; false for anything else (a variable, a factory, a constructor with arguments).
bool setterChain(const Expr *E, const CXXRecordDecl *RD, std::vector<const CXXMemberCallExpr *> &Calls) {
  while (E) {
    for (const Expr *Prev = nullptr; Prev != E;) {
      Prev = E;
      E = E->IgnoreParens()->IgnoreImplicit();
    }
    if (const auto *Cast = dyn_cast<CXXFunctionalCastExpr>(E)) {
      E = Cast->getSubExpr();
      continue;
    }
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *M = MC->getMethodDecl();
      if (!M || M->getParent()->getCanonicalDecl() != RD->getCanonicalDecl() || MC->getNumArgs() != 1)
        return false;
      Calls.insert(Calls.begin(), MC);
      E = MC->getImplicitObjectArgument();
      continue;
    }
    if (const auto *CE = dyn_cast<CXXConstructExpr>(E)) {
      if (CE->getConstructor()->isCopyOrMoveConstructor() && CE->getNumArgs() == 1) {
        E = CE->getArg(0);
        continue;
      }
      return llvm::all_of(CE->arguments(), [](const Expr *A) { return isa<CXXDefaultArgExpr>(A); });
    }
    if (const auto *IL = dyn_cast<InitListExpr>(E)) // an aggregate: each member its default
      return llvm::all_of(IL->inits(), [](const Expr *I) { return isa<CXXDefaultInitExpr, ImplicitValueInitExpr>(I); });
    return isa<ImplicitValueInitExpr, CXXScalarValueInitExpr>(E);
  }
  return false;
}

} // namespace

bool ScalerTypePlanner::mapOptionsObject(const CXXRecordDecl *Options, const Expr *Arg,
                                         SourceLocation Loc, std::string &Out) {
  auto setterOf = [&](llvm::StringRef Name) -> std::string {
    for (const auto &[Opt, Names] : Rules.ScalerOptionParams)
      if (Name == Opt || llvm::is_contained(Names, Name))
        return Opt;
    return "";
  };
  std::vector<const CXXMemberCallExpr *> Calls;
  const Expr *Built = Arg;
  if (const auto *Default = dyn_cast<CXXDefaultArgExpr>(Arg))
    Built = Default->getExpr();
  if (!setterChain(Built, Options, Calls)) {
    block(Loc, "the scaler's options object `" + C.text(Arg->getSourceRange()) + "` of class '" +
                   Options->getNameAsString() + "' is not built in the argument by its setters "
                   "(`" + Options->getNameAsString() + "{}.init_scale(x)...`); write it so or "
                   "migrate by hand");
    return false;
  }
  std::set<std::string> Set;
  std::string Written;
  for (const CXXMemberCallExpr *MC : Calls) {
    std::string Setter = setterOf(MC->getMethodDecl()->getName());
    if (Setter.empty()) {
      block(MC->getExprLoc(), "the scaler option '" + MC->getMethodDecl()->getNameAsString() +
                                  "' of '" + Options->getNameAsString() + "' has no known meaning; "
                                  "map it in a rule file (scaler.options)");
      return false;
    }
    Set.insert(Setter);
    Written += "." + Setter + "(" + C.text(MC->getArg(0)->getSourceRange()) + ")";
  }
  // The options class's own defaults (`TORCH_ARG(double, init_scale) = pow(2.0, 16)` is a field
  // `init_scale_` with that initialiser), where they differ from the target's.
  for (const FieldDecl *Field : Options->fields()) {
    llvm::StringRef Name = Field->getName();
    std::string Setter = setterOf(Name.ends_with("_") ? Name.drop_back() : Name);
    if (Setter.empty() || Set.count(Setter) || !Field->hasInClassInitializer())
      continue;
    std::optional<std::string> Value = differingDefault(Setter, Field->getInClassInitializer());
    if (!Value)
      continue;
    if (Value->empty()) {
      block(Loc, "the default of the scaler option '" + Name.str() + "' of '" +
                     Options->getNameAsString() + "' is not a constant; set it in the argument "
                     "or migrate by hand");
      return false;
    }
    Out += "." + Setter + "(" + *Value + ")";
  }
  Out += Written;
  return true;
}

const DeclStmt *ScalerTypePlanner::declStmtOf(const VarDecl *VD) const {
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

std::optional<std::string> ScalerTypePlanner::differingDefault(const std::string &Setter,
                                                          const Expr *Default) const {
  // The target's defaults (amp::GradScalerOptions, as torch.amp.GradScaler's).
  static const std::map<std::string, double> TargetDefaults = {
      {"init_scale", 65536.0}, {"growth_factor", 2.0}, {"backoff_factor", 0.5},
      {"growth_interval", 2000.0}, {"enabled", 1.0}};
  auto It = TargetDefaults.find(Setter);
  if (It == TargetDefaults.end())
    return std::nullopt;
  Expr::EvalResult R;
  double V;
  bool Integral = false;
  if (!Default || Default->isValueDependent())
    return std::string();
  if (!Default->EvaluateAsRValue(R, Ctx)) {
    std::optional<double> Folded = foldedPower(Default, Ctx); // `pow(2.0, 16)`
    if (!Folded)
      return std::string();
    V = *Folded;
  } else if (R.Val.isFloat()) {
    V = R.Val.getFloat().convertToDouble();
  } else if (R.Val.isInt()) {
    V = static_cast<double>(R.Val.getInt().getExtValue());
    Integral = true;
  } else {
    return std::string();
  }
  if (V == It->second)
    return std::nullopt;
  if (Setter == "enabled")
    return std::string(V != 0 ? "true" : "false");
  if (Setter == "growth_interval" || Integral)
    return std::to_string(static_cast<long long>(V));
  char Buf[64];
  std::snprintf(Buf, sizeof Buf, "%.17g", V);
  std::string Text = Buf;
  if (Text.find_first_of(".eEn") == std::string::npos)
    Text += ".0";
  return Text;
}

bool ScalerTypePlanner::mapOptions(const CXXConstructorDecl *Ctor, llvm::ArrayRef<const Expr *> Args,
                             SourceLocation Loc, std::string &Out) {
  Out = Tgt.ScalerOptions + "()";
  for (unsigned I = 0; I < Args.size(); ++I) {
    std::string Param = I < Ctor->getNumParams() ? Ctor->getParamDecl(I)->getNameAsString() : "";
    std::string Setter;
    for (const auto &[Opt, Names] : Rules.ScalerOptionParams)
      if (llvm::is_contained(Names, Param))
        Setter = Opt;
    if (const CXXRecordDecl *Options = I < Ctor->getNumParams() && Setter.empty()
                                           ? optionsClassOf(Ctor->getParamDecl(I), Rules)
                                           : nullptr) {
      if (!mapOptionsObject(Options, Args[I], Loc, Out))
        return false;
      continue;
    }
    if (const auto *Default = dyn_cast<CXXDefaultArgExpr>(Args[I])) {
      // The class's own default, where it differs from the target's: written out, or the
      // migrated scaler would run with other settings (a port defaulting growth_interval to 10).
      if (Setter.empty())
        continue;
      std::optional<std::string> Value = differingDefault(Setter, Default->getExpr());
      if (!Value)
        continue;
      if (Value->empty()) {
        block(Loc, "the scaler constructor's default for '" + Param + "' is not a constant; write "
                   "the argument out or migrate by hand");
        return false;
      }
      Out += "." + Setter + "(" + *Value + ")";
      continue;
    }
    if (Setter.empty()) {
      block(Loc, "scaler constructor argument " + std::to_string(I + 1) +
                     (Param.empty() ? "" : " ('" + Param + "')") +
                     " has no known meaning; map it in a rule file (scaler.options)");
      return false;
    }
    Out += "." + Setter + "(" + C.text(Args[I]->getSourceRange()) + ")";
  }
  // make_shared / emplace pass the written arguments only: the rest take the class's defaults.
  for (unsigned I = Args.size(); I < Ctor->getNumParams(); ++I) {
    const ParmVarDecl *P = Ctor->getParamDecl(I);
    if (!P->hasDefaultArg() || P->hasUnparsedDefaultArg() || P->hasUninstantiatedDefaultArg())
      continue;
    if (const CXXRecordDecl *Options = optionsClassOf(P, Rules)) {
      if (!mapOptionsObject(Options, P->getDefaultArg(), Loc, Out))
        return false;
      continue;
    }
    std::string Setter;
    for (const auto &[Opt, Names] : Rules.ScalerOptionParams)
      if (llvm::is_contained(Names, P->getNameAsString()))
        Setter = Opt;
    if (Setter.empty())
      continue;
    std::optional<std::string> Value = differingDefault(Setter, P->getDefaultArg());
    if (!Value)
      continue;
    if (Value->empty()) {
      block(Loc, "the scaler constructor's default for '" + P->getNameAsString() +
                     "' is not a constant; write the argument out or migrate by hand");
      return false;
    }
    Out += "." + Setter + "(" + *Value + ")";
  }
  return true;
}

ConcernPlan<ScalerTypePlan> planScalerType(const StepContext &C, const StepFacts &F) {
  ConcernPlan<ScalerTypePlan> P;
  ScalerTypePlanner(C, F, P.Blockers, P.Plan).checkScalerDecl();
  return P;
}

void ScalerTypePlanner::checkScalerDecl() {
  const ValueDecl *D = T.Scaler.Decl;
  if (!D || !T.ScalerClass) {
    block(C.stepLoc(), "the scaler object could not be identified");
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
  // A local of the step's function from here on. Its class may be a subclass of the scaler class
  // that only adds constructors (`OptionsScaler(const Options &o) : GradScaler(o.init_scale_, ...)`):
  // that class is what the declaration spells and constructs, and what changes type.
  if (const CXXRecordDecl *Own = VD->getType()->getAsCXXRecordDecl();
      Own && (Own = Own->getDefinition()) && Own->getCanonicalDecl() != Class && Own->getNumBases() == 1 &&
      Own->bases_begin()->getType()->getAsCXXRecordDecl() &&
      Own->bases_begin()->getType()->getAsCXXRecordDecl()->getCanonicalDecl() == Class && Own->field_empty() &&
      llvm::all_of(Own->methods(), [](const CXXMethodDecl *M) { return isa<CXXConstructorDecl>(M) || M->isImplicit(); }))
    Class = Own->getCanonicalDecl();
  if (SM.getFileID(SM.getExpansionLoc(D->getLocation())) != File) {
    block(D->getLocation(), "the scaler is declared in another file");
    return;
  }
  // Every use of the scaler must be one of the calls this plan rewrites.
  RefCollector RC(D);
  RC.walk(FA.Function->getBody());
  std::vector<const Expr *> Unknown;
  for (const Expr *R : RC.Refs) {
    bool IsCall = llvm::any_of(FA.ScalerCalls, [&](const ScalerCall &SC) {
      return SC.Scaler.Decl == D && C.within(R, SC.Call);
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
      Out.Siblings.push_back(OV);
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
    if (!C.fileRange(R, B, E)) {
      block(D->getLocation(), "the scaler's type is spelled inside a macro");
      return;
    }
    if (Seen.insert(B).second)
      Out.Edits.replace({B, E - B, Tgt.ScalerClass});
  }
  auto EditConstruction = [&](const Expr *Construction) {
    std::string Opts;
    SourceRange Written;
    if (!constructionOptions(Construction, Class, Opts, Written))
      return false;
    if (Written.isInvalid())
      return true;
    unsigned B, E;
    if (!C.fileRange(Written, B, E)) {
      block(Construction->getBeginLoc(), "the scaler's constructor arguments are inside a macro");
      return false;
    }
    Out.Edits.replace({B, E - B, Opts});
    return true;
  };
  for (const CXXConstructExpr *CE : CF.Constructs)
    if (!EditConstruction(CE))
      return;
  for (const CallExpr *MC : CF.MakeCalls)
    if (!EditConstruction(MC))
      return;
}

bool ScalerTypePlanner::constructionOptions(const Expr *Construction, const CXXRecordDecl *Class,
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
    Ctor = CE->getConstructor();
  } else {
    const auto *MC = cast<CallExpr>(Construction);
    Args.append(MC->arg_begin(), MC->arg_end());
    NumWritten = Args.size();
    for (const CXXConstructorDecl *C : Class->getDefinition()->ctors())
      if (!C->isCopyOrMoveConstructor() && C->getNumParams() >= NumWritten &&
          C->getMinRequiredArguments() <= NumWritten) {
        if (Ctor) {
          block(MC->getBeginLoc(), "several scaler constructors fit these arguments");
          return false;
        }
        Ctor = C;
      }
    if (!Ctor && !NumWritten)
      return true; // the implicit default constructor: no defaults of its own
    if (!Ctor) {
      block(MC->getBeginLoc(), "no scaler constructor fits these arguments");
      return false;
    }
  }
  if (!mapOptions(Ctor, Args, Construction->getBeginLoc(), Opts))
    return false;
  if (!NumWritten) {
    if (Opts != Tgt.ScalerOptions + "()") {
      block(Construction->getBeginLoc(),
            "the scaler is constructed with its class's defaults, which differ from " +
                Tgt.ScalerClass + "'s; write them out (" + Opts + ") or migrate by hand");
      return false;
    }
    Opts.clear();
    return true;
  }
  Written = SourceRange(Args.front()->getBeginLoc(), Args[NumWritten - 1]->getEndLoc());
  return true;
}

bool ScalerTypePlanner::planEditAnywhere(SourceRange R, const std::string &Text) {
  CharSourceRange CR = CharSourceRange::getTokenRange(R);
  if (R.getBegin().isMacroID() || R.getEnd().isMacroID()) {
    if (!SM.isMacroArgExpansion(R.getBegin()) || !SM.isMacroArgExpansion(R.getEnd()))
      return false;
    CR = CharSourceRange::getTokenRange(SM.getSpellingLoc(R.getBegin()), SM.getSpellingLoc(R.getEnd()));
  }
  std::optional<CharSourceRange> FR = tooling::getFileRangeForEdit(CR, Ctx, /*IncludeMacroExpansion=*/true);
  if (!FR || !C.whyNotEditable(FR->getBegin()).empty())
    return false;
  CR = *FR;
  FileID F = SM.getFileID(CR.getBegin());
  unsigned B = SM.getFileOffset(CR.getBegin()), E = SM.getFileOffset(CR.getEnd());
  if (F == File) {
    Out.Edits.replace({B, E - B, Text});
    return true;
  }
  Out.Edits.Elsewhere.emplace_back(SM, CR, Text, LO);
  OtherFilesEdited.insert(F);
  return true;
}

void ScalerTypePlanner::includeIn(FileID F) {
  auto FE = SM.getFileEntryRefForID(F);
  if (!FE)
    return;
  if (auto Ins = planIncludeInsertion(SM.getBufferData(F), Tgt.Include, FE->getName()))
    Out.Edits.Elsewhere.emplace_back(FE->getName(), Ins->Offset, 0, Ins->Text);
}

} // namespace ampmigrate
