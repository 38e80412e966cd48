// Shape recognisers: what a declaration, type or expression is in the domain (a tensor, a scaler
// class, an autocast guard, a parameter list, a `.grad` access), by its shape, with the rules'
// names. Facts about the AST alone, shared by the analysis (StepFinder, the stages of analyseFunction,
// InferenceOnly) and the planner.
#include "ampmigrate/ShapeRecognisers.h"
#include "BodyCollectors.h"
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/ExpressionFacts.h"
#include "ampmigrate/GenericLambdas.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMap.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Tooling/Transformer/SourceCode.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace clang;

namespace ampmigrate {

std::string sourceTextOf(const ASTContext &Ctx, SourceRange R) {
  std::optional<CharSourceRange> CR =
      tooling::getFileRange(CharSourceRange::getTokenRange(R), Ctx, /*IncludeMacroExpansion=*/true);
  return CR ? tooling::getText(*CR, Ctx).str() : "";
}

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

bool inLibraryNamespace(const Decl *D) {
  const NamespaceDecl *Top = nullptr;
  for (const DeclContext *DC = D ? D->getDeclContext() : nullptr; DC; DC = DC->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC); NS && !NS->isInline())
      Top = NS;
  if (!Top || !Top->getIdentifier())
    return false;
  return llvm::is_contained({"torch", "at", "c10", "std", "caffe2", "__gnu_cxx"}, Top->getName());
}

bool AutocastCallCollector::visitStmt(Stmt *S) {
  if (const auto *CE = dyn_cast<CallExpr>(S))
    if (const FunctionDecl *FD = CE->getDirectCallee())
      if (const AutocastFunctionRule *R = Rules.autocastRule(qualifiedName(FD)))
        Found.push_back({CE, R});
  return true;
}

