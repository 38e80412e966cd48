// The clips of the grads: which clip_grad_norm_/clip_grad_value_ calls carry over to the explicit
// grads, and in which form (planClips).
#include "StepConcerns.h"
#include "StepEditWriter.h"
#include "Naming.h"

using namespace clang;

namespace ampmigrate {

namespace {

/// The parameter list an optimizer variable or member is constructed from, where the construction
/// is in sight: `SGD opt(model->parameters(), ...)`, `auto opt = std::make_shared<Adam>(params,
/// ...)`, a member's default initialiser, a constructor's member initialiser or a top-level
/// assignment in a constructor's body (`opt_ = std::make_unique<SGD>(...)`). Null otherwise.
const Expr *constructionParams(const Expr *Init) {
  for (int Guard = 0; Init && Guard < 6; ++Guard) {
    Init = Init->IgnoreImplicit();
    if (const auto *EWC = dyn_cast<ExprWithCleanups>(Init)) {
      Init = EWC->getSubExpr();
      continue;
    }
    if (const auto *New = dyn_cast<CXXNewExpr>(Init)) {
      Init = New->getInitializer();
      continue;
    }
    if (const auto *CE = dyn_cast<CXXConstructExpr>(Init)) {
      if (CE->getNumArgs() == 1 && CE->getConstructor()->isCopyOrMoveConstructor()) {
        Init = CE->getArg(0);
        continue;
      }
      return CE->getNumArgs() ? CE->getArg(0) : nullptr;
    }
    if (const auto *CE = dyn_cast<CallExpr>(Init)) {
      const auto *FD = CE->getDirectCallee();
      if (FD && FD->getIdentifier() &&
          (FD->getName() == "make_shared" || FD->getName() == "make_unique") && CE->getNumArgs())
        return CE->getArg(0);
      return nullptr;
    }
    return nullptr;
  }
  return nullptr;
}

const Expr *optimizerParamsArg(const ValueDecl *D) {
  if (const auto *VD = dyn_cast_or_null<VarDecl>(D))
    return isa<ParmVarDecl>(VD) ? nullptr : constructionParams(VD->getInit());
  const auto *FD = dyn_cast_or_null<FieldDecl>(D);
  if (!FD)
    return nullptr;
  if (FD->hasInClassInitializer())
    if (const Expr *P = constructionParams(FD->getInClassInitializer()))
      return P;
  const auto *RD = dyn_cast<CXXRecordDecl>(FD->getParent());
  if (!RD || !RD->hasDefinition())
    return nullptr;
  for (const CXXConstructorDecl *Ctor : RD->ctors()) {
    for (const CXXCtorInitializer *I : Ctor->inits())
      if (I->isWritten() && I->getMember() == FD)
        if (const Expr *P = constructionParams(I->getInit()))
          return P;
    const auto *Body = dyn_cast_or_null<CompoundStmt>(Ctor->getBody());
    for (const Stmt *S : Body ? Body->body() : llvm::ArrayRef<Stmt *>()) {
      const Expr *L = nullptr, *R = nullptr;
      if (const auto *EWC = dyn_cast<ExprWithCleanups>(S))
        S = EWC->getSubExpr();
      if (const auto *BO = dyn_cast<BinaryOperator>(S); BO && BO->isAssignmentOp())
        L = BO->getLHS(), R = BO->getRHS();
      else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(S);
               OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2)
        L = OC->getArg(0), R = OC->getArg(1);
      const auto *ME = L ? dyn_cast<MemberExpr>(L->IgnoreParenImpCasts()) : nullptr;
      if (ME && ME->getMemberDecl() == FD)
        if (const Expr *P = constructionParams(R))
          return P;
    }
  }
  return nullptr;
}


/// Whether two parameter-list expressions name the same object's parameters():
/// `model->head->parameters()` in an optimizer's construction and in a clip.
bool sameParameterList(const Expr *A, const Expr *B, const ASTContext &Ctx) {
  const CXXMemberCallExpr *CA = parametersCall(A), *CB = parametersCall(B);
  if (!CA || !CB || CA->getMethodDecl()->getName() != CB->getMethodDecl()->getName())
    return false;
  ObjectRef OA = resolveObject(CA->getImplicitObjectArgument());
  ObjectRef OB = resolveObject(CB->getImplicitObjectArgument());
  if (OA || OB)
    return OA == OB;
  // Members of members (`model_->head`, unnamed by resolveObject): the same spelling.
  auto Spelled = [&](const CXXMemberCallExpr *C) {
    std::string T = StepFinder::textOf(Ctx, C->getImplicitObjectArgument()->getSourceRange());
    llvm::erase_if(T, [](char Ch) { return Ch == ' ' || Ch == '\n' || Ch == '\t'; });
    return T;
  };
  std::string SA = Spelled(CA);
  return !SA.empty() && SA == Spelled(CB);
}

/// The calls of one function in the translation unit's own code (system headers are skipped),
/// and whether the function is also named other than by a call (its address taken, handed on):
/// then its calls in sight are not all of its callers.
class CallSiteFinder : public AnalysedBodyVisitor {
public:
  CallSiteFinder(const FunctionDecl *Target, const SourceManager &SM)
      : Target(Target->getCanonicalDecl()), SM(SM) {
    WrapsDecls = true;
  }
  std::vector<const CallExpr *> Calls;
  bool NamedOtherwise = false;

protected:
  bool traverseDecl(Decl *D) override {
    if (!isa<TranslationUnitDecl>(D) && D->getLocation().isValid() &&
        SM.isInSystemHeader(SM.getExpansionLoc(D->getLocation())))
      return true;
    return descend(D);
  }
  bool visitStmt(Stmt *S) override {
    if (const auto *CE = dyn_cast<CallExpr>(S)) {
      if (const FunctionDecl *FD = CE->getDirectCallee(); FD && FD->getCanonicalDecl() == Target) {
        Calls.push_back(CE);
        CalleeExprs.insert(CE->getCallee()->IgnoreParenImpCasts());
      }
      return true;
    }
    const ValueDecl *Named = nullptr;
    if (const auto *DRE = dyn_cast<DeclRefExpr>(S))
      Named = DRE->getDecl();
    else if (const auto *ME = dyn_cast<MemberExpr>(S))
      Named = ME->getMemberDecl();
    // The callee of a call is visited after the call itself: a name that is not one is a use.
    if (const auto *FD = dyn_cast_or_null<FunctionDecl>(Named);
        FD && FD->getCanonicalDecl() == Target && !CalleeExprs.count(cast<Expr>(S)))
      NamedOtherwise = true;
    return true;
  }

private:
  const FunctionDecl *Target;
  const SourceManager &SM;
  llvm::SmallPtrSet<const Expr *, 8> CalleeExprs;
};

/// The variable an argument names (`opt`, `*opt`, `std::ref(opt)` is not followed).
const VarDecl *argumentVariable(const Expr *Arg) {
  Arg = Arg->IgnoreParenImpCasts();
  if (const auto *UO = dyn_cast<UnaryOperator>(Arg); UO && UO->getOpcode() == UO_Deref)
    Arg = UO->getSubExpr()->IgnoreParenImpCasts();
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Arg);
      OC && OC->getOperator() == OO_Star && OC->getNumArgs() == 1)
    Arg = OC->getArg(0)->IgnoreParenImpCasts();
  const auto *DRE = dyn_cast<DeclRefExpr>(Arg);
  return DRE ? dyn_cast<VarDecl>(DRE->getDecl()) : nullptr;
}

} // namespace

