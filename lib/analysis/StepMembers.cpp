// The members of a training step, by the one rule: its gradient window, the clips in it, the
// zero_grad() calls of its optimizers and models, and the statements that touch `.grad`.
#include "FunctionAnalyser.h"

using namespace clang;

namespace ampmigrate {

void StepMembers::addMembers(TrainingStep &T) {
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

bool StepMembers::namesStepParameters(const TrainingStep &T, const Expr *E) const {
  if (parametersCall(E))
    return true;
  ObjectRef O = resolveObject(E);
  if (O && (T.stepsOptimizer(O) || T.forwardsModel(O)))
    return true;
  // A local holding a parameter list: `auto params = model->parameters(); f(params);`, or one
  // filled with them.
  if (const auto *VD = dyn_cast_or_null<VarDecl>(O.Decl))
    return (VD->getInit() && parametersCall(VD->getInit())) || collectsParameters(VD);
  return false;
}

bool StepMembers::isStepElement(const TrainingStep &T, const CallExpr *CE) const {
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

const Stmt *StepMembers::stepStatementOf(const TrainingStep &T, const Stmt *S) const {
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

bool StepMembers::isOwnStepOf(const TrainingStep &T, const CallExpr *CE) const {
  return llvm::any_of(FA.OptimizerSteps, [&](const ScalerCall &C) {
    return C.Call == CE && T.stepsOptimizer(C.Optimizer);
  });
}

namespace {

/// Whether a value of type `T` holds a model or an optimizer: a module or optimizer class (by
/// pointer, reference, smart pointer or module holder), or a class with a field that is one.
bool holdsTrainingObjects(QualType T, const RuleSet &Rules, int Depth) {
  T = T.getNonReferenceType();
  if (T->isPointerType())
    T = T->getPointeeType();
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  if (!RD || !(RD = RD->getDefinition()))
    return false;
  if (isDerivedFromAny(RD, Rules.ModuleClasses) || isDerivedFromAny(RD, Rules.OptimizerClasses))
    return true;
  if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(RD))
    for (const TemplateArgument &A : Spec->getTemplateArgs().asArray())
      if (A.getKind() == TemplateArgument::Type && holdsTrainingObjects(A.getAsType(), Rules, Depth))
        return true;
  if (Depth > 0 || RD->isInStdNamespace())
    return false;
  return llvm::any_of(RD->fields(), [&](const FieldDecl *F) { return holdsTrainingObjects(F->getType(), Rules, Depth + 1); });
}

} // namespace

std::optional<std::string> StepMembers::indirectCallee(const CallExpr *CE) const {
  const FunctionDecl *F = CE->getDirectCallee();
  bool StdFunction = false;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(CE); Op && Op->getOperator() == OO_Call && F)
    if (const auto *MD = dyn_cast<CXXMethodDecl>(F))
      StdFunction = qualifiedName(MD->getParent()) == "std::function";
  if (F && !StdFunction)
    return std::nullopt;
  if (!F && (isa<CXXPseudoDestructorExpr>(CE->getCallee()->IgnoreParenImpCasts()) ||
             CE->getCallee()->isTypeDependent()))
    return std::nullopt;
  const Expr *Callee = StdFunction ? cast<CXXOperatorCallExpr>(CE)->getArg(0) : CE->getCallee();
  return sourceTextOf(Ctx, Callee->IgnoreParenImpCasts()->getSourceRange());
}

bool StepMembers::mayReachTraining(const CallExpr *CE) const {
  // The object a method is called on (`this` for a member of the step's class).
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE))
    if (const Expr *Obj = MC->getImplicitObjectArgument(); Obj && holdsTrainingObjects(Obj->getType(), Rules, 0))
      return true;
  return llvm::any_of(CE->arguments(), [&](const Expr *A) { return holdsTrainingObjects(A->getType(), Rules, 0); });
}

std::optional<CalleeAnswer> StepMembers::elsewhere(const CallExpr *CE, CalleeFact Fact) const {
  const FunctionDecl *F = CE->getDirectCallee();
  const FunctionDecl *Def = nullptr;
  if (!F || !Body.Callees || F->hasBody(Def) || !isProjectFunction(F) ||
      hasSkippedBody(F))
    return std::nullopt;
  return Body.Callees->ask(F, Fact);
}