bool nameIn(const NamedDecl *D, const std::vector<std::string> &Names) {
  // A declaration inside a function body (a lambda's class, a local class) has no name a rule can
  // spell, and printing its qualified name walks every enclosing context.
  return !Names.empty() && !D->getParentFunctionOrMethod() &&
         llvm::is_contained(Names, qualifiedName(D));
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

namespace {

/// Tensor, or a tuple/pair/vector whose elements are tensors.
bool tensorOrContainer(QualType T, const RuleSet &Rules) {
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


/// A struct amp::cast_to_adapter_tensor maps field by field (the runtime's conditions, torch.h:
/// an aggregate without bases, 1 to 12 fields, each a tensor, a container of them or a scalar).
bool castableAggregate(QualType T, const RuleSet &Rules) {
  const auto *RD = T.getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl();
  if (!RD || !RD->hasDefinition() || RD->isUnion() || !RD->isAggregate() || RD->getNumBases() ||
      isa<ClassTemplateSpecializationDecl>(RD))
    return false;
  unsigned Fields = 0;
  bool Tensors = false;
  for (const FieldDecl *F : RD->fields()) {
    ++Fields;
    QualType FT = F->getType();
    if (tensorOrContainer(FT, Rules))
      Tensors = true;
    else if (!FT->isArithmeticType() && !FT->isEnumeralType())
      return false;
  }
  return Tensors && Fields >= 1 && Fields <= 12;
}

} // namespace

bool returnsTensors(QualType T, const RuleSet &Rules) {
  return tensorOrContainer(T, Rules) || castableAggregate(T, Rules);
}

bool holdsUncastTensors(QualType T, const RuleSet &Rules) {
  if (returnsTensors(T, Rules))
    return false;
  const auto *RD = T.getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl();
  if (!RD || !RD->hasDefinition())
    return false;
  return llvm::any_of(RD->fields(), [&](const FieldDecl *F) {
    return tensorOrContainer(F->getType(), Rules);
  });
}

bool methodNamed(const CXXMethodDecl *M, const std::vector<std::string> &Names) {
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

bool isUnknownScalerPort(const CXXRecordDecl *RD, const RuleSet &Rules) {
  if (!RD || !(RD = RD->getDefinition()) || isScalerClass(RD, Rules))
    return false;
  bool HasScale = false, HasUnscale = false;
  for (const CXXMethodDecl *M : RD->methods()) {
    HasScale |= methodNamed(M, Rules.ScalerMethods.Scale) && scalesTensors(M, Rules);
    HasUnscale |= methodNamed(M, Rules.ScalerMethods.Unscale) && M->getNumParams() >= 1;
  }
  return HasScale && HasUnscale;
}


std::optional<bool> boolConstant(const Expr *E, const ASTContext &Ctx) {
  if (!E || E->isValueDependent())
    return std::nullopt;
  bool V;
  if (E->EvaluateAsBooleanCondition(V, Ctx))
    return V;
  return std::nullopt;
}

/// The bool argument of the first enable call in a constructor's body (the guard's switch), with
/// the definition in `Def`; null when its body has none.
static const Expr *enableArgument(const CXXConstructorDecl *Ctor, const RuleSet &Rules,
                                  const FunctionDecl *&Def) {
  if (!Ctor->hasBody(Def) || !Def->getBody())
    return nullptr;
  AutocastCallCollector C(Rules);
  C.walk(Def->getBody());
  for (auto &[CE, R] : C.Found)
    if (R->Role == AutocastRole::Enable && R->EnabledArg >= 0 &&
        (unsigned)R->EnabledArg < CE->getNumArgs())
      return CE->getArg(R->EnabledArg);
  return nullptr;
}

std::optional<AutocastFunctionRule> forwardingSetterRule(const FunctionDecl *F,
                                                         const RuleSet &Rules) {
  const FunctionDecl *Def = nullptr;
  if (!F || F->getParentFunctionOrMethod() || !F->hasBody(Def) || !Def->getBody())
    return std::nullopt;
  const auto *Body = dyn_cast<CompoundStmt>(Def->getBody());
  if (!Body || Body->size() != 1)
    return std::nullopt;
  const auto *Only = dyn_cast<Expr>(Body->body_front());
  const auto *CE = Only ? dyn_cast<CallExpr>(strip(Only)) : nullptr;
  const FunctionDecl *Callee = CE ? CE->getDirectCallee() : nullptr;
  const AutocastFunctionRule *R = Callee ? Rules.autocastRule(qualifiedName(Callee)) : nullptr;
  if (!R || R->Role != AutocastRole::Enable || R->EnabledArg < 0 ||
      (unsigned)R->EnabledArg >= CE->getNumArgs())
    return std::nullopt;
  const auto *DRE = dyn_cast<DeclRefExpr>(CE->getArg(R->EnabledArg)->IgnoreParenImpCasts());
  const auto *PVD = DRE ? dyn_cast<ParmVarDecl>(DRE->getDecl()) : nullptr;
  if (!PVD || PVD->getDeclContext() != Def)
    return std::nullopt;
  AutocastFunctionRule Setter = *R;
  Setter.Function = qualifiedName(F);
  Setter.EnabledArg = PVD->getFunctionScopeIndex();
  if (R->DeviceArg >= 0) {
    // The device must be the setter's own constant (`set_autocast_enabled(at::kCUDA, e)`).
    if ((unsigned)R->DeviceArg >= CE->getNumArgs())
      return std::nullopt;
    const Expr *Dev = CE->getArg(R->DeviceArg);
    Expr::EvalResult Res;
    if (Dev->isValueDependent() || !Dev->EvaluateAsRValue(Res, F->getASTContext()) ||
        !Res.Val.isInt())
      return std::nullopt;
    int64_t V = Res.Val.getInt().getExtValue();
    Setter.Device = V == 0 ? "cpu" : V == 1 ? "cuda" : "device-type-" + std::to_string(V);
    Setter.DeviceArg = -1;
  }
  return Setter;
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
    if (const Expr *On = enableArgument(Ctor, Rules, Def)) {
      auto V = boolConstant(On, RD->getASTContext());
      if (Disables)
        *Disables = V.has_value() && !*V;
      return true;
    }
  }
  return false;
}

std::optional<bool> guardClearsCache(const CXXRecordDecl *RD, const RuleSet &Rules) {
  RD = RD ? RD->getDefinition() : nullptr;
  const CXXDestructorDecl *Dtor = RD ? RD->getDestructor() : nullptr;
  const FunctionDecl *Def = nullptr;
  if (!Dtor || !Dtor->hasBody(Def) || !Def->getBody())
    return std::nullopt;
  AutocastCallCollector C(Rules);
  C.walk(Def->getBody());
  // One level into the class's own helpers (`~Guard() { restore(); }`).
  BodyCollector Calls;
  Calls.walk(Def->getBody());
  for (const CallExpr *CE : Calls.Calls) {
    const auto *MD = dyn_cast_or_null<CXXMethodDecl>(CE->getDirectCallee());
    const FunctionDecl *HelperDef = nullptr;
    if (MD && MD->getParent()->getCanonicalDecl() == RD->getCanonicalDecl() &&
        MD->hasBody(HelperDef) && HelperDef->getBody())
      C.walk(HelperDef->getBody());
  }
  return llvm::any_of(C.Found, [](const auto &F) { return F.second->Role == AutocastRole::Cache; });
}

/// The parameter of a guard's constructor (defined as `Def`) that a guard's switch `On` passes on: the parameter
/// itself (`set_enabled(enabled)`), or a data member the constructor initialises from it
/// (`Guard(bool e) : enabled_(e) { set_enabled(enabled_); }`); null for anything else.
static const ParmVarDecl *switchParameter(const Expr *On, const FunctionDecl *Def) {
  On = On->IgnoreParenImpCasts();
  if (const auto *DRE = dyn_cast<DeclRefExpr>(On)) {
    const auto *PVD = dyn_cast<ParmVarDecl>(DRE->getDecl());
    return PVD && PVD->getDeclContext() == Def ? PVD : nullptr;
  }
  const auto *ME = dyn_cast<MemberExpr>(On);
  const auto *Field = ME ? dyn_cast<FieldDecl>(ME->getMemberDecl()) : nullptr;
  const auto *DefCtor = dyn_cast<CXXConstructorDecl>(Def);
  if (!Field || !DefCtor || !isa<CXXThisExpr>(ME->getBase()->IgnoreParenImpCasts()))
    return nullptr;
  for (const CXXCtorInitializer *Init : DefCtor->inits()) {
    if (Init->getMember() != Field || !Init->getInit())
      continue;
    const auto *DRE = dyn_cast<DeclRefExpr>(Init->getInit()->IgnoreParenImpCasts());
    const auto *PVD = DRE ? dyn_cast<ParmVarDecl>(DRE->getDecl()) : nullptr;
    return PVD && PVD->getDeclContext() == Def ? PVD : nullptr;
  }
  return nullptr;
}

/// The constant a use passes for parameter `I` (its default argument when not written).
static std::optional<bool> argumentConstant(const CXXConstructExpr *Use, unsigned I) {
  if (I >= Use->getNumArgs())
    return std::nullopt;
  const Expr *A = Use->getArg(I);
  if (const auto *D = dyn_cast<CXXDefaultArgExpr>(A))
    A = D->getExpr();
  return boolConstant(A, Use->getConstructor()->getASTContext());
}

std::optional<bool> guardUseTurnsOn(const CXXConstructExpr *Use, const RuleSet &Rules) {
  const CXXConstructorDecl *Ctor = Use ? Use->getConstructor() : nullptr;
  if (!Ctor)
    return std::nullopt;
  const FunctionDecl *Def = nullptr;
  if (const Expr *On = enableArgument(Ctor, Rules, Def)) {
    const ParmVarDecl *PVD = switchParameter(On, Def);
    if (!PVD)
      return std::nullopt; // a constant (the class's own) or a computed value
    return argumentConstant(Use, PVD->getFunctionScopeIndex());
  }
  // A guard the rules name, its constructor out of sight (`Guard g(false)`): its one bool
  // parameter is the switch, as in at::autocast's own `enabled` (a parameter named for the other
  // direction, `disable`, is not).
  if (Ctor->hasBody() || !nameIn(Ctor->getParent(), Rules.Guards))
    return std::nullopt;
  std::optional<unsigned> Switch;
  for (const ParmVarDecl *P : Ctor->parameters()) {
    if (!P->getType()->isBooleanType())
      continue;
    if (Switch || P->getName().contains_insensitive("disable"))
      return std::nullopt;
    Switch = P->getFunctionScopeIndex();
  }
  if (!Switch)
    return std::nullopt;
  return argumentConstant(Use, *Switch);
}

bool addValuesGiven(const Stmt *S, std::vector<std::pair<const VarDecl *, const Expr *>> &Out) {
  auto Add = [&](const Expr *Target, const Expr *Value) {
    if (const auto *L = dyn_cast<DeclRefExpr>(strip(Target)))
      if (const auto *V = dyn_cast<VarDecl>(L->getDecl()))
        Out.push_back({V, Value});
  };
  if (const auto *DS = dyn_cast<DeclStmt>(S)) {
    for (const Decl *D : DS->decls())
      if (const auto *V = dyn_cast<VarDecl>(D); V && V->getInit())
        Out.push_back({V, V->getInit()});
  } else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(S);
             OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2) {
    Add(OC->getArg(0), OC->getArg(1));
  } else if (const auto *BO = dyn_cast<BinaryOperator>(S); BO && BO->getOpcode() == BO_Assign) {
    Add(BO->getLHS(), BO->getRHS());
  } else {
    return false;
  }
  return true;
}

const Expr *strip(const Expr *E) {
  // Also through a copy or move of the object and a functional cast (`Tensor(x)`).
  return ignoreWrappers(E, [](const Expr *X) -> const Expr * {
    if (const auto *CE = dyn_cast<CXXConstructExpr>(X);
        CE && CE->getNumArgs() == 1 && CE->getConstructor()->isCopyOrMoveConstructor())
      return CE->getArg(0);
    if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(X))
      return FC->getSubExpr();
    return X;
  });
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
const CallExpr *gradAccessIn(const Stmt *Body, const SourceManager &SM, int Depth,
                             llvm::SmallPtrSetImpl<const FunctionDecl *> &Seen,
                             const CallExpr **Via) {
  CallCollector C;
  C.walk(const_cast<Stmt *>(Body));
  for (const CallExpr *CE : C.Calls)
    if (isGradAccessor(CE)) {
      *Via = CE;
      return CE;
    }
  if (Depth >= 3)
    return nullptr;
  for (const CallExpr *CE : C.Calls) {
    const FunctionDecl *Def = nullptr;
    const FunctionDecl *F = CE->getDirectCallee();
    if (!F || !F->hasBody(Def) || !Def->getBody() ||
        SM.isInSystemHeader(SM.getExpansionLoc(Def->getLocation())) ||
        !Seen.insert(Def->getCanonicalDecl()).second)
      continue;
    const CallExpr *Inner = nullptr;
    if (const CallExpr *A = gradAccessIn(Def->getBody(), SM, Depth + 1, Seen, &Inner)) {
      *Via = CE;
      return A;
    }
  }
  return nullptr;
}
} // namespace