namespace {

/// Each clip of the step: refused, or its form and names recorded in Out.
class ClipPlanner : public StepConcern {
public:
  ClipPlanner(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers,
              llvm::StringSet<> &Names, std::vector<ClipEdit> &Out)
      : StepConcern(C, F, Blockers), Names(Names), Out(Out) {}

  void checkClips();

private:
  llvm::StringSet<> &Names;
  std::vector<ClipEdit> &Out;

  /// `OfOptimizer` is set when the parameters are named through one of the step's optimizers.
  bool paramsOfStep(const clang::Expr *Params, const ScalerCall **OfOptimizer = nullptr) const;
  /// Why a clip of a model's parameters would cover more than the optimizer's, where seen.
  std::optional<std::string> clipWiderThanOptimizer(const clang::Expr *Params) const;
  /// The step's optimizer whose construction is not in sight and may hold less than the model
  /// whose parameters `Params` names (null when none), and why.
  const ScalerCall *optimizerUnseen(const clang::Expr *Params, std::string &Why) const;
  /// Why an optimizer whose construction is not in sight may hold less than the clipped model:
  /// null when every call of the function in this translation unit passes an optimizer built
  /// from the parameters of the model it passes.
  std::optional<std::string> optimizerNotShown(const clang::Expr *Params, const ScalerCall &S,
                                               const ObjectRef &Clipped) const;
  /// Why a clip of `optimizer.parameters()` (its first group) would cover more once migrated.
  std::optional<std::string> clipOfFirstGroup(const clang::Expr *Params, const ScalerCall &Of) const;
};

} // namespace

