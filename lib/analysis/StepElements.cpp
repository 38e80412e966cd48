// The elements of a function: autocast calls, clips, scaler calls, optimizer steps, forwards, backwards.
#include "FunctionAnalyser.h"

using namespace clang;

namespace ampmigrate {

std::vector<PendingGuard> ElementFinder::run() {
  for (const CallExpr *CE : Body.Calls)
    classifyCall(CE);
  for (const DeclStmt *DS : Body.Decls)
    classifyDecl(DS);
  findImplicitBackwards();
  findPlainBackwards();
  return std::move(Guards);
}

bool ElementFinder::isOnly(const Stmt *S, const Expr *Call) {
  if (const auto *E = dyn_cast<Expr>(S))
    return strip(E) == Call || E->IgnoreImplicit() == Call;
  return false;
}

void ElementFinder::classifyCall(const CallExpr *CE) {
  const FunctionDecl *Callee = CE->getDirectCallee();
  if (!Callee)
    return;
  // A function declared inside a function body (a lambda's call operator, a local class's
  // method) has no name a rule can spell; its qualified name costs a walk of every enclosing
  // context (quadratic in nested lambdas), so it is not computed.
  std::string QN = Callee->getParentFunctionOrMethod() ? std::string() : qualifiedName(Callee);
  if (const AutocastFunctionRule *R = Rules.autocastRule(QN)) {
    addAutocastCall(CE, R);
    return;
  }
  // A call of a thin setter (`mp.set_enabled(true)`, its body `at::autocast::set_enabled(e)`)
  // switches autocast as the call it wraps does, with the caller's constant.
  if (!isa<CXXOperatorCallExpr>(CE) && Callee != FD)
    if (std::optional<AutocastFunctionRule> R = forwardingSetterRule(Callee, Rules)) {
      FA.SetterRules.push_back(std::make_shared<const AutocastFunctionRule>(std::move(*R)));
      addAutocastCall(CE, FA.SetterRules.back().get());
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

std::string ElementFinder::deviceName(int64_t DeviceType) {
  if (DeviceType == 0)
    return "cpu";
  if (DeviceType == 1)
    return "cuda";
  return "device-type-" + std::to_string(DeviceType);
}

void ElementFinder::addAutocastCall(const CallExpr *CE, const AutocastFunctionRule *R) {
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

bool ElementFinder::macroStatementIsOnlyAutocast(const Stmt *S) const {
  if (!S->getBeginLoc().isMacroID())
    return false;
  AutocastCallCollector C(Rules);
  C.walk(S);
  BodyCollector All;
  All.walk(S);
  return !C.Found.empty() && C.Found.size() == All.Calls.size();
}

bool ElementFinder::forwardsCallersValue(const Expr *Arg) const {
  const auto *DRE = dyn_cast<DeclRefExpr>(strip(Arg));
  if (!DRE || !isa<ParmVarDecl>(DRE->getDecl()))
    return false;
  BodyCollector BC;
  BC.walk(FD->getBody());
  if (!BC.Lambdas.empty())
    return false;
  auto IsAutocastCall = [&](const Stmt *S) {
    const auto *CE = dyn_cast<CallExpr>(S);
    const FunctionDecl *Callee = CE ? CE->getDirectCallee() : nullptr;
    return Callee && Rules.autocastRule(qualifiedName(Callee));
  };
  // A setter: what runs before the call (logging, recording the value) runs without it; every
  // call after it is an autocast call or part of one's arguments (a device converted from a
  // string), or records an error in a handler (FFI entry points wrap the setter in try/catch).
  // Nothing of this function runs under the value, so the scope, if any, is the caller's.
  unsigned At = offsetOf(Arg->getBeginLoc());
  return llvm::all_of(BC.Calls, [&](const CallExpr *CE) {
    if (offsetOf(CE->getEndLoc()) < At && !inLoop(CE))
      return true;
    for (const Stmt *P = CE; P; P = PM.getParent(P))
      if (IsAutocastCall(P) || isa<CXXCatchStmt>(P))
        return true;
    return false;
  });
}

bool ElementFinder::inLoop(const Stmt *S) const {
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
    if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
      return true;
  return false;
}

bool ElementFinder::isRestoreArgument(const Expr *Arg) const {
  const auto *DRE = dyn_cast<DeclRefExpr>(strip(Arg));
  if (!DRE)
    return false;
  const auto *VD = dyn_cast<VarDecl>(DRE->getDecl());
  if (!VD || !VD->getInit())
    return false;
  AutocastCallCollector C(Rules);
  C.walk(VD->getInit());
  return llvm::any_of(C.Found, [](auto &P) { return P.second->Role == AutocastRole::Query; });
}

void ElementFinder::addClip(const CallExpr *CE, const ClipFunctionRule *R) {
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
        C.NormText = sourceTextOf(Ctx, N->getSourceRange());
    }
  }
  if (R->ErrorIfNonfiniteArg >= 0 && (unsigned)R->ErrorIfNonfiniteArg < CE->getNumArgs()) {
    const Expr *E = CE->getArg(R->ErrorIfNonfiniteArg);
    std::optional<bool> V = boolConstant(E, Ctx);
    if (!isa<CXXDefaultArgExpr>(E) && !(V && !*V))
      C.ErrorIfNonfinite = sourceTextOf(Ctx, E->getSourceRange());
  }
  FA.Clips.push_back(C);
}

void ElementFinder::classifyMemberCall(const CXXMemberCallExpr *MC) {
  const CXXMethodDecl *MD = MC->getMethodDecl();
  if (!MD || !MD->getIdentifier())
    return;
  const CXXRecordDecl *Class = MD->getParent();
  StringRef Name = MD->getName();
  if (isScalerClass(Class, Rules)) {
    addScalerCall(MC, MD);
    return;
  }
  if (methodNamed(MD, Rules.ScalerMethods.Scale) && isUnknownScalerPort(Class, Rules)) {
    FA.UnknownScalerScales.push_back(MC);
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
  F.UncastTensors = holdsUncastTensors(MC->getType(), Rules);
    if (F.Model)
      FA.Forwards.push_back(F);
  }
}

const Expr *ElementFinder::receiverExpr(const Expr *Obj) {
  Obj = strip(Obj);
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Obj);
      OC && OC->getOperator() == OO_Arrow && OC->getNumArgs() >= 1)
    return strip(OC->getArg(0));
  return Obj;
}