GradUse firstGradUse(const Stmt *Body, const SourceManager &SM) {
  GradUse U;
  if (!Body)
    return U;
  llvm::SmallPtrSet<const FunctionDecl *, 16> Seen;
  U.Access = gradAccessIn(Body, SM, 0, Seen, &U.Call);
  if (!U.Access)
    U.Call = nullptr;
  return U;
}

const CXXRecordDecl *modelClass(const Expr *Forward) {
  const CXXMethodDecl *MD = nullptr;
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(Forward))
    MD = MC->getMethodDecl();
  else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Forward))
    MD = dyn_cast_or_null<CXXMethodDecl>(OC->getDirectCallee());
  if (!MD)
    return nullptr;
  const CXXRecordDecl *RD = MD->getParent();
  if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(RD);
      Spec && Spec->getName() == "ModuleHolder" && Spec->getTemplateArgs().size() >= 1 &&
      Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type)
    RD = Spec->getTemplateArgs()[0].getAsType()->getAsCXXRecordDecl();
  return RD ? RD->getDefinition() : nullptr;
}

/// A `.grad()` whose only use clears it (`p.grad().zero_()`, `.detach_()`, `.defined()` before
/// them, `p.mutable_grad() = torch::Tensor()`, `.reset()`): a hand-written zero_grad(). Explicit
/// grads start from nothing anyway, so clearing .grad changes nothing the step computes.
bool onlyClearsGrad(const CallExpr *Accessor, const ParentMap &PM) {
  const Stmt *Use = Accessor;
  const Stmt *P = PM.getParent(Use);
  while (P && isa<ImplicitCastExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr, ParenExpr>(P)) {
    Use = P;
    P = PM.getParent(P);
  }
  if (const auto *ME = dyn_cast_or_null<MemberExpr>(P)) {
    const auto *Call = dyn_cast_or_null<CXXMemberCallExpr>(PM.getParent(ME));
    const NamedDecl *M = ME->getMemberDecl();
    return Call && Call->getNumArgs() == 0 && M->getIdentifier() &&
           llvm::is_contained({"zero_", "detach_", "defined", "reset"}, M->getName());
  }
  if (const auto *Op = dyn_cast_or_null<CXXOperatorCallExpr>(P);
      Op && Op->getOperator() == OO_Equal && Op->getNumArgs() == 2 && Op->getArg(0) == Use) {
    const Expr *R = Op->getArg(1)->IgnoreImplicit();
    if (const auto *CE = dyn_cast<CXXConstructExpr>(R))
      return CE->getNumArgs() == 0;
    if (const auto *IL = dyn_cast<InitListExpr>(R))
      return IL->getNumInits() == 0;
  }
  return false;
}


bool isAutocastEnableCall(const CallExpr *CE, const RuleSet &Rules, const ASTContext &Ctx) {
  const FunctionDecl *FD = CE->getDirectCallee();
  const AutocastFunctionRule *R = FD ? Rules.autocastRule(qualifiedName(FD)) : nullptr;
  if (!R || R->Role != AutocastRole::Enable)
    return false;
  return R->EnabledArg < 0 || (unsigned)R->EnabledArg >= CE->getNumArgs() ||
         boolConstant(CE->getArg(R->EnabledArg), Ctx) != std::optional<bool>(false);
}

bool declaresEnablingGuard(const VarDecl *VD, const RuleSet &Rules) {
  bool Disables = false;
  return VD && isAutocastGuardClass(VD->getType()->getAsCXXRecordDecl(), Rules, &Disables) && !Disables;
}

} // namespace ampmigrate