ConcernPlan<std::vector<ClipEdit>> planClips(const StepContext &C, const StepFacts &F, llvm::StringSet<> &Names) {
  ConcernPlan<std::vector<ClipEdit>> P;
  ClipPlanner(C, F, P.Blockers, Names, P.Plan).checkClips();
  return P;
}

bool ClipPlanner::paramsOfStep(const Expr *Params, const ScalerCall **OfOptimizer) const {
  // `model->parameters()`, `model.parameters()` of a model of this step, or the optimizer's,
  // through temporaries, copies and a local list initialised from it (parametersCall).
  const CXXMemberCallExpr *MC = parametersCall(Params);
  if (!MC || MC->getMethodDecl()->getName() != "parameters")
    return false;
  const Expr *Obj = MC->getImplicitObjectArgument()->IgnoreParenImpCasts();
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Obj); OC && OC->getNumArgs())
    Obj = OC->getArg(0)->IgnoreParenImpCasts();
  const ValueDecl *D = nullptr;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(Obj))
    D = DRE->getDecl();
  else if (const auto *ME = dyn_cast<MemberExpr>(Obj))
    D = ME->getMemberDecl();
  else if (isa<CXXThisExpr>(Obj))
    return llvm::any_of(T.Forwards, [](const ForwardCall *F) { return F->Model.IsThis; });
  // The very list an optimizer was built from (`SGD opt(model->head->parameters())`, a clip of
  // `model->head->parameters()`): that optimizer's parameters.
  auto BuiltFromIt = [&] {
    for (const ScalerCall *S : T.Steps)
      if (const Expr *Built = optimizerParamsArg(S->Optimizer.Decl);
          Built && sameParameterList(Built, Params, Ctx)) {
        if (OfOptimizer)
          *OfOptimizer = S;
        return true;
      }
    return false;
  };
  if (!D)
    return BuiltFromIt();
  if (llvm::any_of(T.Forwards, [&](const ForwardCall *Fwd) { return Fwd->Model.Decl == D; }))
    return true;
  if (F.CalleeFA && llvm::any_of(F.CalleeFA->Forwards, [&](const ForwardCall &Fwd) { return F.callerModel(Fwd.Model) == D; }))
    return true;
  // A step split over two methods: the model the scaling half runs (a member of the class).
  if (F.Split && llvm::any_of(F.Split->ScalingHalf->Forwards, [&](const ForwardCall *Fwd) { return Fwd->Model.Decl == D; }))
    return true;
  for (const ScalerCall *S : T.Steps)
    if (S->Optimizer.Decl == D) {
      if (OfOptimizer)
        *OfOptimizer = S;
      return true;
    }
  return BuiltFromIt();
}

std::optional<std::string> ClipPlanner::clipOfFirstGroup(const Expr *Params,
                                                        const ScalerCall &Of) const {
  // libtorch's Optimizer::parameters() is its first parameter group's list; the explicit grads
  // (parameters_of) are every group's. An optimizer built from groups clips more once migrated.
  const CXXMemberCallExpr *MC = parametersCall(Params);
  if (!MC || !(resolveObject(MC->getImplicitObjectArgument()) == Of.Optimizer))
    return std::nullopt;
  const Expr *Built = optimizerParamsArg(Of.Optimizer.Decl);
  if (!Built || parametersCall(Built) || returnsTensors(Built->getType(), Rules))
    return std::nullopt;
  return "the clip covers `" + C.text(Params->getSourceRange()) + "`, which libtorch's Optimizer "
         "gives as its first parameter group only, and `" + C.text(Of.OptimizerArg->getSourceRange()) +
         "` is built from parameter groups (`" + C.text(Built->getSourceRange()) + "`, " +
         C.where(Built->getBeginLoc()) + "): the explicit grads are every group's, so the migrated "
         "clip would cover the other groups too; migrate this step by hand";
}

