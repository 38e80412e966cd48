// The analysis: resolves calls by declaration, builds autocast scopes, scaler calls and the other
// elements of each function, and groups them into training steps.
#include "ampmigrate/StepFinder.h"
#include "ampmigrate/GenericLambdas.h"

#include "clang/AST/ParentMap.h"
#include "clang/Basic/SourceManager.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <algorithm>
#include <map>

using namespace clang;
namespace ampmigrate {

std::string qualifiedName(const NamedDecl *D) {
  if (!D)
    return "";
  std::string S;
  llvm::raw_string_ostream OS(S);
  PrintingPolicy P(D->getASTContext().getLangOpts());
  P.SuppressInlineNamespace = true;
  P.SuppressUnwrittenScope = true;
  D->printQualifiedName(OS, P);
  return S;
}

static bool nameIn(const NamedDecl *D, const std::vector<std::string> &Names) {
  return !Names.empty() && llvm::is_contained(Names, qualifiedName(D));
}

bool isDerivedFromAny(const CXXRecordDecl *RD, const std::vector<std::string> &Names) {
  if (!RD)
    return false;
  RD = RD->getDefinition() ? RD->getDefinition() : RD;
  if (nameIn(RD, Names))
    return true;
  if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(RD))
    if (nameIn(Spec->getSpecializedTemplate(), Names))
      return true;
  if (!RD->hasDefinition())
    return false;
  for (const CXXBaseSpecifier &B : RD->bases()) {
    QualType BT = B.getType();
    const CXXRecordDecl *Base = BT->getAsCXXRecordDecl();
    if (!Base) {
      // A dependent base such as ModuleHolder<Impl> named through a template.
      if (const auto *TST = BT->getAs<TemplateSpecializationType>())
        if (const TemplateDecl *TD = TST->getTemplateName().getAsTemplateDecl())
          if (nameIn(TD, Names))
            return true;
      continue;
    }
    if (isDerivedFromAny(Base, Names))
      return true;
  }
  return false;
}

bool isTensorType(QualType T, const RuleSet &Rules) {
  T = T.getNonReferenceType().getCanonicalType();
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  return RD && isDerivedFromAny(RD, Rules.TensorClasses);
}

/// Tensor, or a tuple/pair/vector whose elements are tensors.
static bool returnsTensors(QualType T, const RuleSet &Rules) {
  if (isTensorType(T, Rules))
    return true;
  T = T.getNonReferenceType().getCanonicalType();
  const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(T->getAsCXXRecordDecl());
  if (!Spec)
    return false;
  std::string Name = qualifiedName(Spec->getSpecializedTemplate());
  if (Name != "std::tuple" && Name != "std::pair" && Name != "std::vector")
    return false;
  for (const TemplateArgument &A : Spec->getTemplateArgs().asArray()) {
    if (A.getKind() == TemplateArgument::Pack) {
      for (const TemplateArgument &P : A.pack_elements())
        if (P.getKind() == TemplateArgument::Type && !isTensorType(P.getAsType(), Rules))
          return false;
      continue;
    }
    if (A.getKind() != TemplateArgument::Type)
      continue;
    if (Name == "std::vector" && qualifiedName(A.getAsType()->getAsCXXRecordDecl()) == "std::allocator")
      continue;
    if (!isTensorType(A.getAsType(), Rules))
      return false;
  }
  return true;
}

static bool methodNamed(const CXXMethodDecl *M, const std::vector<std::string> &Names) {
  return M && M->getIdentifier() && llvm::is_contained(Names, M->getName().str());
}

/// `scale(Tensor) -> Tensor`, also its overload for a list of tensors.
static bool scalesTensors(const FunctionDecl *M, const RuleSet &Rules) {
  return M->getNumParams() >= 1 && returnsTensors(M->getReturnType(), Rules) &&
         returnsTensors(M->getParamDecl(0)->getType(), Rules);
}

/// `template <typename T> T scale(T const&)` or `auto scale(T const&)`: what the pattern returns
/// for a tensor is known only from an instantiation; without one, the pattern's shape (it returns
/// its argument's type, or a type deduced from its body) is a candidate for the class's other
/// methods to confirm.
enum class TemplateScale { No, Candidate, Yes };
static TemplateScale templateScale(const FunctionTemplateDecl *FT, const RuleSet &Rules) {
  const FunctionDecl *Pattern = FT->getTemplatedDecl();
  if (Pattern->getNumParams() < 1)
    return TemplateScale::No;
  for (const FunctionDecl *Spec : FT->specializations())
    if (scalesTensors(Spec, Rules))
      return TemplateScale::Yes;
  QualType Param = Pattern->getParamDecl(0)->getType().getNonReferenceType().getUnqualifiedType();
  QualType Ret = Pattern->getReturnType().getNonReferenceType().getUnqualifiedType();
  if (!Param->isTemplateTypeParmType())
    return TemplateScale::No;
  bool ReturnsItsType = Ret.getCanonicalType() == Param.getCanonicalType();
  return ReturnsItsType || Ret->getContainedAutoType() ? TemplateScale::Candidate : TemplateScale::No;
}

bool isScalerClass(const CXXRecordDecl *RD, const RuleSet &Rules) {
  if (!RD)
    return false;
  if (const CXXRecordDecl *Def = RD->getDefinition())
    RD = Def;
  else
    return nameIn(RD, Rules.ScalerClasses);
  if (isDerivedFromAny(RD, Rules.ScalerClasses))
    return true;
  // Shape: a scale(Tensor) -> Tensor method and a step method taking an argument.
  bool HasScale = false, HasScaleCandidate = false, HasStep = false, HasUnscale = false,
       HasUpdate = false;
  for (const CXXMethodDecl *M : RD->methods()) {
    if (methodNamed(M, Rules.ScalerMethods.Scale) && scalesTensors(M, Rules))
      HasScale = true;
    if (methodNamed(M, Rules.ScalerMethods.Step) && M->getNumParams() >= 1)
      HasStep = true;
    if (methodNamed(M, Rules.ScalerMethods.Unscale) && M->getNumParams() >= 1)
      HasUnscale = true;
    if (methodNamed(M, Rules.ScalerMethods.Update))
      HasUpdate = true;
  }
  // Templated methods (step(OptimizerT&), the common port's `template <typename T> auto
  // scale(T const&)`) count too.
  for (const Decl *D : RD->decls()) {
    const auto *FT = dyn_cast<FunctionTemplateDecl>(D);
    const auto *M = FT ? dyn_cast<CXXMethodDecl>(FT->getTemplatedDecl()) : nullptr;
    if (!M)
      continue;
    if (methodNamed(M, Rules.ScalerMethods.Step) && M->getNumParams() >= 1)
      HasStep = true;
    if (methodNamed(M, Rules.ScalerMethods.Unscale) && M->getNumParams() >= 1)
      HasUnscale = true;
    if (methodNamed(M, Rules.ScalerMethods.Scale)) {
      TemplateScale T = templateScale(FT, Rules);
      HasScale |= T == TemplateScale::Yes;
      HasScaleCandidate |= T == TemplateScale::Candidate;
    }
  }
  // A template scale() never instantiated with a tensor in this translation unit: the rest of
  // GradScaler's interface (unscale_ and update beside step) decides.
  if (!HasScale && HasScaleCandidate)
    HasScale = HasUnscale && HasUpdate;
  return HasScale && HasStep;
}

namespace {
/// Finds the autocast calls in a function body (used for guard recognition).
class AutocastCallCollector : public RecursiveASTVisitor<AutocastCallCollector> {
public:
  AutocastCallCollector(const RuleSet &Rules) : Rules(Rules) {}
  bool VisitCallExpr(CallExpr *CE) {
    if (const FunctionDecl *FD = CE->getDirectCallee())
      if (const AutocastFunctionRule *R = Rules.autocastRule(qualifiedName(FD)))
        Found.push_back({CE, R});
    return true;
  }
  const RuleSet &Rules;
  std::vector<std::pair<const CallExpr *, const AutocastFunctionRule *>> Found;
};
} // namespace

static std::optional<bool> boolConstant(const Expr *E, const ASTContext &Ctx) {
  if (!E || E->isValueDependent())
    return std::nullopt;
  bool V;
  if (E->EvaluateAsBooleanCondition(V, Ctx))
    return V;
  return std::nullopt;
}

bool isAutocastGuardClass(const CXXRecordDecl *RD, const RuleSet &Rules, bool *Disables) {
  if (!RD)
    return false;
  if (nameIn(RD, Rules.Guards)) {
    if (Disables)
      *Disables = false;
    return true;
  }
  RD = RD->getDefinition();
  if (!RD)
    return false;
  for (const CXXConstructorDecl *Ctor : RD->ctors()) {
    const FunctionDecl *Def = nullptr;
    if (!Ctor->hasBody(Def) || !Def->getBody())
      continue;
    AutocastCallCollector C(Rules);
    C.TraverseStmt(const_cast<Stmt *>(Def->getBody()));
    for (auto &[CE, R] : C.Found) {
      if (R->Role != AutocastRole::Enable || R->EnabledArg < 0 ||
          (unsigned)R->EnabledArg >= CE->getNumArgs())
        continue;
      auto V = boolConstant(CE->getArg(R->EnabledArg), RD->getASTContext());
      if (Disables)
        *Disables = V.has_value() && !*V;
      return true;
    }
  }
  return false;
}

std::string StepFinder::textOf(const ASTContext &Ctx, SourceRange R) {
  const SourceManager &SM = Ctx.getSourceManager();
  CharSourceRange CR = Lexer::makeFileCharRange(CharSourceRange::getTokenRange(R), SM, Ctx.getLangOpts());
  if (CR.isInvalid())
    return "";
  return Lexer::getSourceText(CR, SM, Ctx.getLangOpts()).str();
}