void ElementFinder::classifyCallOperator(const CXXOperatorCallExpr *OC) {
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
  F.UncastTensors = holdsUncastTensors(OC->getType(), Rules);
  if (F.Model)
    FA.Forwards.push_back(F);
}

void ElementFinder::addOptimizerStep(const CXXMemberCallExpr *MC) {
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

void ElementFinder::addScalerCall(const CXXMemberCallExpr *MC, const CXXMethodDecl *MD) {
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

void ElementFinder::classifyDecl(const DeclStmt *DS) {
  for (const Decl *D : DS->decls()) {
    const auto *VD = dyn_cast<VarDecl>(D);
    if (!VD || !VD->hasLocalStorage())
      continue;
    const CXXRecordDecl *RD = VD->getType()->getAsCXXRecordDecl();
    if (!RD || nameIn(RD, Rules.Ignore))
      continue;
    if (const auto *Holder = dyn_cast<ClassTemplateSpecializationDecl>(RD);
        Holder && Holder->getTemplateArgs().size() >= 1 &&
        llvm::is_contained({"optional", "unique_ptr", "shared_ptr"}, Holder->getName()) &&
        Holder->getTemplateArgs()[0].getKind() == TemplateArgument::Type &&
        isAutocastGuardClass(Holder->getTemplateArgs()[0].getAsType()->getAsCXXRecordDecl(), Rules,
                             nullptr)) {
      FA.HeldGuards.push_back(VD);
      continue;
    }
    bool Disables = false;
    if (!isAutocastGuardClass(RD, Rules, &Disables))
      continue;
    // One class for both directions (`Guard on(true); ... { Guard off(false); ... }`).
    if (!Disables && VD->getInit())
      if (auto On = guardUseTurnsOn(dyn_cast<CXXConstructExpr>(strip(VD->getInit())), Rules))
        Disables = !*On;
    Guards.push_back({VD, DS, Disables});
  }
}

const ScalerCall *ElementFinder::scaleCallAt(const Expr *E) const {
  E = strip(E);
  for (const ScalerCall &C : FA.ScalerCalls)
    if (C.Kind == ScalerCall::Method::Scale && C.Call == E)
      return &C;
  return nullptr;
}

void ElementFinder::findImplicitBackwards() {
  // Walk every backward() on a tensor and trace its object to a scaler's scale().
  BodyCollector BC;
  BC.walk(FD->getBody());
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
    if (!B.Scale)
      continue;
    // The loss scale() is given: `scale(loss)` or `scale(loss / accum)` (for a scope in the
    // function that computes it, CalleeScope.cpp).
    if (!B.ScaleStmt && B.Scale->Call->getNumArgs() >= 1) {
      const Expr *Arg = B.Scale->Call->getArg(0);
      const auto *R = dyn_cast<DeclRefExpr>(strip(Arg));
      B.LossVar = R ? dyn_cast<VarDecl>(R->getDecl()) : scaledLossVariable(Arg);
    }
    FA.Backwards.push_back(B);
  }
}

/// `s.total`, `s.parts.main` of tensor type, `s` a local variable reached through `.` only: the
/// local struct that holds the tensor; null otherwise.
static const VarDecl *localStructOf(const MemberExpr *ME, const RuleSet &Rules) {
  if (!isTensorType(ME->getType(), Rules) || !isa<FieldDecl>(ME->getMemberDecl()))
    return nullptr;
  const Expr *Base = ME;
  while (const auto *M = dyn_cast<MemberExpr>(Base)) {
    if (M->isArrow() || !isa<FieldDecl>(M->getMemberDecl()))
      return nullptr;
    Base = M->getBase()->IgnoreParenImpCasts();
  }
  const auto *DRE = dyn_cast<DeclRefExpr>(Base);
  const auto *V = DRE ? dyn_cast<VarDecl>(DRE->getDecl()) : nullptr;
  return V && V->isLocalVarDecl() ? V : nullptr;
}

/// The loss variable of `(loss / accum).backward()`, `(loss * w).backward()`: arithmetic of one
/// local tensor variable with numbers (literals, variables that are not tensors), or of one tensor
/// field of a local struct (`losses.total / k`: the struct's variable). Null for anything else (a
/// call, two tensors).
const VarDecl *ElementFinder::scaledLossVariable(const Expr *E) const {
  struct Walk : AstVisitor {
    const RuleSet &Rules;
    explicit Walk(const RuleSet &R) : Rules(R) {}
    const VarDecl *Tensor = nullptr;
    bool Other = false;
    bool visitStmt(Stmt *S) override {
      if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(S)) {
        if (!llvm::is_contained({OO_Slash, OO_Star, OO_Plus, OO_Minus}, OC->getOperator()) ||
            OC->getNumArgs() != 2)
          Other = true;
      } else if (const auto *BO = dyn_cast<BinaryOperator>(S)) {
        if (!BO->isMultiplicativeOp() && !BO->isAdditiveOp())
          Other = true;
      } else if (const auto *R = dyn_cast<DeclRefExpr>(S); R && !isa<FunctionDecl>(R->getDecl())) {
        // (A FunctionDecl is the operator's callee.)
        const auto *V = dyn_cast<VarDecl>(R->getDecl());
        if (!V) {
          Other = true;
        } else if (isTensorType(V->getType(), Rules)) {
          if (Tensor && Tensor != V)
            Other = true; // two tensors
          Tensor = V;
        }
      } else if (isa<DeclRefExpr>(S)) {
        // the operator's callee
      } else if (const auto *ME = dyn_cast<MemberExpr>(S)) {
        // A tensor field of a local struct (`losses.total`): the struct's variable holds the loss.
        const VarDecl *Base = localStructOf(ME, Rules);
        if (!Base)
          Other = true;
        else if (Tensor && Tensor != Base)
          Other = true;
        else
          Tensor = Base;
      } else if (isa<CallExpr>(S) && !isa<CXXOperatorCallExpr>(S)) {
        Other = true;
      } else if (!isa<ParenExpr, ImplicitCastExpr, IntegerLiteral, FloatingLiteral,
                      MaterializeTemporaryExpr, CXXBindTemporaryExpr, CXXConstructExpr,
                      CXXFunctionalCastExpr, ExprWithCleanups>(S)) {
        Other = true;
      }
      return true;
    }
  } W(Rules);
  const Expr *Bare = strip(E);
  while (Bare && isa<ParenExpr, CXXBindTemporaryExpr, MaterializeTemporaryExpr>(Bare))
    Bare = strip(cast<Expr>(*Bare->child_begin()));
  if (!isa_and_nonnull<CXXOperatorCallExpr, BinaryOperator>(Bare))
    return nullptr;
  W.walk(E);
  return W.Other ? nullptr : W.Tensor;
}

void ElementFinder::findPlainBackwards() {
  for (const CallExpr *CE : Body.Calls) {
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
    const Expr *Obj = MC->getImplicitObjectArgument();
    const auto *DRE = dyn_cast<DeclRefExpr>(strip(Obj));
    const auto *Field = dyn_cast<MemberExpr>(strip(Obj));
    const VarDecl *VD = DRE     ? dyn_cast<VarDecl>(DRE->getDecl())
                        : Field ? localStructOf(Field, Rules) // `losses.total.backward()`
                                : scaledLossVariable(Obj);
    if (!VD || !VD->isLocalVarDecl() || Obj->getBeginLoc().isMacroID())
      continue;
    ImplicitBackward B;
    B.Backward = MC;
    B.BackwardStmt = statementOf(MC);
    B.Loss = DRE ? static_cast<const Expr *>(DRE) : Obj;
    B.LossVar = VD;
    FA.PlainBackwards.push_back(B);
  }
}

} // namespace ampmigrate