std::optional<std::string> ClipPlanner::clipWiderThanOptimizer(const Expr *Params) const {
  // The explicit grads are the optimizer's parameters'. A clip of the model's parameters is the
  // same clip only where the optimizer holds the model's parameters: one built on a part of the
  // model (`SGD opt(model->head->parameters())`) leaves the others' grads out of the norm, where
  // clip_grad_norm_ counted them (scaled: unscale_ only unscaled the optimizer's).
  ObjectRef Clipped = parametersOwner(Params);
  if (!Clipped)
    return std::nullopt;
  for (const ScalerCall *S : T.Steps) {
    const Expr *Built = optimizerParamsArg(S->Optimizer.Decl);
    if (!Built)
      continue;
    const CXXMemberCallExpr *Call = parametersCall(Built);
    if (!Call)
      continue;
    ObjectRef Holds = resolveObject(Call->getImplicitObjectArgument());
    if (!Holds) {
      // A member of a member (`model_->head`, which resolveObject leaves unnamed): a part of the
      // clipped model when reached from it.
      const Expr *Obj = Call->getImplicitObjectArgument()->IgnoreParenImpCasts();
      if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Obj);
          OC && OC->getOperator() == OO_Arrow && OC->getNumArgs())
        Obj = OC->getArg(0)->IgnoreParenImpCasts();
      const auto *ME = dyn_cast<MemberExpr>(Obj);
      if (!ME || !isa<FieldDecl>(ME->getMemberDecl()) || !(resolveObject(ME->getBase()) == Clipped))
        continue;
    } else if (isa_and_nonnull<ParmVarDecl>(Holds.Decl) || Holds == Clipped) {
      // A constructor's parameter (`Trainer(Net m) : model_(m), opt_(m->parameters())`) may well
      // be the model the clip names through a member: not known to differ.
      continue;
    }
    return "the clip covers `" + C.text(Params->getSourceRange()) + "`, but the optimizer `" +
           C.text(S->OptimizerArg->getSourceRange()) + "` holds `" + C.text(Built->getSourceRange()) +
           "` (" + C.where(Built->getBeginLoc()) + "): the explicit grads are the optimizer's "
           "parameters', so the migrated clip would leave the other parameters' gradients out of "
           "the norm that clip_grad_norm_ counts them in (still scaled: unscale_ only unscales "
           "the optimizer's); clip the optimizer's parameters if that is what is meant, or "
           "migrate this step by hand";
  }
  return std::nullopt;
}

const ScalerCall *ClipPlanner::optimizerUnseen(const Expr *Params, std::string &Why) const {
  ObjectRef Clipped = parametersOwner(Params);
  if (!Clipped)
    return nullptr;
  for (const ScalerCall *S : T.Steps)
    if (!optimizerParamsArg(S->Optimizer.Decl))
      if (std::optional<std::string> W = optimizerNotShown(Params, *S, Clipped)) {
        Why = *W;
        return S;
      }
  return nullptr;
}