StepFinder::StepFinder(ASTContext &Ctx, const RuleSet &Rules,
                       std::function<bool(SourceLocation)> InScope,
                       std::vector<SourceRange> Inactive)
    : Ctx(Ctx), Rules(Rules), InScope(std::move(InScope)), Inactive(std::move(Inactive)) {}

namespace {

const Expr *strip(const Expr *E) {
  while (E) {
    E = E->IgnoreParenImpCasts();
    if (const auto *M = dyn_cast<MaterializeTemporaryExpr>(E))
      E = M->getSubExpr();
    else if (const auto *B = dyn_cast<CXXBindTemporaryExpr>(E))
      E = B->getSubExpr();
    else if (const auto *C = dyn_cast<ExprWithCleanups>(E))
      E = C->getSubExpr();
    else if (const auto *CE = dyn_cast<CXXConstructExpr>(E);
             CE && CE->getNumArgs() == 1 && (CE->getConstructor()->isCopyOrMoveConstructor()))
      E = CE->getArg(0);
    else if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(E))
      E = FC->getSubExpr();
    else
      break;
  }
  return E;
}

/// Resolves `x`, `x.`, `x->`, `*x`, `(*x).`, `this->x`, smart pointers and optionals to the object.
ObjectRef resolveObject(const Expr *E) {
  ObjectRef R;
  E = strip(E);
  for (int Guard = 0; E && Guard < 8; ++Guard) {
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E)) {
      auto Op = OC->getOperator();
      if ((Op == OO_Arrow || Op == OO_Star) && OC->getNumArgs() >= 1) {
        R.ThroughPointer = true;
        E = strip(OC->getArg(0));
        continue;
      }
      break;
    }
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
      // x.get(), x.value(), x.ptr(): smart pointer / optional / module holder accessors.
      if (const auto *MD = MC->getMethodDecl(); MD && MD->getIdentifier() &&
          (MD->getName() == "get" || MD->getName() == "value" || MD->getName() == "ptr") &&
          MC->getNumArgs() == 0) {
        R.ThroughPointer = true;
        E = strip(MC->getImplicitObjectArgument());
        continue;
      }
      break;
    }
    if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->getOpcode() == UO_Deref) {
      R.ThroughPointer = true;
      E = strip(UO->getSubExpr());
      continue;
    }
    if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
      if (isa<VarDecl>(DRE->getDecl()) || isa<FieldDecl>(DRE->getDecl()))
        R.Decl = DRE->getDecl();
      return R;
    }
    if (const auto *ME = dyn_cast<MemberExpr>(E)) {
      if (!isa<FieldDecl>(ME->getMemberDecl()))
        return R;
      if (isa<CXXThisExpr>(strip(ME->getBase()))) {
        R.Decl = ME->getMemberDecl();
        return R;
      }
      // A member of another object held in a variable (`state->scaler`, `cfg.opt`): the member,
      // told apart by the variable it is reached from.
      ObjectRef Owner = resolveObject(ME->getBase());
      if (Owner.Decl && !Owner.Base && isa<VarDecl>(Owner.Decl)) {
        R.Decl = ME->getMemberDecl();
        R.Base = Owner.Decl;
      }
      return R;
    }
    if (isa<CXXThisExpr>(E)) {
      R.IsThis = true;
      return R;
    }
    break;
  }
  return R;
}

} // namespace

/// The `parameters()` call a parameter-list expression names (`model->parameters()`,
/// `opt.parameters()`), through temporaries and copies; null for anything else.
const CXXMemberCallExpr *parametersCall(const Expr *E) {
  E = strip(E);
  // `auto params = model->parameters();` then `clip_grad_norm_(params, ...)`: the local list holds
  // the same tensors.
  if (const auto *DRE = dyn_cast_or_null<DeclRefExpr>(E))
    if (const auto *VD = dyn_cast<VarDecl>(DRE->getDecl());
        VD && VD->isLocalVarDecl() && !isa<ParmVarDecl>(VD) && VD->getInit())
      E = strip(VD->getInit());
  const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(E);
  if (!MC || !MC->getMethodDecl() || !MC->getMethodDecl()->getIdentifier())
    return nullptr;
  StringRef N = MC->getMethodDecl()->getName();
  return N == "parameters" || N == "named_parameters" ? MC : nullptr;
}

/// Whose parameters a parameter-list expression names: the model or optimizer of `x.parameters()`.
ObjectRef parametersOwner(const Expr *E) {
  const CXXMemberCallExpr *MC = parametersCall(E);
  if (!MC)
    return {};
  return resolveObject(MC->getImplicitObjectArgument());
}

bool isGradAccessor(const CallExpr *CE) {
  const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
  const CXXMethodDecl *MD = MC ? MC->getMethodDecl() : nullptr;
  if (!MD || !MD->getIdentifier() || MC->getNumArgs() != 0)
    return false;
  StringRef N = MD->getName();
  if (N != "grad" && N != "mutable_grad")
    return false;
  const CXXRecordDecl *RD = MD->getParent();
  return RD && RD->getIdentifier() && RD->getName().contains("Tensor");
}

namespace {

class BodyCollector : public AnalysedBodyVisitor<BodyCollector> {
public:
  std::vector<const CallExpr *> Calls;
  std::vector<const DeclStmt *> Decls;
  std::vector<const ReturnStmt *> Returns;
  std::vector<const LambdaExpr *> Lambdas;
  std::vector<const CXXThrowExpr *> Throws;
  bool VisitCallExpr(CallExpr *CE) {
    Calls.push_back(CE);
    return true;
  }
  bool VisitDeclStmt(DeclStmt *DS) {
    Decls.push_back(DS);
    return true;
  }
  bool VisitReturnStmt(ReturnStmt *RS) {
    Returns.push_back(RS);
    return true;
  }
  bool VisitLambdaExpr(LambdaExpr *LE) {
    Lambdas.push_back(LE);
    return true;
  }
  bool VisitCXXThrowExpr(CXXThrowExpr *TE) {
    Throws.push_back(TE);
    return true;
  }
};

class FunctionAnalyser {
public:
  FunctionAnalyser(ASTContext &Ctx, const RuleSet &Rules, const FunctionDecl *FD,
                   const std::vector<SourceRange> &Inactive)
      : Ctx(Ctx), SM(Ctx.getSourceManager()), Rules(Rules), FD(FD), Inactive(Inactive),
        PM(FD->getBody()) {
    FA.Function = FD;
    graftLambdaBodies(PM, FD->getBody());
  }

  FunctionAnalysis run() {
    BodyCollector BC;
    BC.TraverseStmt(FD->getBody());
    Lambdas = BC.Lambdas;
    Returns = BC.Returns;
    AllCalls = BC.Calls;
    // Reserve so that pointers between elements stay valid while we fill the vectors.
    FA.AutocastCalls.reserve(BC.Calls.size());
    FA.ScalerCalls.reserve(BC.Calls.size());
    FA.Clips.reserve(BC.Calls.size());
    FA.ZeroGrads.reserve(BC.Calls.size());
    FA.Forwards.reserve(BC.Calls.size());
    FA.Backwards.reserve(BC.Calls.size());
    FA.PlainBackwards.reserve(BC.Calls.size());
    FA.OptimizerSteps.reserve(BC.Calls.size());
    for (const CallExpr *CE : BC.Calls)
      classifyCall(CE);
    for (const DeclStmt *DS : BC.Decls)
      classifyDecl(DS);
    findImplicitBackwards();
    findPlainBackwards();
    buildScopes();
    collectInactive();
    groupSteps();
    groupUnscaledSteps();
    return std::move(FA);
  }

private:
  ASTContext &Ctx;
  const SourceManager &SM;
  const RuleSet &Rules;
  const FunctionDecl *FD;
  const std::vector<SourceRange> &Inactive;
  ParentMap PM;
  FunctionAnalysis FA;
  std::vector<const LambdaExpr *> Lambdas;
  std::vector<const ReturnStmt *> Returns;
  std::vector<const CallExpr *> AllCalls;
  struct PendingGuard {
    const VarDecl *Var;
    const DeclStmt *DS;
    bool Disables;
  };
  std::vector<PendingGuard> Guards;

  unsigned offsetOf(SourceLocation L) const {
    return SM.getFileOffset(SM.getExpansionLoc(L));
  }

  bool inLambda(const Stmt *S) const {
    for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
      if (isa<LambdaExpr>(P))
        return true;
    return false;
  }

  const LambdaExpr *enclosingLambda(const Stmt *S) const {
    for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
      if (const auto *L = dyn_cast<LambdaExpr>(P))
        return L;
    return nullptr;
  }

