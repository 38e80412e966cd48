// The unscale_/step/update calls, the checked unscale, the optimizer steps and the clips on the grads.
#include "StepEmitter.h"
#include "StepPlanner.h"

using namespace clang;

namespace ampmigrate {

std::string StepPlanner::canonicalMethod(ScalerCall::Method M) const {
  switch (M) {
  case ScalerCall::Method::Scale: return "scale";
  case ScalerCall::Method::Unscale: return "unscale_";
  case ScalerCall::Method::Step: return "step";
  case ScalerCall::Method::Update: return "update";
  case ScalerCall::Method::GetScale: return "get_scale";
  case ScalerCall::Method::IsEnabled: return "is_enabled";
  }
  return "";
}

void StepPlanner::checkRename(const ScalerCall *C) {
  const auto *ME = dyn_cast<MemberExpr>(C->Call->getCallee());
  if (!ME)
    return;
  std::string Want = canonicalMethod(C->Kind);
  if (ME->getMemberDecl()->getName() == Want)
    return;
  unsigned B, E;
  if (!fileRange(ME->getMemberLoc(), B, E)) {
    block(C->Call->getBeginLoc(), "the scaler call is inside a macro body");
    return;
  }
  Desc.Calls.push_back({CallEdit::Kind::Rename, B, E, Want, ""});
}

void StepPlanner::checkGradsArgument(const ScalerCall *C) {
  // The implicit form takes the optimizer alone; anything else a project scaler is given (the
  // module whose .grad it reads) has no place in the explicit form.
  for (unsigned I = 1; I < C->Call->getNumArgs(); ++I) {
    const Expr *A = C->Call->getArg(I);
    if (isa<CXXDefaultArgExpr>(A))
      continue;
    block(A->getBeginLoc(), "`" + firstLine(text(C->Call->getSourceRange())) + "` passes `" +
                                text(A->getSourceRange()) + "` besides the optimizer; the "
                                "explicit-grad form takes the optimizer and the grads only, "
                                "and what this argument is for is not known (a module whose "
                                ".grad the scaler reads?): migrate this step by hand");
    return;
  }
  SourceLocation RP = C->Call->getRParenLoc();
  if (RP.isMacroID()) {
    block(C->Call->getBeginLoc(), "the scaler call is inside a macro body");
    return;
  }
  Desc.Calls.push_back({CallEdit::Kind::GradsArgument, off(RP), off(RP), "", gradsFor(C->Optimizer)});
}

bool StepPlanner::resultUsed(const Expr *Call) const {
  const Stmt *Cur = Call;
  for (const Stmt *P = PM.getParent(Cur); P; Cur = P, P = PM.getParent(P)) {
    if (isa<CompoundStmt>(P))
      return false;
    if (const auto *E = dyn_cast<Expr>(P); E && E->IgnoreImplicit() == Call->IgnoreImplicit())
      continue; // implicit wrappers around the call itself
    if (isa<ExprWithCleanups, ImplicitCastExpr>(P))
      continue;
    if (const auto *If = dyn_cast<IfStmt>(P); If && If->getCond() != Cur)
      return false; // `if (c) scaler.unscale_(opt);`
    return true;
  }
  return false;
}

void StepPlanner::checkScalerCalls() {
  for (const ScalerCall *U : T.Unscales) {
    if (U->HasExplicitGrads)
      continue;
    if (U->ResultUsed) {
      checkCheckedUnscale(U);
      continue;
    }
    checkRename(U);
    checkGradsArgument(U);
  }
  for (const ScalerCall *S : T.Steps) {
    checkRename(S);
    checkGradsArgument(S);
  }
  for (const ScalerCall *U : T.Updates)
    checkRename(U);
  for (const ScalerCall *G : T.Others)
    checkRename(G);
}

void StepPlanner::checkCheckedUnscale(const ScalerCall *U) {
  std::string Call = "`" + firstLine(text(U->Call->getSourceRange())) + "`";
  const CXXMethodDecl *MD = U->Call->getMethodDecl();
  std::string Name = MD->getNameAsString();
  const ScalerMethodNames &N = Rules.ScalerMethods;
  bool Finite = llvm::is_contained(N.CheckedFinite, Name);
  bool FoundInf = llvm::is_contained(N.CheckedFoundInf, Name);
  if (!U->Call->getType()->isBooleanType()) {
    block(U->Call->getBeginLoc(),
          "the result of " + Call + " is used, and its type is '" +
              U->Call->getType().getAsString() + "', not bool; the checked unscale " +
              Tgt.CheckedUnscale + "(optimizer, grads) answers whether every grad is finite: "
              "migrate this step by hand");
    return;
  }
  if (!Finite && !FoundInf) {
    block(U->Call->getBeginLoc(),
          "the result of " + Call + " is used (a checked unscale), and the rules do not say "
          "what its answer means: name '" + Name + "' in scaler.methods.checked-unscale-finite "
          "(true when every grad is finite) or checked-unscale-found-inf (true when an inf or "
          "NaN was found) of a rule file, or migrate this step by hand");
    return;
  }
  const auto *ME = dyn_cast<MemberExpr>(U->Call->getCallee());
  unsigned MB, MEnd, CB, CEnd;
  if (!ME || !fileRange(ME->getMemberLoc(), MB, MEnd) ||
      !fileRange(U->Call->getSourceRange(), CB, CEnd)) {
    block(U->Call->getBeginLoc(), "the scaler call is inside a macro body");
    return;
  }
  if (FoundInf)
    Desc.Calls.push_back({CallEdit::Kind::Negate, CB, CB, "", ""});
  if (Name != Tgt.CheckedUnscale)
    Desc.Calls.push_back({CallEdit::Kind::Rename, MB, MEnd, Tgt.CheckedUnscale, ""});
  checkGradsArgument(U);
}

void StepPlanner::checkOptimizerSteps(llvm::ArrayRef<const ScalerCall *> Steps, std::vector<CallEdit> &Out) {
  if (Steps.empty())
    return;
  if (Tgt.Step.empty()) {
    block(Steps.front()->Call->getBeginLoc(), "a step without a scaler needs target.step in the rules");
    return;
  }
  for (const ScalerCall *S : Steps) {
    if (resultUsed(S->Call) || S->Call->getBeginLoc().isMacroID()) {
      block(S->Call->getBeginLoc(), "`" + firstLine(text(S->Call->getSourceRange())) +
                                        "` is not a statement of its own (its result is used, "
                                        "or it is inside a macro); migrate this step by hand");
      continue;
    }
    unsigned B, E;
    if (!fileRange(S->Call->getSourceRange(), B, E)) {
      block(S->Call->getBeginLoc(), "the optimizer's step() is inside a macro");
      continue;
    }
    Out.push_back({CallEdit::Kind::OptimizerStep, B, E, text(S->OptimizerArg->getSourceRange()),
                   gradsFor(S->Optimizer)});
  }
}

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

} // namespace