std::optional<std::string> ClipPlanner::optimizerNotShown(const Expr *Params, const ScalerCall &S,
                                                          const ObjectRef &Clipped) const {
  // The optimizer and the model are parameters of one function: each caller in sight shows
  // what it passes (`SGD opt(net->parameters()); train(net, opt);`).
  const auto *OptParm = dyn_cast_or_null<ParmVarDecl>(S.Optimizer.Decl);
  const auto *ModelParm = dyn_cast_or_null<ParmVarDecl>(Clipped.Decl);
  const auto *Fn = OptParm ? dyn_cast<FunctionDecl>(OptParm->getDeclContext()) : nullptr;
  std::string Where = "it is not constructed in this translation unit";
  if (Fn && ModelParm && !S.Optimizer.Base && !Clipped.Base &&
      ModelParm->getDeclContext() == OptParm->getDeclContext()) {
    CallSiteFinder Callers(Fn, SM);
    Callers.walk(Ctx.getTranslationUnitDecl());
    const unsigned Shift = isa<CXXMethodDecl>(Fn) && !isa<CXXConstructorDecl>(Fn) ? 1 : 0;
    auto Shows = [&](const CallExpr *CE) {
      unsigned Skip = isa<CXXOperatorCallExpr>(CE) ? Shift : 0;
      unsigned OI = OptParm->getFunctionScopeIndex() + Skip, MI = ModelParm->getFunctionScopeIndex() + Skip;
      if (OI >= CE->getNumArgs() || MI >= CE->getNumArgs())
        return false;
      const VarDecl *Opt = argumentVariable(CE->getArg(OI));
      const Expr *Built = Opt && !isa<ParmVarDecl>(Opt) ? constructionParams(Opt->getInit()) : nullptr;
      const CXXMemberCallExpr *Call = Built ? parametersCall(Built) : nullptr;
      ObjectRef Holds = Call ? resolveObject(Call->getImplicitObjectArgument()) : ObjectRef();
      ObjectRef Passed = resolveObject(CE->getArg(MI));
      return Call && Call->getMethodDecl()->getName() == "parameters" && Holds && !Holds.Base &&
             Holds == Passed;
    };
    if (!Callers.Calls.empty() && !Callers.NamedOtherwise && llvm::all_of(Callers.Calls, Shows))
      return std::nullopt;
    Where = Callers.Calls.empty() ? "no call of `" + Fn->getNameAsString() + "` in this translation unit shows it"
            : Callers.NamedOtherwise ? "`" + Fn->getNameAsString() + "` is also named other than by a call"
                                     : "a call of `" + Fn->getNameAsString() + "` in this translation unit "
                                       "passes an optimizer not built from the model's parameters()";
  } else if (OptParm) {
    Where = "it is a parameter of the function";
  }
  return "the clip covers `" + C.text(Params->getSourceRange()) + "`, and what the optimizer `" +
         C.text(S.OptimizerArg->getSourceRange()) + "` holds is not in sight (" + Where +
         "): the explicit grads are the optimizer's parameters', so the migrated clip's norm would "
         "leave out every parameter of the model the optimizer does not hold, which "
         "clip_grad_norm_ counts; clip `" + C.text(S.OptimizerArg->getSourceRange()) +
         ".parameters()` if the optimizer holds the whole model, or migrate this step by hand";
}