  /// The statement directly inside a compound statement (or if/loop body) that holds `S`.
  const Stmt *statementOf(const Stmt *S) const {
    const Stmt *Cur = S;
    for (const Stmt *P = PM.getParent(Cur); P; Cur = P, P = PM.getParent(P)) {
      if (isa<CompoundStmt>(P))
        return Cur;
      if (const auto *If = dyn_cast<IfStmt>(P); If && (If->getThen() == Cur || If->getElse() == Cur))
        return Cur;
      if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P)) {
        // The body of a loop is a statement of its own; a call in the header is not.
        if ((isa<ForStmt>(P) && cast<ForStmt>(P)->getBody() == Cur) ||
            (isa<WhileStmt>(P) && cast<WhileStmt>(P)->getBody() == Cur) ||
            (isa<DoStmt>(P) && cast<DoStmt>(P)->getBody() == Cur) ||
            (isa<CXXForRangeStmt>(P) && cast<CXXForRangeStmt>(P)->getBody() == Cur))
          return Cur;
        return nullptr;
      }
    }
    return nullptr;
  }

  /// True when `S` holds nothing but `Call` (after implicit wrappers).
  static bool isOnly(const Stmt *S, const Expr *Call) {
    if (const auto *E = dyn_cast<Expr>(S))
      return strip(E) == Call || E->IgnoreImplicit() == Call;
    return false;
  }

  void classifyCall(const CallExpr *CE) {
    const FunctionDecl *Callee = CE->getDirectCallee();
    if (!Callee)
      return;
    std::string QN = qualifiedName(Callee);
    if (const AutocastFunctionRule *R = Rules.autocastRule(QN)) {
      addAutocastCall(CE, R);
      return;
    }
    if (const ClipFunctionRule *R = Rules.clipRule(QN)) {
      addClip(CE, R);
      return;
    }
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
      classifyMemberCall(MC);
      return;
    }
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(CE); OC && OC->getOperator() == OO_Call)
      classifyCallOperator(OC);
  }

  /// c10::DeviceType's values as the rules name devices: the 2.4+ call with at::kCPU and the
  /// deprecated set_cpu_enabled() are one device; other backends are devices of their own.
  static std::string deviceName(int64_t DeviceType) {
    if (DeviceType == 0)
      return "cpu";
    if (DeviceType == 1)
      return "cuda";
    return "device-type-" + std::to_string(DeviceType);
  }

  void addAutocastCall(const CallExpr *CE, const AutocastFunctionRule *R) {
    AutocastCall A;
    A.Call = CE;
    A.Rule = R;
    A.InLambda = inLambda(CE);
    if (CE->getBeginLoc().isMacroID())
      A.MacroUse = SM.getExpansionLoc(CE->getBeginLoc());
    A.Device = R->Device;
    if (R->DeviceArg >= 0 && (unsigned)R->DeviceArg < CE->getNumArgs()) {
      Expr::EvalResult Res;
      const Expr *Dev = CE->getArg(R->DeviceArg);
      if (!Dev->isValueDependent() && Dev->EvaluateAsRValue(Res, Ctx) && Res.Val.isInt())
        A.Device = deviceName(Res.Val.getInt().getExtValue());
      else
        A.Device = "";
    }
    if (R->Role == AutocastRole::Enable && R->EnabledArg >= 0 &&
        (unsigned)R->EnabledArg < CE->getNumArgs()) {
      const Expr *Arg = CE->getArg(R->EnabledArg);
      if (auto V = boolConstant(Arg, Ctx))
        A.Turns = *V ? AutocastCall::State::On : AutocastCall::State::Off;
      else if (isRestoreArgument(Arg))
        A.Turns = AutocastCall::State::Restore;
      else if (forwardsCallersValue(Arg))
        A.Turns = AutocastCall::State::Forwarded;
      else
        A.Turns = AutocastCall::State::Unknown;
    }
    // The statement that exists only for this call.
    const Stmt *S = statementOf(CE);
    if (CE->getBeginLoc().isMacroID()) {
      // A macro use: the statement is the use's whole expansion (`AMP_ON();` expanding to
      // `{ ...; }`), the largest statement that comes entirely from this one use.
      SourceLocation Use = SM.getExpansionLoc(CE->getBeginLoc());
      const Stmt *Cur = CE;
      for (const Stmt *P = PM.getParent(Cur); P; P = PM.getParent(P)) {
        if (!P->getBeginLoc().isMacroID() || !P->getEndLoc().isMacroID() ||
            SM.getExpansionLoc(P->getBeginLoc()) != Use || SM.getExpansionLoc(P->getEndLoc()) != Use)
          break;
        Cur = P;
      }
      const Stmt *Par = PM.getParent(Cur);
      const auto *ParIf = dyn_cast_or_null<IfStmt>(Par);
      if (Cur != CE && (isa_and_nonnull<CompoundStmt>(Par) || (ParIf && ParIf->getThen() == Cur)))
        S = Cur;
    }
    if (S && (isOnly(S, CE) || macroStatementIsOnlyAutocast(S))) {
      A.Removable = S;
      // `if (c) f();` with no else: the whole if goes.
      const Stmt *Holder = S;
      const Stmt *P = PM.getParent(S);
      auto RealStatements = [](const CompoundStmt *CS) {
        return llvm::count_if(CS->body(), [](const Stmt *X) { return !isa<NullStmt>(X); });
      };
      if (const auto *CS = dyn_cast_or_null<CompoundStmt>(P); CS && RealStatements(CS) == 1) {
        // `if (c) { f(); }`, also `if (c) { AMP_ON(); }`
        Holder = CS;
        P = PM.getParent(CS);
      }
      if (const auto *If = dyn_cast_or_null<IfStmt>(P); If && If->getThen() == Holder &&
          !If->getElse() && !If->getConditionVariable() && !If->getInit()) {
        A.GuardCondition = If->getCond();
        A.Removable = If;
      }
    }
    FA.AutocastCalls.push_back(A);
  }

  /// `{ set_enabled(true); }` from a macro: every call in the statement is an autocast call.
  bool macroStatementIsOnlyAutocast(const Stmt *S) const {
    if (!S->getBeginLoc().isMacroID())
      return false;
    AutocastCallCollector C(Rules);
    C.TraverseStmt(const_cast<Stmt *>(S));
    BodyCollector All;
    All.TraverseStmt(const_cast<Stmt *>(S));
    return !C.Found.empty() && C.Found.size() == All.Calls.size();
  }

  /// `void set_autocast(bool enabled) { at::autocast::set_enabled(enabled); }`: a binding layer
  /// passes its caller's value on and does nothing else, so it opens no scope; the caller's
  /// calls of it are where autocast changes. A function that also does other work with a flag
  /// parameter (`set_enabled(use_amp); forward...`) is a scope.
  bool forwardsCallersValue(const Expr *Arg) const {
    const auto *DRE = dyn_cast<DeclRefExpr>(strip(Arg));
    if (!DRE || !isa<ParmVarDecl>(DRE->getDecl()))
      return false;
    BodyCollector BC;
    BC.TraverseStmt(FD->getBody());
    if (!BC.Lambdas.empty())
      return false;
    auto IsAutocastCall = [&](const Stmt *S) {
      const auto *CE = dyn_cast<CallExpr>(S);
      const FunctionDecl *Callee = CE ? CE->getDirectCallee() : nullptr;
      return Callee && Rules.autocastRule(qualifiedName(Callee));
    };
    // Every call is an autocast call or part of one's arguments (a device converted from a
    // string), or records an error in a handler (FFI entry points wrap the setter in try/catch).
    return llvm::all_of(BC.Calls, [&](const CallExpr *CE) {
      for (const Stmt *P = CE; P; P = PM.getParent(P))
        if (IsAutocastCall(P) || isa<CXXCatchStmt>(P))
          return true;
      return false;
    });
  }

  /// `set_enabled(prev)` where `prev` was read from the autocast state: a restore.
  bool isRestoreArgument(const Expr *Arg) const {
    const auto *DRE = dyn_cast<DeclRefExpr>(strip(Arg));
    if (!DRE)
      return false;
    const auto *VD = dyn_cast<VarDecl>(DRE->getDecl());
    if (!VD || !VD->getInit())
      return false;
    AutocastCallCollector C(Rules);
    C.TraverseStmt(const_cast<Expr *>(VD->getInit()));
    return llvm::any_of(C.Found, [](auto &P) { return P.second->Role == AutocastRole::Query; });
  }

  void addClip(const CallExpr *CE, const ClipFunctionRule *R) {
    ClipCall C;
    C.Call = CE;
    C.Rule = R;
    C.Statement = statementOf(CE);
    C.ResultUsed = !(C.Statement && isOnly(C.Statement, CE));
    if (R->ParamsArg >= 0 && (unsigned)R->ParamsArg < CE->getNumArgs())
      C.ParamsOwner = parametersOwner(CE->getArg(R->ParamsArg));
    if (R->NormTypeArg >= 0 && (unsigned)R->NormTypeArg < CE->getNumArgs()) {
      const Expr *N = CE->getArg(R->NormTypeArg);
      if (!isa<CXXDefaultArgExpr>(N)) {
        Expr::EvalResult Res;
        llvm::APFloat F(0.0);
        bool IsTwo = false;
        if (!N->isValueDependent() && N->EvaluateAsRValue(Res, Ctx)) {
          if (Res.Val.isFloat())
            IsTwo = Res.Val.getFloat().convertToDouble() == 2.0;
          else if (Res.Val.isInt())
            IsTwo = Res.Val.getInt() == 2;
        }
        C.NormIsL2 = IsTwo;
        if (!IsTwo)
          C.NormText = StepFinder::textOf(Ctx, N->getSourceRange());
      }
    }
    if (R->ErrorIfNonfiniteArg >= 0 && (unsigned)R->ErrorIfNonfiniteArg < CE->getNumArgs()) {
      const Expr *E = CE->getArg(R->ErrorIfNonfiniteArg);
      std::optional<bool> V = boolConstant(E, Ctx);
      if (!isa<CXXDefaultArgExpr>(E) && !(V && !*V))
        C.ErrorIfNonfinite = StepFinder::textOf(Ctx, E->getSourceRange());
    }
    FA.Clips.push_back(C);
  }

  void classifyMemberCall(const CXXMemberCallExpr *MC) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    if (!MD || !MD->getIdentifier())
      return;
    const CXXRecordDecl *Class = MD->getParent();
    StringRef Name = MD->getName();
    if (isScalerClass(Class, Rules)) {
      addScalerCall(MC, MD);
      return;
    }
    if (Name == "step" && isDerivedFromAny(Class, Rules.OptimizerClasses)) {
      addOptimizerStep(MC);
      return;
    }
    if (llvm::is_contained(Rules.ZeroGradMethods, Name.str()) &&
        isDerivedFromAny(Class, Rules.ZeroGradClasses)) {
      ZeroGradCall Z;
      Z.Call = MC;
      const Stmt *S = statementOf(MC);
      Z.Statement = (S && isOnly(S, MC)) ? S : nullptr;
      Z.Owner = resolveObject(MC->getImplicitObjectArgument());
      FA.ZeroGrads.push_back(Z);
      return;
    }
    if (Name == "forward" && isDerivedFromAny(Class, Rules.ModuleClasses)) {
      ForwardCall F;
      F.Call = MC;
      const Expr *Obj = MC->getImplicitObjectArgument();
      F.Model = resolveObject(Obj);
      F.Receiver = MC->getImplicitObjectArgument()->isImplicitCXXThis() ? nullptr : receiverExpr(Obj);
      F.ReturnsTensors = returnsTensors(MC->getType(), Rules);
      if (F.Model)
        FA.Forwards.push_back(F);
    }
  }

  /// The expression that names the model in `model->forward`, `model.forward`, `this->forward`.
  static const Expr *receiverExpr(const Expr *Obj) {
    Obj = strip(Obj);
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Obj);
        OC && OC->getOperator() == OO_Arrow && OC->getNumArgs() >= 1)
      return strip(OC->getArg(0));
    return Obj;
  }

  void classifyCallOperator(const CXXOperatorCallExpr *OC) {
    if (OC->getNumArgs() < 1)
      return;
    const auto *MD = dyn_cast_or_null<CXXMethodDecl>(OC->getDirectCallee());
    if (!MD)
      return;
    const CXXRecordDecl *Class = MD->getParent();
    if (!isDerivedFromAny(Class, Rules.ModuleHolderTemplates) &&
        !isDerivedFromAny(Class, Rules.ModuleClasses))
      return;
    ForwardCall F;
    F.Call = OC;
    F.Model = resolveObject(OC->getArg(0));
    F.Receiver = strip(OC->getArg(0));
    F.ReturnsTensors = returnsTensors(OC->getType(), Rules);
    if (F.Model)
      FA.Forwards.push_back(F);
  }

  /// `optimizer.step()` (no closure): the step of a training step without a scaler.
  void addOptimizerStep(const CXXMemberCallExpr *MC) {
    if (llvm::any_of(MC->arguments(), [](const Expr *A) { return !isa<CXXDefaultArgExpr>(A); }))
      return; // step(closure): LBFGS-style, re-evaluates the loss itself
    ScalerCall C;
    C.Kind = ScalerCall::Method::Step;
    C.Call = MC;
    const Expr *Obj = MC->getImplicitObjectArgument();
    if (!Obj || Obj->isImplicitCXXThis())
      return;
    C.OptimizerArg = receiverExpr(Obj);
    C.Optimizer = resolveObject(Obj);
    FA.OptimizerSteps.push_back(C);
  }

  void addScalerCall(const CXXMemberCallExpr *MC, const CXXMethodDecl *MD) {
    ScalerCall C;
    C.Call = MC;
    C.ScalerClass = MD->getParent();
    C.Scaler = resolveObject(MC->getImplicitObjectArgument());
    const ScalerMethodNames &N = Rules.ScalerMethods;
    if (methodNamed(MD, N.Scale))
      C.Kind = ScalerCall::Method::Scale;
    else if (methodNamed(MD, N.Unscale))
      C.Kind = ScalerCall::Method::Unscale;
    else if (methodNamed(MD, N.Step))
      C.Kind = ScalerCall::Method::Step;
    else if (methodNamed(MD, N.Update))
      C.Kind = ScalerCall::Method::Update;
    else if (methodNamed(MD, N.GetScale))
      C.Kind = ScalerCall::Method::GetScale;
    else if (methodNamed(MD, N.IsEnabled) && MD->getNumParams() == 0)
      C.Kind = ScalerCall::Method::IsEnabled; // a mixed step's condition (`if (scaler.is_enabled())`)
    else
      return; // other members of a scaler (state_dict) are left alone
    if ((C.Kind == ScalerCall::Method::Unscale || C.Kind == ScalerCall::Method::Step) &&
        MC->getNumArgs() >= 1) {
      C.OptimizerArg = MC->getArg(0);
      C.Optimizer = resolveObject(MC->getArg(0));
      unsigned Written = 0;
      for (const Expr *A : MC->arguments())
        if (!isa<CXXDefaultArgExpr>(A))
          ++Written;
      C.HasExplicitGrads = Written >= 2;
    }
    const Stmt *S = statementOf(MC);
    C.ResultUsed = !(S && isOnly(S, MC)) && !MC->getType()->isVoidType();
    FA.ScalerCalls.push_back(C);
  }

  void classifyDecl(const DeclStmt *DS) {
    for (const Decl *D : DS->decls()) {
      const auto *VD = dyn_cast<VarDecl>(D);
      if (!VD || !VD->hasLocalStorage())
        continue;
      const CXXRecordDecl *RD = VD->getType()->getAsCXXRecordDecl();
      if (!RD || nameIn(RD, Rules.Ignore))
        continue;
      bool Disables = false;
      if (isAutocastGuardClass(RD, Rules, &Disables))
        Guards.push_back({VD, DS, Disables});
    }
  }

  const ScalerCall *scaleCallAt(const Expr *E) const {
    E = strip(E);
    for (const ScalerCall &C : FA.ScalerCalls)
      if (C.Kind == ScalerCall::Method::Scale && C.Call == E)
        return &C;
    return nullptr;
  }

  void findImplicitBackwards() {
    // Walk every backward() on a tensor and trace its object to a scaler's scale().
    BodyCollector BC;
    BC.TraverseStmt(FD->getBody());
    for (const CallExpr *CE : BC.Calls) {
      const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
      if (!MC || !MC->getMethodDecl() || !MC->getMethodDecl()->getIdentifier() ||
          MC->getMethodDecl()->getName() != "backward" ||
          !isDerivedFromAny(MC->getMethodDecl()->getParent(), Rules.TensorClasses))
        continue;
      ImplicitBackward B;
      B.Backward = MC;
      B.BackwardStmt = statementOf(MC);
      const Expr *Obj = strip(MC->getImplicitObjectArgument());
      if (const ScalerCall *S = scaleCallAt(Obj)) {
        B.Scale = S;
      } else if (const auto *DRE = dyn_cast<DeclRefExpr>(Obj)) {
        const auto *VD = dyn_cast<VarDecl>(DRE->getDecl());
        if (!VD)
          continue;
        // `auto s = scaler.scale(loss);` or the last `s = scaler.scale(...)` before backward.
        if (VD->getInit())
          if (const ScalerCall *S = scaleCallAt(VD->getInit())) {
            B.Scale = S;
            B.SplitVar = VD;
            for (const DeclStmt *DS : BC.Decls)
              if (llvm::is_contained(DS->decls(), VD))
                B.ScaleStmt = DS;
          }
        for (const ScalerCall &S : FA.ScalerCalls) {
          if (S.Kind != ScalerCall::Method::Scale || offsetOf(S.Call->getBeginLoc()) > offsetOf(MC->getBeginLoc()))
            continue;
          const auto *Assign = dyn_cast_or_null<Expr>(PM.getParent(S.Call));
          while (Assign && (isa<ImplicitCastExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr>(Assign)))
            Assign = dyn_cast_or_null<Expr>(PM.getParent(Assign));
          const auto *OC = dyn_cast_or_null<CXXOperatorCallExpr>(Assign);
          if (!OC || OC->getOperator() != OO_Equal)
            continue;
          const auto *LHS = dyn_cast<DeclRefExpr>(strip(OC->getArg(0)));
          if (!LHS || LHS->getDecl() != VD)
            continue;
          B.Scale = &S;
          B.SplitVar = VD;
          B.ScaleStmt = statementOf(OC);
          if (S.Call->getNumArgs() >= 1)
            if (const auto *ArgRef = dyn_cast<DeclRefExpr>(strip(S.Call->getArg(0))))
              B.SplitAssignsArgument = ArgRef->getDecl() == VD;
        }
      }
      if (B.Scale)
        FA.Backwards.push_back(B);
    }
  }

  /// `loss.backward()` with no arguments on a local tensor that no scaler scaled: the backward
  /// of a step without a scaler when the loss was computed under autocast.
  void findPlainBackwards() {
    for (const CallExpr *CE : AllCalls) {
      const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
      const CXXMethodDecl *MD = MC ? MC->getMethodDecl() : nullptr;
      if (!MD || !MD->getIdentifier() || MD->getName() != "backward" ||
          !isDerivedFromAny(MD->getParent(), Rules.TensorClasses))
        continue;
      FA.BackwardCalls.push_back(MC);
      if (llvm::any_of(FA.Backwards, [&](const ImplicitBackward &B) { return B.Backward == MC; }))
        continue;
      if (llvm::any_of(MC->arguments(), [](const Expr *A) { return !isa<CXXDefaultArgExpr>(A); }))
        continue; // a gradient or retain_graph: not the plain training backward
      const auto *DRE = dyn_cast<DeclRefExpr>(strip(MC->getImplicitObjectArgument()));
      const auto *VD = DRE ? dyn_cast<VarDecl>(DRE->getDecl()) : nullptr;
      if (!VD || !VD->isLocalVarDecl() || inLambda(MC))
        continue;
      ImplicitBackward B;
      B.Backward = MC;
      B.BackwardStmt = statementOf(MC);
      B.Loss = DRE;
      FA.PlainBackwards.push_back(B);
    }
  }

  // ---- scopes ---------------------------------------------------------------------------------

  bool sameDevice(const AutocastCall &A, const AutocastCall &B) const {
    return A.Device.empty() || B.Device.empty() || A.Device == B.Device;
  }

  unsigned endOffsetOfBlock(const Stmt *S) const {
    for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
      if (isa<CompoundStmt>(P))
        return offsetOf(P->getEndLoc());
    return offsetOf(FD->getBody()->getEndLoc());
  }

  void buildScopes() {
    std::vector<const AutocastCall *> Enables;
    for (const AutocastCall &A : FA.AutocastCalls)
      if (A.Rule->Role == AutocastRole::Enable)
        Enables.push_back(&A);
    llvm::sort(Enables, [&](auto *X, auto *Y) {
      return offsetOf(X->Call->getBeginLoc()) < offsetOf(Y->Call->getBeginLoc());
    });
    std::vector<bool> Used(Enables.size(), false);
    for (size_t I = 0; I < Enables.size(); ++I) {
      const AutocastCall *E = Enables[I];
      if (Used[I] || E->Turns == AutocastCall::State::Restore ||
          E->Turns == AutocastCall::State::Forwarded)
        continue;
      bool TurnsOn = E->Turns != AutocastCall::State::Off;
      std::vector<const AutocastCall *> ExtraCloses;
      // The closing call: the next enable call for this device that turns the other way.
      const AutocastCall *Close = nullptr;
      for (size_t J = I + 1; J < Enables.size(); ++J) {
        const AutocastCall *C = Enables[J];
        if (Used[J] || !sameDevice(*E, *C))
          continue;
        bool ClosesOn = C->Turns == AutocastCall::State::Off || C->Turns == AutocastCall::State::Restore;
        bool ClosesOff = C->Turns == AutocastCall::State::On || C->Turns == AutocastCall::State::Restore;
        if ((TurnsOn && ClosesOn) || (!TurnsOn && ClosesOff)) {
          Close = C;
          Used[J] = true;
          // Several closing calls for one enable (a disable in a `catch` and another after the
          // `try`): the scope ends at the last; the earlier ones belong to it.
          for (size_t K = J + 1; TurnsOn && K < Enables.size(); ++K) {
            const AutocastCall *D = Enables[K];
            if (Used[K] || !sameDevice(*E, *D))
              continue;
            if (D->Turns != AutocastCall::State::Off && D->Turns != AutocastCall::State::Restore)
              break;
            ExtraCloses.push_back(Close);
            Close = D;
            Used[K] = true;
          }
          break;
        }
        if (C->Turns == E->Turns)
          break; // enabled twice: the first one is never closed on its own
      }
      Used[I] = true;
      if (!TurnsOn && !Close)
        continue; // a lone disable: nothing to report
      AutocastScope S;
      S.Enable = E;
      S.Disable = Close;
      S.DisablesAutocast = !TurnsOn;
      for (const AutocastCall *X : ExtraCloses)
        S.Auxiliary.push_back(X);
      S.ReportLoc = E->MacroUse.isValid() ? E->MacroUse : E->Call->getBeginLoc();
      S.Shape = E->MacroUse.isValid() ? AutocastScope::Kind::MacroPair : AutocastScope::Kind::CallPair;
      S.Begin = offsetOf(E->Call->getBeginLoc());
      if (!Close) {
        S.Shape = E->MacroUse.isValid() ? AutocastScope::Kind::MacroPair : AutocastScope::Kind::Unclosed;
        S.End = offsetOf(FD->getBody()->getEndLoc());
        S.LeaksAt = FD->getBody()->getEndLoc();
        S.LeakReason = "autocast is enabled here and never disabled; it stays on for backward and "
                       "every later step (braces do not end it)";
      } else {
        S.End = offsetOf(Close->Call->getEndLoc());
        std::vector<const AutocastCall *> Closes(ExtraCloses.begin(), ExtraCloses.end());
        Closes.push_back(Close);
        findLeakingExit(S, *E, Closes);
      }
      FA.Scopes.push_back(S);
    }
    for (const PendingGuard &G : Guards) {
      AutocastScope S;
      S.Shape = AutocastScope::Kind::Guard;
      S.GuardVar = G.Var;
      S.GuardDeclStmt = G.DS;
      S.DisablesAutocast = G.Disables;
      S.ReportLoc = G.DS->getBeginLoc().isMacroID() ? SM.getExpansionLoc(G.DS->getBeginLoc())
                                                    : G.Var->getLocation();
      S.Begin = offsetOf(G.DS->getBeginLoc());
      S.End = endOffsetOfBlock(G.DS);
      FA.Scopes.push_back(S);
    }
    // Guard end calls (`guard.End()`), and auxiliary calls that belong to a scope.
    for (AutocastScope &S : FA.Scopes) {
      if (S.GuardVar)
        for (const ScalerCall &Unused : FA.ScalerCalls)
          (void)Unused;
      for (const AutocastCall &A : FA.AutocastCalls) {
        if (A.Rule->Role == AutocastRole::Enable || A.Rule->Role == AutocastRole::Query)
          continue;
        unsigned O = offsetOf(A.Call->getBeginLoc());
        // Dtype calls often come just before the enable; cache/nesting calls just after the
        // disable. Attach to the nearest scope: inside, or adjacent in the same block.
        if (O >= S.Begin && O <= S.End)
          S.Auxiliary.push_back(&A);
      }
    }
    attachAdjacentAuxiliary();
    if (!FA.Scopes.empty())
      findGuardEnds();
    llvm::sort(FA.Scopes, [](const AutocastScope &A, const AutocastScope &B) { return A.Begin < B.Begin; });
  }

  /// The block a call sits in: it runs before everything that follows it in that block.
  const CompoundStmt *enclosingBlock(const Stmt *S) const {
    for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
      if (const auto *CS = dyn_cast<CompoundStmt>(P))
        return CS;
    return nullptr;
  }

  bool encloses(const Stmt *Outer, const Stmt *S) const {
    for (const Stmt *P = S; P; P = PM.getParent(P))
      if (P == Outer)
        return true;
    return false;
  }

  /// A `throw` in a `catch` handler (a rethrow), or one written outside any `try`: the exception
  /// leaves the function. A throw from a macro (TORCH_CHECK) is an error report, not a path the
  /// user wrote.
  bool leavesFunction(const CXXThrowExpr *T) const {
    if (T->getBeginLoc().isMacroID())
      return false;
    for (const Stmt *P = PM.getParent(T); P; P = PM.getParent(P)) {
      if (isa<CXXCatchStmt>(P) || isa<LambdaExpr>(P))
        return true;
      if (isa<CXXTryStmt>(P))
        return false; // thrown in a try block: its handlers decide
    }
    return true;
  }

  /// A return, or an exception leaving the function, between enable and disable leaves autocast
  /// on for that path, unless one of the scope's disables runs before it on that path (a `catch`
  /// that disables and then rethrows).
  void findLeakingExit(AutocastScope &S, const AutocastCall &Enable,
                       const std::vector<const AutocastCall *> &Closes) {
    BodyCollector BC;
    BC.TraverseStmt(FD->getBody());
    std::vector<const Stmt *> Exits(Returns.begin(), Returns.end());
    for (const CXXThrowExpr *T : BC.Throws)
      if (leavesFunction(T))
        Exits.push_back(T);
    llvm::sort(Exits, [&](const Stmt *A, const Stmt *B) {
      return offsetOf(A->getBeginLoc()) < offsetOf(B->getBeginLoc());
    });
    for (const Stmt *X : Exits) {
      unsigned O = offsetOf(X->getBeginLoc());
      if (O <= S.Begin || O >= S.End || enclosingLambda(X) != enclosingLambda(Enable.Call))
        continue;
      bool DisabledFirst = llvm::any_of(Closes, [&](const AutocastCall *C) {
        const CompoundStmt *Block = enclosingBlock(C->Call);
        return offsetOf(C->Call->getEndLoc()) < O && Block && encloses(Block, X);
      });
      if (DisabledFirst)
        continue;
      S.LeaksAt = X->getBeginLoc();
      if (isa<ReturnStmt>(X)) {
        S.LeakReason = "autocast enabled here stays on past an early return that skips the "
                       "disable";
        S.LeakNote = "autocast is still enabled when this returns";
      } else {
        S.LeakReason = "autocast enabled here stays on when an exception leaves the function "
                       "before the disable";
        S.LeakNote = "autocast is still enabled when this throws";
      }
      return;
    }
  }

  void attachAdjacentAuxiliary() {
    for (const AutocastCall &A : FA.AutocastCalls) {
      if (A.Rule->Role == AutocastRole::Enable || A.Rule->Role == AutocastRole::Query)
        continue;
      bool Attached = llvm::any_of(FA.Scopes, [&](const AutocastScope &S) {
        return llvm::is_contained(S.Auxiliary, &A);
      });
      if (Attached)
        continue;
      unsigned O = offsetOf(A.Call->getBeginLoc());
      AutocastScope *Best = nullptr;
      unsigned BestDist = ~0u;
      for (AutocastScope &S : FA.Scopes) {
        unsigned D = O < S.Begin ? S.Begin - O : (O > S.End ? O - S.End : 0);
        if (D < BestDist) {
          BestDist = D;
          Best = &S;
        }
      }
      // Only when nothing but whitespace/other AMP calls separates them (same or next lines).
      if (Best && BestDist < 400 && A.Removable)
        Best->Auxiliary.push_back(&A);
    }
  }

  void findGuardEnds() {
    BodyCollector BC;
    BC.TraverseStmt(FD->getBody());
    for (const CallExpr *CE : BC.Calls) {
      const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
      if (!MC)
        continue;
      ObjectRef Obj = resolveObject(MC->getImplicitObjectArgument());
      for (AutocastScope &S : FA.Scopes)
        if (S.GuardVar && Obj.Decl == S.GuardVar) {
          S.GuardEnds.push_back(MC);
          S.End = std::min(S.End, offsetOf(MC->getEndLoc()));
        }
    }
  }

  void collectInactive() {
    SourceRange Body = FD->getBody()->getSourceRange();
    unsigned B = offsetOf(Body.getBegin()), E = offsetOf(Body.getEnd());
    FileID F = SM.getFileID(SM.getExpansionLoc(Body.getBegin()));
    // Any autocast function of the rules, or the word itself, marks the region as AMP code.
    std::vector<std::string> Tokens = Rules.prefilterTokens();
    Tokens.push_back("autocast");
    for (const AutocastFunctionRule &A : Rules.Autocast)
      Tokens.push_back(StringRef(A.Function).rsplit("::").second.str());
    for (const SourceRange &R : Inactive) {
      if (SM.getFileID(R.getBegin()) != F)
        continue;
      unsigned RB = SM.getFileOffset(R.getBegin());
      if (RB < B || RB > E)
        continue;
      StringRef Text = Lexer::getSourceText(CharSourceRange::getCharRange(R), SM, Ctx.getLangOpts());
      if (llvm::any_of(Tokens, [&](const std::string &T) { return Text.contains(T); }))
        FA.InactiveAmpCode.push_back(R);
    }
  }

  // ---- steps ----------------------------------------------------------------------------------

  void groupSteps() {
    // One step per scaler object with a backward or unscale/step in this function.
    std::vector<ObjectRef> Scalers;
    for (const ScalerCall &C : FA.ScalerCalls)
      if (C.Scaler && !llvm::is_contained(Scalers, C.Scaler))
        Scalers.push_back(C.Scaler);
    for (const ObjectRef &Sc : Scalers) {
      TrainingStep T;
      T.Scaler = Sc;
      for (const ScalerCall &C : FA.ScalerCalls) {
        if (!(C.Scaler == Sc))
          continue;
        T.ScalerClass = C.ScalerClass;
        switch (C.Kind) {
        case ScalerCall::Method::Unscale: T.Unscales.push_back(&C); break;
        case ScalerCall::Method::Step: T.Steps.push_back(&C); break;
        case ScalerCall::Method::Update: T.Updates.push_back(&C); break;
        case ScalerCall::Method::Scale: break;
        case ScalerCall::Method::GetScale:
        case ScalerCall::Method::IsEnabled: T.Others.push_back(&C); break;
        }
      }
      for (const ImplicitBackward &B : FA.Backwards)
        if (B.Scale->Scaler == Sc)
          T.Backwards.push_back(&B);
      bool Implicit = !T.Backwards.empty() ||
                      llvm::any_of(T.Unscales, [](auto *C) { return !C->HasExplicitGrads; }) ||
                      llvm::any_of(T.Steps, [](auto *C) { return !C->HasExplicitGrads; });
      if (!Implicit)
        continue; // already migrated
      T.Begin = ~0u;
      for (auto *B : T.Backwards)
        T.Begin = std::min(T.Begin, offsetOf(B->Backward->getBeginLoc()));
      for (auto *C : T.Steps)
        T.Begin = std::min(T.Begin, offsetOf(C->Call->getBeginLoc()));
      for (auto *C : T.Unscales)
        T.Begin = std::min(T.Begin, offsetOf(C->Call->getBeginLoc()));
      // The autocast scope: the last one that starts before the first backward.
      unsigned FirstBackward = ~0u;
      for (auto *B : T.Backwards)
        FirstBackward = std::min(FirstBackward, offsetOf(B->Backward->getBeginLoc()));
      for (const AutocastScope &S : FA.Scopes)
        if (!S.DisablesAutocast && S.Begin < FirstBackward)
          T.Scope = &S;
      if (T.Scope)
        T.Begin = std::min(T.Begin, T.Scope->Begin);
      if (T.Scope)
        for (const ForwardCall &F : FA.Forwards) {
          unsigned O = offsetOf(F.Call->getBeginLoc());
          if (O >= T.Scope->Begin && O <= std::max(T.Scope->End, FirstBackward == ~0u ? 0 : FirstBackward))
            T.Forwards.push_back(&F);
        }
      findPlainBranch(T);
      addMembers(T);
      FA.Steps.push_back(std::move(T));
    }
    llvm::sort(FA.Steps, [](const TrainingStep &A, const TrainingStep &B) { return A.Begin < B.Begin; });
  }

  /// Whether the loss of a plain backward is computed in the scope: its initialisation, or an
  /// assignment to it, lies within [Begin, End] of the scope.
  bool computedIn(const AutocastScope &S, const ImplicitBackward &B) const {
    const auto *VD = cast<VarDecl>(cast<DeclRefExpr>(B.Loss)->getDecl());
    auto Inside = [&](const Stmt *X) {
      unsigned O = offsetOf(X->getBeginLoc());
      return O >= S.Begin && O <= S.End;
    };
    if (VD->getInit() && Inside(VD->getInit()))
      return true;
    for (const CallExpr *CE : AllCalls) {
      const auto *OC = dyn_cast<CXXOperatorCallExpr>(CE);
      if (!OC || OC->getOperator() != OO_Equal || OC->getNumArgs() != 2 || !Inside(OC))
        continue;
      if (const auto *L = dyn_cast<DeclRefExpr>(strip(OC->getArg(0))); L && L->getDecl() == VD)
        return true;
    }
    return false;
  }

  /// Steps without a scaler (bf16/fp32 autocast), in a function with no scaler calls: each plain
  /// `loss.backward()` whose loss was computed in the last autocast scope opened before it, with
  /// the `optimizer.step()` calls between it and the next plain backward. Membership of the rest
  /// (clips, zero_grad, `.grad` accesses) is addMembers', as for a scaled step.
  void groupUnscaledSteps() {
    if (!FA.ScalerCalls.empty())
      return;
    std::vector<const ImplicitBackward *> Plain;
    for (const ImplicitBackward &B : FA.PlainBackwards)
      Plain.push_back(&B);
    llvm::sort(Plain, [&](const ImplicitBackward *A, const ImplicitBackward *B) {
      return offsetOf(A->Backward->getBeginLoc()) < offsetOf(B->Backward->getBeginLoc());
    });
    for (size_t I = 0; I < Plain.size(); ++I) {
      const ImplicitBackward *B = Plain[I];
      unsigned At = offsetOf(B->Backward->getBeginLoc());
      unsigned Next = I + 1 < Plain.size() ? offsetOf(Plain[I + 1]->Backward->getBeginLoc()) : ~0u;
      TrainingStep T;
      T.Unscaled = true;
      for (const AutocastScope &S : FA.Scopes)
        if (!S.DisablesAutocast && S.Begin < At)
          T.Scope = &S;
      if (!T.Scope || !computedIn(*T.Scope, *B))
        continue;
      for (const ScalerCall &C : FA.OptimizerSteps) {
        unsigned O = offsetOf(C.Call->getBeginLoc());
        if (O > At && O < Next)
          T.Steps.push_back(&C);
      }
      if (T.Steps.empty())
        continue;
      T.Backwards.push_back(B);
      T.Begin = std::min(T.Scope->Begin, At);
      for (const ForwardCall &F : FA.Forwards) {
        unsigned O = offsetOf(F.Call->getBeginLoc());
        if (O >= T.Scope->Begin && O <= std::max(T.Scope->End, At))
          T.Forwards.push_back(&F);
      }
      addMembers(T);
      FA.Steps.push_back(std::move(T));
    }
    llvm::sort(FA.Steps, [](const TrainingStep &A, const TrainingStep &B) { return A.Begin < B.Begin; });
  }

  // ---- mixed steps: a plain path beside the scaled one -------------------------------------------

  /// The branch of `If` that holds `S` (its then or else statement), or null (S is in the
  /// condition, or not in `If`).
  const Stmt *branchOf(const IfStmt *If, const Stmt *S) const {
    for (const Stmt *Cur = S; Cur; Cur = PM.getParent(Cur))
      if (PM.getParent(Cur) == If)
        return Cur == If->getThen() || Cur == If->getElse() ? Cur : nullptr;
    return nullptr;
  }

  /// A mixed step: the first scaled backward sits in one branch of an if whose other branch runs a
  /// plain `loss.backward()` (the fp32 path). The ifs of that block that hold the step's other
  /// scaler calls are the same choice split up; the `optimizer.step()` calls of the step's
  /// optimizers on their other branches are the plain path's steps. Whether the conditions agree
  /// and the paths can be rewritten is the planner's to judge; membership is decided here.
  void findPlainBranch(TrainingStep &T) {
    const ImplicitBackward *First = nullptr;
    for (const ImplicitBackward *B : T.Backwards)
      if (!First || offsetOf(B->Backward->getBeginLoc()) < offsetOf(First->Backward->getBeginLoc()))
        First = B;
    if (!First || T.Steps.empty())
      return;
    PlainBranch P;
    for (const Stmt *Cur = First->Backward, *Par = PM.getParent(Cur); Par && !P.Condition;
         Cur = Par, Par = PM.getParent(Par)) {
      if (isa<LambdaExpr>(Par))
        return;
      const auto *If = dyn_cast<IfStmt>(Par);
      if (!If || (Cur != If->getThen() && Cur != If->getElse()))
        continue;
      const Stmt *Other = Cur == If->getThen() ? If->getElse() : If->getThen();
      if (!Other)
        continue;
      for (const ImplicitBackward &PB : FA.PlainBackwards)
        if (encloses(Other, PB.Backward)) {
          P.Condition = If->getCond();
          P.ScaledWhenTrue = Cur == If->getThen();
          P.Ifs.push_back(If);
          P.PlainSides.push_back(Other);
          P.Backwards.push_back(&PB);
          break;
        }
    }
    if (!P.Condition)
      return;
    // The later ifs of the same block that hold a scaler call of the step.
    std::vector<const ScalerCall *> Calls;
    for (const auto *List : {&T.Unscales, &T.Steps, &T.Updates, &T.Others})
      Calls.insert(Calls.end(), List->begin(), List->end());
    std::vector<const Stmt *> Later;
    if (const auto *Block = dyn_cast_or_null<CompoundStmt>(PM.getParent(P.Ifs.front())))
      Later.assign(Block->body_begin(), Block->body_end());
    for (const Stmt *Child : Later) {
      const auto *If = dyn_cast<IfStmt>(Child);
      if (!If || If == P.Ifs.front() || offsetOf(If->getBeginLoc()) < offsetOf(P.Ifs.front()->getBeginLoc()))
        continue;
      const Stmt *Scaled = nullptr;
      for (const ScalerCall *C : Calls)
        if (!Scaled)
          Scaled = branchOf(If, C->Call);
      if (!Scaled)
        continue;
      P.Ifs.push_back(If);
      P.PlainSides.push_back(Scaled == If->getThen() ? If->getElse() : If->getThen());
    }
    for (const Stmt *Side : P.PlainSides) {
      if (!Side)
        continue;
      P.Ranges.push_back({offsetOf(Side->getBeginLoc()), offsetOf(Side->getEndLoc())});
      for (const ScalerCall &C : FA.OptimizerSteps)
        if (T.stepsOptimizer(C.Optimizer) && encloses(Side, C.Call))
          P.Steps.push_back(&C);
    }
    T.Plain = std::move(P);
  }

  // ---- step membership: the one rule ----------------------------------------------------------

  /// The gradient window, the clips in it, the zero_grad() calls of the step's optimizers and
  /// models, and the other statements in the window that touch `.grad`.
  void addMembers(TrainingStep &T) {
    for (const ImplicitBackward *B : T.Backwards)
      T.GradientBegin = std::min(T.GradientBegin, offsetOf(B->Backward->getBeginLoc()));
    for (const ScalerCall *C : T.Unscales)
      T.GradientBegin = std::min(T.GradientBegin, offsetOf(C->Call->getBeginLoc()));
    for (const ScalerCall *C : T.Steps)
      T.GradientEnd = std::max(T.GradientEnd, offsetOf(C->Call->getBeginLoc()));
    for (const ImplicitBackward *B : T.Plain.Backwards)
      T.GradientBegin = std::min(T.GradientBegin, offsetOf(B->Backward->getBeginLoc()));
    for (const ScalerCall *C : T.Plain.Steps)
      T.GradientEnd = std::max(T.GradientEnd, offsetOf(C->Call->getBeginLoc()));
    for (const ClipCall &C : FA.Clips)
      if (T.inGradientWindow(offsetOf(C.Call->getBeginLoc())))
        T.Clips.push_back(&C);
    for (const ZeroGradCall &Z : FA.ZeroGrads)
      if (T.stepsOptimizer(Z.Owner) || T.forwardsModel(Z.Owner))
        T.ZeroGrads.push_back(&Z);
    addGradAccesses(T);
  }

  /// Is `E` (an argument) the parameters, a model or an optimizer of the step?
  bool namesStepParameters(const TrainingStep &T, const Expr *E) const {
    if (parametersCall(E))
      return true;
    ObjectRef O = resolveObject(E);
    if (O && (T.stepsOptimizer(O) || T.forwardsModel(O)))
      return true;
    // A local holding a parameter list: `auto params = model->parameters(); f(params);`
    if (const auto *VD = dyn_cast_or_null<VarDecl>(O.Decl))
      return VD->getInit() && parametersCall(VD->getInit());
    return false;
  }

  bool isStepElement(const TrainingStep &T, const CallExpr *CE) const {
    auto Is = [&](const auto &List) {
      return llvm::any_of(List, [&](const auto *X) { return X->Call == CE; });
    };
    if (Is(T.Unscales) || Is(T.Steps) || Is(T.Updates) || Is(T.Others) || Is(T.Clips) ||
        Is(T.ZeroGrads) || Is(T.Forwards) || Is(T.Plain.Steps))
      return true;
    auto IsBackward = [&](const ImplicitBackward *B) {
      return B->Backward == CE || (B->Scale && B->Scale->Call == CE);
    };
    return llvm::any_of(T.Backwards, IsBackward) || llvm::any_of(T.Plain.Backwards, IsBackward);
  }

  /// The statement of the step's block that holds `S`: the block of its first backward, or, when
  /// `S` is outside it (after a micro-batch loop of a gradient accumulation), the block of its
  /// first step(); else the nearest statement of any block.
  const Stmt *stepStatementOf(const TrainingStep &T, const Stmt *S) const {
    llvm::SmallVector<const Stmt *, 2> Blocks;
    if (!T.Backwards.empty() && T.Backwards.front()->BackwardStmt)
      Blocks.push_back(PM.getParent(T.Backwards.front()->BackwardStmt));
    if (!T.Steps.empty())
      if (const Stmt *StepStmt = statementOf(T.Steps.front()->Call))
        Blocks.push_back(PM.getParent(StepStmt));
    // A mixed step: the plain path's blocks, and the block of the ifs choosing the path.
    for (const Stmt *Side : T.Plain.PlainSides)
      if (isa_and_nonnull<CompoundStmt>(Side))
        Blocks.push_back(Side);
    if (!T.Plain.Ifs.empty())
      Blocks.push_back(PM.getParent(T.Plain.Ifs.front()));
    for (const Stmt *Block : Blocks)
      for (const Stmt *Cur = S; Block && Cur; Cur = PM.getParent(Cur))
        if (PM.getParent(Cur) == Block)
          return Cur;
    return statementOf(S);
  }

  /// `optimizer.step()` of one of the step's optimizers: it reads `.grad` (a member only as the
  /// step of an unscaled step or of a mixed step's plain path).
  bool isOwnStepOf(const TrainingStep &T, const CallExpr *CE) const {
    return llvm::any_of(FA.OptimizerSteps, [&](const ScalerCall &C) {
      return C.Call == CE && T.stepsOptimizer(C.Optimizer);
    });
  }

  /// Whether a function defined outside the system headers calls a tensor's grad()/mutable_grad(),
  /// in its body or in the functions it calls (a few calls deep).
  llvm::DenseMap<const FunctionDecl *, bool> TouchesGrad;
  bool bodyTouchesGrad(const FunctionDecl *F, int Depth) {
    const FunctionDecl *Def = nullptr;
    if (Depth > 3 || !F->hasBody(Def) || !Def->getBody())
      return false;
    const SourceManager &SM = Ctx.getSourceManager();
    if (SM.isInSystemHeader(SM.getExpansionLoc(Def->getLocation())))
      return false;
    auto [It, New] = TouchesGrad.try_emplace(Def->getCanonicalDecl(), false);
    if (!New)
      return It->second; // known, or being computed (a recursion: no by this path)
    struct Finder : RecursiveASTVisitor<Finder> {
      std::vector<const CallExpr *> Calls;
      bool VisitCallExpr(CallExpr *CE) {
        Calls.push_back(CE);
        return true;
      }
    } Fd;
    Fd.TraverseStmt(Def->getBody());
    bool Touches = llvm::any_of(Fd.Calls, [](const CallExpr *CE) { return isGradAccessor(CE); });
    for (const CallExpr *CE : Fd.Calls)
      if (!Touches && CE->getDirectCallee() && CE->getDirectCallee() != Def)
        Touches = bodyTouchesGrad(CE->getDirectCallee(), Depth + 1);
    TouchesGrad[Def->getCanonicalDecl()] = Touches;
    return Touches;
  }

  void addGradAccesses(TrainingStep &T) {
    if (T.GradientBegin > T.GradientEnd)
      return;
    for (const CallExpr *CE : AllCalls) {
      if (!T.inGradientWindow(offsetOf(CE->getBeginLoc())) || isStepElement(T, CE))
        continue;
      GradAccess A;
      A.Access = CE;
      if (isGradAccessor(CE) || isOwnStepOf(T, CE)) {
        A.How = GradAccess::Kind::GradAccessor;
      } else if (!isa<CXXOperatorCallExpr>(CE) && // `model->`, `*opt`: access, not a hand-over
                 llvm::any_of(CE->arguments(), [&](const Expr *Arg) { return namesStepParameters(T, Arg); })) {
        A.How = GradAccess::Kind::ParametersPassed;
      } else if (CE->getDirectCallee() && bodyTouchesGrad(CE->getDirectCallee(), 0)) {
        // A function of this file that reaches .grad by itself (a member using the trainer's
        // model, a helper using a global model): given nothing, it still acts on .grad.
        A.How = GradAccess::Kind::GradAccessor;
      } else {
        continue;
      }
      A.Statement = stepStatementOf(T, CE);
      if (!A.Statement || llvm::any_of(T.GradAccesses, [&](const GradAccess &O) { return O.Statement == A.Statement; }))
        continue;
      T.GradAccesses.push_back(A);
    }
  }
};