bool StepPlanner::paramsOfStep(const Expr *Params, const ScalerCall **OfOptimizer) const {
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
  if (llvm::any_of(T.Forwards, [&](const ForwardCall *F) { return F->Model.Decl == D; }))
    return true;
  if (Desc.CalleeFA && llvm::any_of(Desc.CalleeFA->Forwards, [&](const ForwardCall &F) { return callerModel(F.Model) == D; }))
    return true;
  // A step split over two methods: the model the scaling half runs (a member of the class).
  if (Desc.Split && llvm::any_of(Desc.Split->ScalingHalf->Forwards, [&](const ForwardCall *F) { return F->Model.Decl == D; }))
    return true;
  for (const ScalerCall *S : T.Steps)
    if (S->Optimizer.Decl == D) {
      if (OfOptimizer)
        *OfOptimizer = S;
      return true;
    }
  return BuiltFromIt();
}

std::optional<std::string> StepPlanner::clipOfFirstGroup(const Expr *Params,
                                                        const ScalerCall &Of) const {
  // libtorch's Optimizer::parameters() is its first parameter group's list; the explicit grads
  // (parameters_of) are every group's. An optimizer built from groups clips more once migrated.
  const CXXMemberCallExpr *MC = parametersCall(Params);
  if (!MC || !(resolveObject(MC->getImplicitObjectArgument()) == Of.Optimizer))
    return std::nullopt;
  const Expr *Built = optimizerParamsArg(Of.Optimizer.Decl);
  if (!Built || parametersCall(Built) || returnsTensors(Built->getType(), Rules))
    return std::nullopt;
  return "the clip covers `" + text(Params->getSourceRange()) + "`, which libtorch's Optimizer "
         "gives as its first parameter group only, and `" + text(Of.OptimizerArg->getSourceRange()) +
         "` is built from parameter groups (`" + text(Built->getSourceRange()) + "`, " +
         where(Built->getBeginLoc()) + "): the explicit grads are every group's, so the migrated "
         "clip would cover the other groups too; migrate this step by hand";
}