void ClipPlanner::checkClips() {
  for (const ClipCall *Clipping : T.Clips) {
    unsigned O = C.off(Clipping->Call->getBeginLoc());
    ObjectRef Of = T.stepsOptimizer(Clipping->ParamsOwner) ? Clipping->ParamsOwner : ObjectRef();
    if (!T.Unscaled && !T.Plain.contains(O) && !T.unscaledBefore(O, Of, SM)) {
      block(Clipping->Call->getBeginLoc(), "clipping still-scaled gradients (no unscale_ before it); "
                                    "fix the order first (amp-clip-before-unscale)");
      continue;
    }
    if (!Clipping->NormIsL2) {
      block(Clipping->Call->getBeginLoc(), "clip norm type " + Clipping->NormText +
                                        " is not L2; clip_by_global_norm only does the L2 norm");
      continue;
    }
    if (!Clipping->ErrorIfNonfinite.empty()) {
      block(Clipping->Call->getBeginLoc(),
            "the clip is called with error_if_nonfinite = `" + Clipping->ErrorIfNonfinite +
                "`: it throws when the total norm is not finite, and " + Tgt.Clip +
                " does not; drop the check or migrate this step by hand");
      continue;
    }
    // A user rule may name an argument this call does not have (a rule for another overload).
    unsigned Arity = Clipping->Call->getNumArgs();
    const bool ByValue = Clipping->Rule->byValue();
    const int AmountArg = ByValue ? Clipping->Rule->ClipValueArg : Clipping->Rule->MaxNormArg;
    if ((unsigned)Clipping->Rule->ParamsArg >= Arity || (unsigned)AmountArg >= Arity) {
      block(Clipping->Call->getBeginLoc(),
            "the clip rule for '" + Clipping->Rule->Function + "' names argument " +
                std::to_string(std::max(Clipping->Rule->ParamsArg, AmountArg)) +
                " but this call has " + std::to_string(Arity) + " argument(s); fix the rule");
      continue;
    }
    if (ByValue && Tgt.ClipValueInPlace.empty()) {
      block(Clipping->Call->getBeginLoc(), "a clip by value, and the rules name no "
                                    "target.clip-value-in-place to carry it over to the grads");
      continue;
    }
    const Expr *Params = Clipping->Call->getArg(Clipping->Rule->ParamsArg);
    const ScalerCall *OfOptimizer = nullptr;
    if (!paramsOfStep(Params, &OfOptimizer)) {
      block(Params->getBeginLoc(),
            "the clip covers `" + C.text(Params->getSourceRange()) + "`, which this translation "
            "unit does not show to be the model's or the optimizer's parameters (a list the "
            "optimizer is built from counts where that construction is in sight); the explicit "
            "grads cover the optimizer's parameters, so the clip could act on other gradients than "
            "the original's: migrate this step by hand");
      continue;
    }
    if (!OfOptimizer)
      if (std::optional<std::string> Why = clipWiderThanOptimizer(Params)) {
        block(Params->getBeginLoc(), *Why);
        continue;
      }
    // An optimizer not seen built: the clip carries over with a check that it holds the model.
    std::string HoldsWhy;
    const ScalerCall *Unseen = OfOptimizer || ByValue ? nullptr : optimizerUnseen(Params, HoldsWhy);
    if (Unseen && Tgt.CheckHolds.empty()) {
      block(Params->getBeginLoc(), HoldsWhy + " (the rules' target names no check-holds)");
      continue;
    }
    if (Unseen && Clipping->Statement && !isa_and_nonnull<CompoundStmt>(PM.getParent(Clipping->Statement))) {
      block(Params->getBeginLoc(), HoldsWhy + " (the check that it does would go before the clip's "
                                   "statement, which is the body of a statement without braces)");
      continue;
    }
    if (OfOptimizer && !Tgt.ParametersOf.empty())
      if (std::optional<std::string> Why = clipOfFirstGroup(Params, *OfOptimizer)) {
        block(Params->getBeginLoc(), *Why);
        continue;
      }
    std::string G = F.GradsName;
    if (!F.PerOptimizer.empty()) {
      if (!OfOptimizer) {
        block(Params->getBeginLoc(), "with several optimizers, clipping a model's parameters: "
                                     "which optimizer's grads to clip is unknown; clip "
                                     "optimizer.parameters() or migrate by hand");
        continue;
      }
      G = F.gradsFor(OfOptimizer->Optimizer);
    }
    if (!Clipping->Statement || Clipping->Call->getBeginLoc().isMacroID()) {
      block(Clipping->Call->getBeginLoc(), "the clip call is not a statement of its own");
      continue;
    }
    ClipEdit Clip;
    Clip.Grads = G;
    if (Unseen)
      Clip.HoldsCheck = Tgt.CheckHolds + "(" + C.text(Unseen->OptimizerArg->getSourceRange()) + ", " +
                        C.text(Params->getSourceRange()) + ");";
    Clip.MaxNorm = C.argumentText(Clipping->Call, AmountArg);
    Clip.Indent = C.indentAt(C.off(Clipping->Statement->getBeginLoc()));
    CharSourceRange SR = C.stmtRange(Clipping->Statement);
    Clip.StmtBegin = SM.getFileOffset(SR.getBegin());
    Clip.StmtEnd = SM.getFileOffset(SR.getEnd());
    if (ByValue) {
      if (Clipping->ResultUsed) { // libtorch's returns nothing: a user rule's function that returns something
        block(Clipping->Call->getBeginLoc(), "the result of the clip by value is used; " +
                                          Tgt.ClipValueInPlace + " returns nothing");
        continue;
      }
      Clip.How = ClipEdit::Form::ByValue;
      Out.push_back(Clip);
      continue;
    }
    if (!Clipping->ResultUsed) {
      Out.push_back(Clip);
      continue;
    }
    // The returned norm is used: the norm of the unscaled grads before clipping (the in-place
    // clip returns it; otherwise it is computed before the clip).
    const auto *DS = dyn_cast<DeclStmt>(Clipping->Statement);
    const VarDecl *VD = DS && DS->isSingleDecl() ? dyn_cast<VarDecl>(DS->getSingleDecl()) : nullptr;
    if (VD && VD->getInit() && VD->getInit()->IgnoreImplicit() == Clipping->Call) {
      if (!C.fileRange(Clipping->Call->getSourceRange(), Clip.CallBegin, Clip.CallEnd)) {
        block(Clipping->Call->getBeginLoc(), "the clip call is inside a macro body");
        continue;
      }
      Clip.How = ClipEdit::Form::NormInDeclaration;
      Out.push_back(Clip);
      continue;
    }
    if (Tgt.ClipInPlace.empty()) {
      // Out of place: the norm is computed in a statement of its own before the clip's.
      const Stmt *Parent = PM.getParent(Clipping->Statement);
      if (Parent && !isa<CompoundStmt>(Parent)) {
        block(Clipping->Call->getBeginLoc(), "the clip's statement is the body of a statement without "
                                      "braces; add them, or migrate by hand");
        continue;
      }
      Clip.NormVar = freshName(Names, "grad_norm");
    }
    if (!C.fileRange(Clipping->Call->getSourceRange(), Clip.CallBegin, Clip.CallEnd)) {
      block(Clipping->Call->getBeginLoc(), "the clip call is inside a macro body");
      continue;
    }
    Clip.How = ClipEdit::Form::NormBefore;
    Out.push_back(Clip);
  }
}