/// What one function body calls, for the inference-only rule: whether it runs a backward pass,
/// and which functions it calls (lambdas in it count as its own code).
class CallSummary : public AnalysedBodyVisitor<CallSummary> {
public:
  explicit CallSummary(const RuleSet &Rules) : Rules(Rules) {}
  bool CallsBackward = false;
  llvm::SmallPtrSet<const FunctionDecl *, 8> Callees;
  /// A call handing code or values to the callee (a lambda, a function, a variable holding a
  /// lambda; a call's result, directly or through the variable it initialised): the functions
  /// that code calls run when the callee runs it, e.g. under its backward(), and the functions
  /// whose results it receives computed what it works on (a loss it calls backward() on).
  struct Callback {
    const FunctionDecl *Callee;
    llvm::SmallVector<const FunctionDecl *, 4> Runs;
  };
  std::vector<Callback> Callbacks;

  /// One key for a function, its redeclarations and its template's instantiations.
  static const FunctionDecl *key(const FunctionDecl *F) {
    if (const FunctionDecl *Pattern = F->getTemplateInstantiationPattern())
      F = Pattern;
    return F->getCanonicalDecl();
  }

  bool VisitCallExpr(CallExpr *CE) {
    const FunctionDecl *Callee = CE->getDirectCallee();
    if (!Callee) {
      // In a template: `f().backward()` on a dependent type may well be a tensor's.
      const Expr *C = CE->getCallee()->IgnoreParenImpCasts();
      DeclarationName Name;
      if (const auto *DM = dyn_cast<CXXDependentScopeMemberExpr>(C))
        Name = DM->getMember();
      else if (const auto *UM = dyn_cast<UnresolvedMemberExpr>(C))
        Name = UM->getMemberName();
      if (const IdentifierInfo *II = Name.getAsIdentifierInfo(); II && II->getName() == "backward")
        CallsBackward = true;
      return true;
    }
    Callees.insert(key(Callee));
    if (isBackward(CE, Callee))
      CallsBackward = true;
    addCallbacks(key(Callee), CE->arguments());
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *CE) {
    if (const CXXConstructorDecl *Ctor = CE->getConstructor())
      Callees.insert(key(Ctor));
    return true;
  }
  /// A function named without being called (a callback, `&f`, `&C::m`) may run from here too.
  bool VisitDeclRefExpr(DeclRefExpr *DRE) {
    if (const auto *F = dyn_cast<FunctionDecl>(DRE->getDecl()))
      Callees.insert(key(F));
    return true;
  }
  bool VisitMemberExpr(MemberExpr *ME) {
    if (const auto *F = dyn_cast<FunctionDecl>(ME->getMemberDecl()))
      Callees.insert(key(F));
    return true;
  }

private:
  const RuleSet &Rules;
  template <class Args> void addCallbacks(const FunctionDecl *Callee, Args Arguments) {
    Callback CB{Callee, {}};
    for (const Expr *A : Arguments) {
      const Expr *E = A->IgnoreImplicit()->IgnoreParenImpCasts();
      if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(E))
        E = MT->getSubExpr()->IgnoreImplicit();
      if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E))
        E = BT->getSubExpr()->IgnoreImplicit();
      if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
        if (const auto *F = dyn_cast<FunctionDecl>(DRE->getDecl())) {
          CB.Runs.push_back(key(F));
          continue;
        }
        if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()); V && V->getInit())
          E = V->getInit()->IgnoreImplicit();
      }
      if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->getOpcode() == UO_AddrOf)
        if (const auto *DRE = dyn_cast<DeclRefExpr>(U->getSubExpr()->IgnoreParenImpCasts()))
          if (const auto *F = dyn_cast<FunctionDecl>(DRE->getDecl()))
            CB.Runs.push_back(key(F));
      // The code of a lambda runs when the callee runs it; a call's result (in the argument, or
      // in the variable the argument names) is what the callee works on: a loss computed by
      // `forward_loss()` and handed to a step function that calls backward() is trained on.
      CallSummary Inner(Rules);
      if (const auto *LE = dyn_cast<LambdaExpr>(E))
        Inner.TraverseStmt(const_cast<CompoundStmt *>(analysedLambdaBody(LE)));
      else
        Inner.TraverseStmt(const_cast<Expr *>(E));
      CB.Runs.append(Inner.Callees.begin(), Inner.Callees.end());
    }
    if (!CB.Runs.empty())
      Callbacks.push_back(std::move(CB));
  }
  /// A call that only training code makes: a backward pass, and also an optimizer's step() or
  /// zero_grad() or a gradient clip (a training function whose backward runs in a callee of
  /// another file still steps the optimizer here).
  bool isBackward(const CallExpr *CE, const FunctionDecl *Callee) const {
    const IdentifierInfo *II = Callee->getIdentifier();
    if (!II)
      return false;
    if (Rules.clipRule(qualifiedName(Callee)))
      return true;
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
      if ((II->getName() == "step" || II->getName() == "zero_grad") && MC->getMethodDecl() &&
          isDerivedFromAny(MC->getMethodDecl()->getParent(), Rules.OptimizerClasses))
        return true;
      return II->getName() == "backward" && MC->getImplicitObjectArgument() &&
             isTensorType(MC->getImplicitObjectArgument()->getType(), Rules);
    }
    if (II->getName() != "backward" && II->getName() != "grad")
      return false;
    std::string Q = qualifiedName(Callee);
    return Q == "torch::autograd::backward" || Q == "torch::autograd::grad";
  }
};

