// The members of a training step, by the one rule: its gradient window, the clips in it, the
// zero_grad() calls of its optimizers and models, and the statements that touch `.grad`.
#include "FunctionAnalyser.h"
#include "ampmigrate/SourceText.h"

#include "llvm/Support/Path.h"

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

std::optional<std::string> StepMembers::changesTrainingObject(const TrainingStep &T, const CallExpr *CE) const {
  const Expr *Obj = nullptr;
  const CXXMethodDecl *MD = nullptr;
  bool Assigns = false;
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
    Obj = MC->getImplicitObjectArgument();
    MD = MC->getMethodDecl();
  } else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(CE); OC && OC->getNumArgs() == 2 &&
                                                                  OC->isAssignmentOp()) {
    Obj = OC->getArg(0);
    MD = dyn_cast_or_null<CXXMethodDecl>(OC->getDirectCallee());
    Assigns = true;
  }
  if (!Obj || !MD)
    return std::nullopt;
  ObjectRef O = resolveObject(Obj);
  if (!O || !(T.forwardsModel(O) || T.stepsOptimizer(O)))
    return std::nullopt;
  if (Assigns) // another model or optimizer in the variable, of any class
    return std::string("operator=");
  if (isProjectFunction(MD) || MD->isConst() || MD->getOverloadedOperator() != OO_None ||
      isa<CXXConversionDecl>(MD))
    return std::nullopt; // a project method is judged by its body; `->`, `*` reach the object
  static const llvm::StringRef Reading[] = {
      "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
      "modules",    "named_modules",    "train",   "eval",          "param_groups", "state",
      "defaults",   "forward",          "get",     "ptr",           "is_training", "name"};
  if (MD->getIdentifier() && llvm::is_contained(Reading, MD->getName()))
    return std::nullopt;
  return MD->getNameAsString();
}

bool StepMembers::notUnderstood(const CallExpr *CE, GradAccess &A) {
  if (std::optional<std::string> Indirect = indirectCallee(CE, Ctx)) {
    A.How = GradAccess::Kind::Indirect;
    A.Callee = *Indirect;
    return true;
  }
  const FunctionDecl *F = CE->getDirectCallee();
  // Another optimizer's step() or zero_grad(), a clip the step does not own: library code on .grad.
  if (actsOnGradInLibrary(CE, Rules)) {
    A.How = GradAccess::Kind::GradAccessor;
    return true;
  }
  // Another loss's backward (not one of the step's): its gradients add to .grad.
  if (const auto *MD = dyn_cast_or_null<CXXMethodDecl>(F);
      MD && MD->getIdentifier() && MD->getName() == "backward" && !isProjectFunction(MD)) {
    A.How = GradAccess::Kind::RunsBackward;
    return true;
  }
  if (!F)
    return false;
  // A virtual call runs the static callee or an override: each one this TU has is judged; a pure
  // virtual callee is not code.
  std::vector<const FunctionDecl *> Runs;
  const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
  const auto *MD = dyn_cast<CXXMethodDecl>(F);
  if (!MD || !MD->isPureVirtual())
    Runs.push_back(F);
  const auto *ME = MC ? dyn_cast<MemberExpr>(MC->getCallee()->IgnoreParens()) : nullptr;
  if (MC && MD && MD->isVirtual() && !(ME && ME->hasQualifier()) && // `Base::f()` does not dispatch
      !MD->getDevirtualizedMethod(MC->getImplicitObjectArgument(), false))
    for (const CXXMethodDecl *O : overridersOf(MD))
      Runs.push_back(O);
  if (Runs.empty()) // a pure virtual method no class of this TU overrides: what runs is elsewhere
    Runs.push_back(F);
  return llvm::any_of(Runs, [&](const FunctionDecl *X) { return judgeFunction(X, A); });
}

bool StepMembers::judgeFunction(const FunctionDecl *F, GradAccess &A) {
  if (!isProjectFunction(F) || hasSkippedBody(F) || Rules.isGradFree(qualifiedName(F)))
    return false; // a library call acting on .grad is a grad accessor or is handed the parameters
  const FunctionDecl *Def = nullptr;
  std::vector<const FunctionDecl *> External;
  if (F->hasBody(Def) && Def->getBody()) {
    FunctionSummary S = Summaries.summarise(Def, &External);
    auto Found = [&](GradAccess::Kind K, const std::string &At) {
      A.How = K;
      A.Callee = S.Name;
      A.Where = At;
      return true;
    };
    if (!S.GradAt.empty())
      return Found(GradAccess::Kind::GradAccessor, S.GradAt);
    if (!S.BackwardAt.empty())
      return Found(GradAccess::Kind::RunsBackward, S.BackwardAt);
    if (!S.IndirectAt.empty())
      return Found(GradAccess::Kind::Indirect, S.IndirectAt);
  } else {
    External.push_back(F);
  }
  // What runs in other files: the run's summaries, fact by fact; unknown code is not understood.
  std::optional<CalleeAnswer> Unknown;
  for (const FunctionDecl *X : External) {
    if (!Body.Callees) {
      A.How = GradAccess::Kind::Unknown;
      A.Callee = qualifiedName(X);
      return true;
    }
    for (auto [Fact, K] : {std::pair{CalleeFact::TouchesGrad, GradAccess::Kind::Elsewhere},
                           std::pair{CalleeFact::RunsBackward, GradAccess::Kind::RunsBackward},
                           std::pair{CalleeFact::CallsIndirectly, GradAccess::Kind::Indirect}}) {
      CalleeAnswer There = Body.Callees->ask(X, Fact);
      if (There.K == CalleeAnswer::Kind::Yes) {
        A.How = K;
        A.Callee = There.Function;
        A.Where = There.Where;
        return true;
      }
      if (There.K == CalleeAnswer::Kind::Unknown && !Unknown)
        Unknown = There;
    }
  }
  if (!Unknown)
    return false;
  A.How = GradAccess::Kind::Unknown;
  A.Callee = Unknown->Function;
  return true;
}