std::optional<std::string> StepPlanner::clipWiderThanOptimizer(const Expr *Params) const {
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
    return "the clip covers `" + text(Params->getSourceRange()) + "`, but the optimizer `" +
           text(S->OptimizerArg->getSourceRange()) + "` holds `" + text(Built->getSourceRange()) +
           "` (" + where(Built->getBeginLoc()) + "): the explicit grads are the optimizer's "
           "parameters', so the migrated clip would leave the other parameters' gradients out of "
           "the norm that clip_grad_norm_ counts them in (still scaled: unscale_ only unscales "
           "the optimizer's); clip the optimizer's parameters if that is what is meant, or "
           "migrate this step by hand";
  }
  return std::nullopt;
}

void StepPlanner::checkClips() {
  for (const ClipCall *C : T.Clips) {
    unsigned O = off(C->Call->getBeginLoc());
    ObjectRef Of = T.stepsOptimizer(C->ParamsOwner) ? C->ParamsOwner : ObjectRef();
    if (!T.Unscaled && !T.Plain.contains(O) && !T.unscaledBefore(O, Of, SM)) {
      block(C->Call->getBeginLoc(), "clipping still-scaled gradients (no unscale_ before it); "
                                    "fix the order first (amp-clip-before-unscale)");
      continue;
    }
    if (!C->NormIsL2) {
      block(C->Call->getBeginLoc(), "clip norm type " + C->NormText +
                                        " is not L2; clip_by_global_norm only does the L2 norm");
      continue;
    }
    if (!C->ErrorIfNonfinite.empty()) {
      block(C->Call->getBeginLoc(),
            "the clip is called with error_if_nonfinite = `" + C->ErrorIfNonfinite +
                "`: it throws when the total norm is not finite, and " + Tgt.Clip +
                " does not; drop the check or migrate this step by hand");
      continue;
    }
    // A user rule may name an argument this call does not have (a rule for another overload).
    unsigned Arity = C->Call->getNumArgs();
    const bool ByValue = C->Rule->byValue();
    const int AmountArg = ByValue ? C->Rule->ClipValueArg : C->Rule->MaxNormArg;
    if ((unsigned)C->Rule->ParamsArg >= Arity || (unsigned)AmountArg >= Arity) {
      block(C->Call->getBeginLoc(),
            "the clip rule for '" + C->Rule->Function + "' names argument " +
                std::to_string(std::max(C->Rule->ParamsArg, AmountArg)) +
                " but this call has " + std::to_string(Arity) + " argument(s); fix the rule");
      continue;
    }
    if (ByValue && Tgt.ClipValueInPlace.empty()) {
      block(C->Call->getBeginLoc(), "a clip by value, and the rules name no "
                                    "target.clip-value-in-place to carry it over to the grads");
      continue;
    }
    const Expr *Params = C->Call->getArg(C->Rule->ParamsArg);
    const ScalerCall *OfOptimizer = nullptr;
    if (!paramsOfStep(Params, &OfOptimizer)) {
      block(Params->getBeginLoc(), "clipping a parameter set other than the model's or the "
                                   "optimizer's; the explicit grads cover the optimizer's parameters");
      continue;
    }
    if (!OfOptimizer)
      if (std::optional<std::string> Why = clipWiderThanOptimizer(Params)) {
        block(Params->getBeginLoc(), *Why);
        continue;
      }
    if (OfOptimizer && !Tgt.ParametersOf.empty())
      if (std::optional<std::string> Why = clipOfFirstGroup(Params, *OfOptimizer)) {
        block(Params->getBeginLoc(), *Why);
        continue;
      }
    std::string G = Desc.GradsName;
    if (!Desc.PerOptimizer.empty()) {
      if (!OfOptimizer) {
        block(Params->getBeginLoc(), "with several optimizers, clipping a model's parameters: "
                                     "which optimizer's grads to clip is unknown; clip "
                                     "optimizer.parameters() or migrate by hand");
        continue;
      }
      G = gradsFor(OfOptimizer->Optimizer);
    }
    if (!C->Statement || C->Call->getBeginLoc().isMacroID()) {
      block(C->Call->getBeginLoc(), "the clip call is not a statement of its own");
      continue;
    }
    ClipEdit Clip;
    Clip.Grads = G;
    Clip.MaxNorm = argumentText(C->Call, AmountArg);
    Clip.Indent = indentAt(off(C->Statement->getBeginLoc()));
    CharSourceRange SR = stmtRange(C->Statement);
    Clip.StmtBegin = SM.getFileOffset(SR.getBegin());
    Clip.StmtEnd = SM.getFileOffset(SR.getEnd());
    if (ByValue) {
      if (C->ResultUsed) { // libtorch's returns nothing: a user rule's function that returns something
        block(C->Call->getBeginLoc(), "the result of the clip by value is used; " +
                                          Tgt.ClipValueInPlace + " returns nothing");
        continue;
      }
      Clip.How = ClipEdit::Form::ByValue;
      Desc.Clips.push_back(Clip);
      continue;
    }
    if (!C->ResultUsed) {
      Desc.Clips.push_back(Clip);
      continue;
    }
    // The returned norm is used: the norm of the unscaled grads before clipping (the in-place
    // clip returns it; otherwise it is computed before the clip).
    const auto *DS = dyn_cast<DeclStmt>(C->Statement);
    const VarDecl *VD = DS && DS->isSingleDecl() ? dyn_cast<VarDecl>(DS->getSingleDecl()) : nullptr;
    if (VD && VD->getInit() && VD->getInit()->IgnoreImplicit() == C->Call) {
      if (!fileRange(C->Call->getSourceRange(), Clip.CallBegin, Clip.CallEnd)) {
        block(C->Call->getBeginLoc(), "the clip call is inside a macro body");
        continue;
      }
      Clip.How = ClipEdit::Form::NormInDeclaration;
      Desc.Clips.push_back(Clip);
      continue;
    }
    if (Tgt.ClipInPlace.empty()) {
      // Out of place: the norm is computed in a statement of its own before the clip's.
      const Stmt *Parent = PM.getParent(C->Statement);
      if (Parent && !isa<CompoundStmt>(Parent)) {
        block(C->Call->getBeginLoc(), "the clip's statement is the body of a statement without "
                                      "braces; add them, or migrate by hand");
        continue;
      }
      Clip.NormVar = freshName("grad_norm");
    }
    if (!fileRange(C->Call->getSourceRange(), Clip.CallBegin, Clip.CallEnd)) {
      block(C->Call->getBeginLoc(), "the clip call is inside a macro body");
      continue;
    }
    Clip.How = ClipEdit::Form::NormBefore;
    Desc.Clips.push_back(Clip);
  }
}