/// Visits function definitions in scope.
class FunctionVisitor : public RecursiveASTVisitor<FunctionVisitor> {
public:
  FunctionVisitor(ASTContext &Ctx, const RuleSet &Rules, std::function<bool(SourceLocation)> &InScope,
                  const std::vector<SourceRange> &Inactive, TranslationUnitAnalysis &Out)
      : Ctx(Ctx), Rules(Rules), InScope(InScope), Inactive(Inactive), Out(Out) {}
  bool shouldVisitTemplateInstantiations() const { return false; }
  bool shouldVisitLambdaBody() const { return false; } // analysed with the enclosing function

  bool VisitFunctionDecl(FunctionDecl *FD) {
    if (!FD->doesThisDeclarationHaveABody() || !FD->getBody())
      return true;
    if (!InScope(FD->getLocation()))
      return true;
    if (const auto *MD = dyn_cast<CXXMethodDecl>(FD); !MD || !MD->getParent()->isLambda()) {
      CallSummary CS(Rules);
      CS.TraverseStmt(FD->getBody());
      if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(FD))
        for (const CXXCtorInitializer *Init : Ctor->inits())
          CS.TraverseStmt(Init->getInit());
      FunctionCalls &Entry = Calls[CallSummary::key(FD)];
      Entry.CallsBackward |= CS.CallsBackward;
      Entry.Callees.insert(CS.Callees.begin(), CS.Callees.end());
      for (CallSummary::Callback &CB : CS.Callbacks)
        Callbacks.push_back(std::move(CB));
    }
    if (const auto *MD = dyn_cast<CXXMethodDecl>(FD)) {
      if (MD->getParent()->isLambda())
        return true;
      // The implementation of a guard class, or of a scaler class (its step() calling its own
      // unscale_()), is not a finding.
      if (isAutocastGuardClass(MD->getParent(), Rules, nullptr) || isScalerClass(MD->getParent(), Rules))
        return true;
    }
    FunctionAnalyser A(Ctx, Rules, FD, Inactive);
    FunctionAnalysis FA = A.run();
    if (!FA.AutocastCalls.empty() || !FA.ScalerCalls.empty() || !FA.Scopes.empty())
      Out.Functions.push_back(std::move(FA));
    return true;
  }

  /// Sets FunctionAnalysis::InferenceOnly: a function reached from no function that calls
  /// backward() (following the calls of the analysed code from each such function).
  void markInferenceOnly() {
    llvm::SmallPtrSet<const FunctionDecl *, 32> Training;
    std::vector<const FunctionDecl *> Work;
    for (const auto &[F, C] : Calls)
      if (C.CallsBackward && Training.insert(F).second)
        Work.push_back(F);
    // What a training function calls trains; so does the code handed to one (a callback).
    for (bool Grew = true; Grew;) {
      while (!Work.empty()) {
        const FunctionDecl *F = Work.back();
        Work.pop_back();
        auto It = Calls.find(F);
        if (It == Calls.end())
          continue;
        for (const FunctionDecl *Callee : It->second.Callees)
          if (Training.insert(Callee).second)
            Work.push_back(Callee);
      }
      Grew = false;
      for (const CallSummary::Callback &CB : Callbacks)
        if (Training.contains(CB.Callee))
          for (const FunctionDecl *F : CB.Runs)
            if (Training.insert(F).second) {
              Work.push_back(F);
              Grew = true;
            }
    }
    // A virtual method may be called through its base, which this rule cannot follow.
    for (FunctionAnalysis &FA : Out.Functions) {
      const auto *MD = dyn_cast<CXXMethodDecl>(FA.Function);
      FA.InferenceOnly =
          !Training.contains(CallSummary::key(FA.Function)) && !(MD && MD->isVirtual());
    }
  }

private:
  ASTContext &Ctx;
  const RuleSet &Rules;
  std::function<bool(SourceLocation)> &InScope;
  const std::vector<SourceRange> &Inactive;
  TranslationUnitAnalysis &Out;
  struct FunctionCalls {
    bool CallsBackward = false;
    llvm::SmallPtrSet<const FunctionDecl *, 8> Callees;
  };
  llvm::DenseMap<const FunctionDecl *, FunctionCalls> Calls;
  std::vector<CallSummary::Callback> Callbacks;
};
} // namespace

TranslationUnitAnalysis StepFinder::run() {
  TranslationUnitAnalysis Out;
  FunctionVisitor V(Ctx, Rules, InScope, Inactive, Out);
  for (Decl *D : Ctx.getTraversalScope())
    V.TraverseDecl(D);
  V.markInferenceOnly();
  return Out;
}

bool TrainingStep::unscaledBefore(unsigned Offset, const ObjectRef &Of,
                                  const SourceManager &SM) const {
  return llvm::any_of(Unscales, [&](const ScalerCall *U) {
    return SM.getFileOffset(SM.getExpansionLoc(U->Call->getBeginLoc())) < Offset &&
           (!Of || U->Optimizer == Of);
  });
}

} // namespace ampmigrate