namespace {

/// Every method of `DC` (outside system headers, into namespaces and classes) that overrides
/// another, under each method it overrides (directly or through others).
void collectOverriders(const DeclContext *DC, const SourceManager &SM,
                       llvm::DenseMap<const CXXMethodDecl *, std::vector<const CXXMethodDecl *>> &Out) {
  for (const Decl *D : DC->decls()) {
    if (D->getLocation().isValid() && SM.isInSystemHeader(SM.getExpansionLoc(D->getLocation())))
      continue;
    if (const auto *M = dyn_cast<CXXMethodDecl>(D)) {
      std::vector<const CXXMethodDecl *> Work(M->overridden_methods().begin(), M->overridden_methods().end());
      llvm::SmallPtrSet<const CXXMethodDecl *, 4> Seen;
      while (!Work.empty()) {
        const CXXMethodDecl *O = Work.back();
        Work.pop_back();
        if (!Seen.insert(O->getCanonicalDecl()).second)
          continue;
        Out[O->getCanonicalDecl()].push_back(M);
        Work.insert(Work.end(), O->overridden_methods().begin(), O->overridden_methods().end());
      }
    }
    if (const auto *R = dyn_cast<CXXRecordDecl>(D); R && R->isDependentContext())
      continue;
    if (isa<NamespaceDecl, LinkageSpecDecl, CXXRecordDecl>(D))
      collectOverriders(cast<DeclContext>(D), SM, Out);
  }
}

} // namespace

const std::vector<const CXXMethodDecl *> &StepMembers::overridersOf(const CXXMethodDecl *MD) {
  if (!OverridersKnown) {
    collectOverriders(Ctx.getTranslationUnitDecl(), SM, Overriders);
    OverridersKnown = true;
  }
  return Overriders[MD->getCanonicalDecl()];
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
    } else if (std::optional<std::string> Method = changesTrainingObject(T, CE)) {
      A.How = GradAccess::Kind::ChangesObject;
      A.Callee = *Method;
    } else if (!notUnderstood(CE, A)) {
      continue; // understood: it does not act on .grad
    }
    A.Statement = stepStatementOf(T, CE);
    A.Holder = statementOf(CE);
    if (!A.Statement || llvm::any_of(T.GradAccesses, [&](const GradAccess &O) { return O.Statement == A.Statement; }))
      continue;
    T.GradAccesses.push_back(A);
  }
  addObjectsMade(T);
  addGradReadsAfter(T);
  addGradReadsBefore(T);
}

void StepMembers::addObjectsMade(TrainingStep &T) {
  // A variable of a project class declared in the window runs its constructor there and its
  // destructor at the end of its block: both are judged as calls are (defaulted ones do nothing
  // of their own).
  auto Runs = [](const FunctionDecl *F) { return F && !F->isDefaulted() && !F->isTrivial(); };
  for (const DeclStmt *DS : Body.Decls) {
    if (!T.inGradientWindow(offsetOf(DS->getBeginLoc())))
      continue;
    for (const Decl *D : DS->decls()) {
      const auto *VD = dyn_cast<VarDecl>(D);
      const auto *Make = VD && VD->getInit() ? dyn_cast<CXXConstructExpr>(VD->getInit()->IgnoreImplicit()) : nullptr;
      if (!Make)
        continue;
      GradAccess A;
      A.Access = Make;
      const CXXConstructorDecl *Ctor = Make->getConstructor();
      const CXXRecordDecl *RD = Ctor->getParent();
      const CXXDestructorDecl *Dtor = RD->hasDefinition() ? RD->getDestructor() : nullptr;
      if (!(Runs(Ctor) && judgeFunction(Ctor, A)) && !(Runs(Dtor) && judgeFunction(Dtor, A)))
        continue;
      A.Statement = stepStatementOf(T, DS);
      A.Holder = DS;
      if (A.Statement && llvm::none_of(T.GradAccesses, [&](const GradAccess &O) { return O.Statement == A.Statement; }))
        T.GradAccesses.push_back(A);
    }
  }
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
    if (O <= From || O >= T.GradientBegin || isStepElement(T, CE))
      continue;
    if (isGradAccessor(CE)) {
      if (!onlyClearsGrad(CE, PM))
        T.GradReadsBefore.push_back(CE);
    } else if (const CallExpr *Read = gradReadInCallee(CE)) {
      PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(Read->getBeginLoc()));
      T.GradHelpersBefore.push_back(
          {CE, qualifiedName(CE->getDirectCallee()),
           P.isValid() ? positionText(llvm::sys::path::filename(P.getFilename()), P.getLine()) : "?"});
    } else if (std::optional<CalleeAnswer> There = elsewhere(CE, CalleeFact::ReadsGrad);
               There && There->K == CalleeAnswer::Kind::Yes) {
      T.GradHelpersBefore.push_back({CE, There->Function, There->Where});
    }
  }
}

} // namespace ampmigrate