void StepEmitter::emitCalls(const std::vector<CallEdit> &Calls) const {
  for (const CallEdit &C : Calls)
    switch (C.What) {
    case CallEdit::Kind::Rename: Out.replace(C.Begin, C.End - C.Begin, C.Name); break;
    case CallEdit::Kind::GradsArgument: Out.insert(C.Begin, ", " + C.Grads); break;
    case CallEdit::Kind::Negate: Out.insert(C.Begin, "!"); break;
    case CallEdit::Kind::OptimizerStep:
      Out.replace(C.Begin, C.End - C.Begin, Tgt.Step + "(" + C.Name + ", " + C.Grads + ")");
      break;
    }
}

void StepEmitter::emitClips() const {
  for (const ClipEdit &C : D.Clips) {
    const std::string &G = C.Grads;
    // In place, as clip_grad_norm_ acted on `.grad`: the grads keep their memory, and the norm
    // it returns is the one the clip computed (the rule's out-of-place form otherwise).
    const bool InPlace = !Tgt.ClipInPlace.empty();
    std::string Clip = InPlace ? Tgt.ClipInPlace + "(" + G + ", " + C.MaxNorm + ");"
                               : G + " = " + Tgt.Clip + "(" + G + ", " + C.MaxNorm + ");";
    std::string Norm = Tgt.GlobalNorm + "(" + G + ").item<double>()";
    std::string NormAndClip = Tgt.ClipInPlace + "(" + G + ", " + C.MaxNorm + ").item<double>()";
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