bool StepMembers::bodyTouchesGrad(const FunctionDecl *F, int Depth) {
  const FunctionDecl *Def = nullptr;
  if (Depth > 3 || !F->hasBody(Def) || !Def->getBody())
    return false;
  const SourceManager &SM = Ctx.getSourceManager();
  if (SM.isInSystemHeader(SM.getExpansionLoc(Def->getLocation())))
    return false;
  auto [It, New] = TouchesGrad.try_emplace(Def->getCanonicalDecl(), false);
  if (!New)
    return It->second; // known, or being computed (a recursion: no by this path)
  CallCollector Fd;
  Fd.walk(Def->getBody());
  bool Touches = llvm::any_of(Fd.Calls, [](const CallExpr *CE) { return isGradAccessor(CE); });
  for (const CallExpr *CE : Fd.Calls)
    if (!Touches && CE->getDirectCallee() && CE->getDirectCallee() != Def) {
      std::optional<CalleeAnswer> There = elsewhere(CE, CalleeFact::TouchesGrad);
      Touches = There ? There->K == CalleeAnswer::Kind::Yes : bodyTouchesGrad(CE->getDirectCallee(), Depth + 1);
    }
  TouchesGrad[Def->getCanonicalDecl()] = Touches;
  return Touches;
}

void StepMembers::addGradAccesses(TrainingStep &T) {
  if (T.GradientBegin > T.GradientEnd)
    return;
  for (const CallExpr *CE : Body.Calls) {
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
    } else if (std::optional<std::string> Indirect = indirectCallee(CE)) {
      // A function pointer or a std::function (a trainer's hook): what it runs is not known.
      A.How = GradAccess::Kind::Indirect;
      A.Callee = *Indirect;
    } else if (std::optional<CalleeAnswer> There = elsewhere(CE, CalleeFact::TouchesGrad);
               There && (There->K == CalleeAnswer::Kind::Yes ||
                         (There->K == CalleeAnswer::Kind::Unknown && mayReachTraining(CE)))) {
      // Its body is in another file: judged by that file's summary, or unknown.
      A.How = There->K == CalleeAnswer::Kind::Yes ? GradAccess::Kind::Elsewhere : GradAccess::Kind::Unknown;
      A.Callee = There->Function;
      A.Where = There->Where;
    } else {
      continue;
    }
    A.Statement = stepStatementOf(T, CE);
    A.Holder = statementOf(CE);
    if (!A.Statement || llvm::any_of(T.GradAccesses, [&](const GradAccess &O) { return O.Statement == A.Statement; }))
      continue;
    T.GradAccesses.push_back(A);
  }
  addGradReadsAfter(T);
  addGradReadsBefore(T);
}

const Stmt *StepMembers::loopAroundLastStep(const TrainingStep &T, bool &Found) const {
  const CallExpr *Last = nullptr;
  for (const auto *List : {&T.Steps, &T.Plain.Steps})
    for (const ScalerCall *S : *List)
      if (offsetOf(S->Call->getBeginLoc()) == T.GradientEnd)
        Last = S->Call;
  Found = Last != nullptr;
  for (const Stmt *P = Last ? PM.getParent(Last) : nullptr; P; P = PM.getParent(P))
    if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
      return P;
  return nullptr;
}

void StepMembers::addGradReadsAfter(TrainingStep &T) {
  bool HasLast;
  const Stmt *Loop = loopAroundLastStep(T, HasLast);
  if (!HasLast)
    return;
  // The rest of the iteration of the innermost loop around the step, else of the function.
  unsigned Limit = offsetOf((Loop ? Loop : FD->getBody())->getEndLoc());
  // A later backward starts another step, whose own window owns what follows.
  for (const CallExpr *CE : Body.Calls) {
    const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
    const auto *MD = MC ? MC->getMethodDecl() : nullptr;
    unsigned O = offsetOf(CE->getBeginLoc());
    if (MD && MD->getIdentifier() && MD->getName() == "backward" && O > T.GradientEnd && O < Limit)
      Limit = O;
  }
  for (const CallExpr *CE : Body.Calls) {
    unsigned O = offsetOf(CE->getBeginLoc());
    // Also the step's optimizer stepped again on .grad (`if (use_amp) { scaler.step(opt); ... }
    // else { opt.step(); }` after an unconditional scaled backward).
    if (O > T.GradientEnd && O < Limit &&
        (isGradAccessor(CE) || (isOwnStepOf(T, CE) && !isStepElement(T, CE))))
      T.GradReadsAfter.push_back(CE);
    else if (O > T.GradientEnd && O < Limit && !isStepElement(T, CE)) {
      if (const CallExpr *Read = gradReadInCallee(CE)) {
        T.GradHelpersAfter.push_back({CE, Read});
      } else if (std::optional<CalleeAnswer> There = elsewhere(CE, CalleeFact::ReadsGrad)) {
        // In another file: a read there, or code no file of the run has, handed the step's
        // parameters, model or optimizer.
        bool Handed = llvm::any_of(CE->arguments(), [&](const Expr *A) { return namesStepParameters(T, A); });
        if (There->K == CalleeAnswer::Kind::Yes ||
            (There->K == CalleeAnswer::Kind::Unknown && Handed))
          T.GradHelpersElsewhere.push_back({CE, There->Function, There->Where});
      }
    }
  }
}