void StepEditWriter::writeClips() const {
  for (const ClipEdit &C : D.Clips) {
    const std::string &G = C.Grads;
    // In place, as clip_grad_norm_ acted on `.grad`: the grads keep their memory, and the norm
    // it returns is the one the clip computed (the rule's out-of-place form otherwise).
    const bool InPlace = !Tgt.ClipInPlace.empty();
    std::string Clip = InPlace ? Tgt.ClipInPlace + "(" + G + ", " + C.MaxNorm + ");"
                               : G + " = " + Tgt.Clip + "(" + G + ", " + C.MaxNorm + ");";
    std::string Norm = Tgt.GlobalNorm + "(" + G + ").item<double>()";
    std::string NormAndClip = Tgt.ClipInPlace + "(" + G + ", " + C.MaxNorm + ").item<double>()";
    if (!C.HoldsCheck.empty())
      Out.insert(C.StmtBegin, C.HoldsCheck + "\n" + C.Indent);
    switch (C.How) {
    case ClipEdit::Form::Statement:
      Out.replace(C.StmtBegin, C.StmtEnd - C.StmtBegin, Clip);
      break;
    case ClipEdit::Form::ByValue:
      Out.replace(C.StmtBegin, C.StmtEnd - C.StmtBegin,
                  Tgt.ClipValueInPlace + "(" + G + ", " + C.MaxNorm + ");");
      break;
    case ClipEdit::Form::NormInDeclaration:
      if (InPlace) {
        Out.replace(C.CallBegin, C.CallEnd - C.CallBegin, NormAndClip);
        break;
      }
      Out.replace(C.CallBegin, C.CallEnd - C.CallBegin, Norm);
      Out.insert(C.StmtEnd, "\n" + C.Indent + Clip);
      break;
    case ClipEdit::Form::NormBefore: {
      // In place, the call becomes the clip returning the norm, where it was: under a braceless
      // `if (max_norm > 0)` too, and evaluated when the original was.
      if (InPlace) {
        Out.replace(C.CallBegin, C.CallEnd - C.CallBegin, NormAndClip);
        break;
      }
      std::string Before = "const double " + C.NormVar + " = " + Norm + ";\n" + C.Indent + Clip +
                           "\n" + C.Indent;
      Out.insert(C.StmtBegin, Before);
      Out.replace(C.CallBegin, C.CallEnd - C.CallBegin, C.NormVar);
      break;
    }
    }
  }
}

} // namespace ampmigrate