const CallExpr *StepMembers::gradReadInCallee(const CallExpr *CE) {
  const FunctionDecl *F = CE->getDirectCallee();
  const FunctionDecl *Def = nullptr;
  const SourceManager &SM = Ctx.getSourceManager();
  // A lambda's body is this function's code, analysed with it (its .grad reads are its own
  // calls; calling the lambda that holds the step runs the step, not code after it).
  if (const auto *MD = dyn_cast_or_null<CXXMethodDecl>(F); MD && MD->getParent()->isLambda())
    return nullptr;
  if (!F || !F->hasBody(Def) || !Def->getBody() ||
      SM.isInSystemHeader(SM.getExpansionLoc(Def->getLocation())) || !bodyTouchesGrad(F, 0))
    return nullptr;
  // Every .grad() the helper reaches, a few calls deep, that does more than clear it.
  llvm::SmallPtrSet<const FunctionDecl *, 8> Seen;
  std::vector<std::pair<const FunctionDecl *, int>> Work{{Def, 0}};
  while (!Work.empty()) {
    auto [Fn, Depth] = Work.back();
    Work.pop_back();
    if (!Seen.insert(Fn->getCanonicalDecl()).second)
      continue;
    BodyCollector C;
    C.walk(Fn->getBody());
    ParentMap FnPM(Fn->getBody());
    for (const CallExpr *Inner : C.Calls) {
      if (isGradAccessor(Inner)) {
        if (!onlyClearsGrad(Inner, FnPM))
          return Inner;
        continue;
      }
      const FunctionDecl *G = Inner->getDirectCallee(), *GDef = nullptr;
      if (Depth < 3 && G && G->hasBody(GDef) && GDef->getBody() &&
          !SM.isInSystemHeader(SM.getExpansionLoc(GDef->getLocation())))
        Work.push_back({GDef, Depth + 1});
    }
  }
  return nullptr;
}


void StepMembers::addGradReadsBefore(TrainingStep &T) {
  if (T.GradientBegin > T.GradientEnd)
    return;
  // From the start of the loop iteration that holds the step (else of the function): in a loop
  // the code before the backward runs after the last iteration's step, where the original's
  // .grad holds that step's gradients (or the zeros zero_grad() left).
  bool HasLast;
  const Stmt *Loop = loopAroundLastStep(T, HasLast);
  unsigned From = offsetOf((Loop ? Loop : FD->getBody())->getBeginLoc());
  // Another step's backward, or an optimizer's or scaler's step(), before this one owns what
  // precedes it. Other step()s (an LR scheduler's at the top of the loop) do not touch .grad.
  for (const CallExpr *CE : Body.Calls) {
    const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
    const auto *MD = MC ? MC->getMethodDecl() : nullptr;
    unsigned O = offsetOf(CE->getBeginLoc());
    if (!MD || !MD->getIdentifier() || O < From || O >= T.GradientBegin)
      continue;
    bool EndsStep = MD->getName() == "backward" ||
                    (MD->getName() == "step" &&
                     (isScalerClass(MD->getParent(), Rules) ||
                      isDerivedFromAny(MD->getParent(), Rules.OptimizerClasses)));
    if (EndsStep)
      From = offsetOf(CE->getEndLoc());
  }
  for (const CallExpr *CE : Body.Calls) {
    unsigned O = offsetOf(CE->getBeginLoc());
    if (O > From && O < T.GradientBegin && isGradAccessor(CE) && !onlyClearsGrad(CE, PM))
      T.GradReadsBefore.push_back(CE);
  }
}

} // namespace ampmigrate
