// Training steps from the elements (groupSteps, mixed and unscaled steps) and their members (the one rule).
#include "FunctionAnalyser.h"
#include "ampmigrate/ExpressionFacts.h"

using namespace clang;

namespace ampmigrate {

void StepGrouper::run() {
  groupSteps();
  groupUnscaledSteps();
}

/// Where the forward calls of a step's scope end: at the scope's end, since a forward after a
/// closed scope ran without autocast (an fp32 head, `head(x.float())` after the scope) and is
/// not the model's to convert; an unclosed scope runs up to the backward.
static unsigned forwardsEnd(const AutocastScope &S, unsigned Backward) {
  return S.Shape == AutocastScope::Kind::Unclosed ? std::max(S.End, Backward) : S.End;
}

void StepGrouper::groupSteps() {
  // One step per scaler object with a backward or unscale/step in this function.
  std::vector<ObjectRef> Scalers;
  for (const ScalerCall &C : FA.ScalerCalls)
    if (C.Scaler && !llvm::is_contained(Scalers, C.Scaler))
      Scalers.push_back(C.Scaler);
  for (const ObjectRef &Sc : Scalers) {
    std::vector<unsigned> Starts = stepCuts(Sc);
    for (size_t Seg = 0; Seg <= Starts.size(); ++Seg)
      groupStep(Sc, Seg == 0 ? 0 : Starts[Seg - 1], Seg < Starts.size() ? Starts[Seg] - 1 : ~0u);
  }
  llvm::sort(FA.Steps, [](const TrainingStep &A, const TrainingStep &B) { return A.Begin < B.Begin; });
}

std::vector<unsigned> StepGrouper::stepCuts(const ObjectRef &Sc) const {
  // One scaler shared by complete steps one after the other: a GAN's discriminator and generator
  // steps (each with its step(), with an update() each or one at the end: the scaler's state is
  // per optimizer), a pre-training loop and a fine-tuning loop. A scaled backward after a step()
  // of the scaler starts another step, when every step so found has a backward and a step() of
  // its own. Otherwise (several backwards before the step()s, a step() alone) the scaler's calls
  // stay one step, planned or reported as such. Returns where each step after the first starts.
  std::vector<std::pair<unsigned, bool>> Events; // offset, is a backward (else a step())
  for (const ScalerCall &C : FA.ScalerCalls)
    if (C.Scaler == Sc && C.Kind == ScalerCall::Method::Step)
      Events.push_back({offsetOf(C.Call->getBeginLoc()), false});
  for (const ImplicitBackward &B : FA.Backwards)
    if (B.Scale->Scaler == Sc)
      Events.push_back({offsetOf(B.Backward->getBeginLoc()), true});
  llvm::sort(Events);
  std::vector<unsigned> Starts;
  bool HasBackward = false, HasStep = false; // in the step being read
  for (auto [Offset, IsBackward] : Events) {
    if (IsBackward && HasStep) {
      Starts.push_back(Offset);
      HasBackward = HasStep = false;
    }
    if (IsBackward)
      HasBackward = true;
    else if (!HasBackward)
      return {};
    else
      HasStep = true;
  }
  if (Starts.empty() || !HasStep)
    return {};
  return Starts;
}

void StepGrouper::groupStep(const ObjectRef &Sc, unsigned Lo, unsigned Hi) {
  auto In = [&](const clang::Stmt *S) {
    unsigned O = offsetOf(S->getBeginLoc());
    return O >= Lo && O <= Hi;
  };
  TrainingStep T;
  T.Scaler = Sc;
  for (const ScalerCall &C : FA.ScalerCalls) {
    if (!(C.Scaler == Sc) || !In(C.Call))
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
    if (B.Scale->Scaler == Sc && In(B.Backward))
      T.Backwards.push_back(&B);
  bool Implicit = !T.Backwards.empty() ||
                  llvm::any_of(T.Unscales, [](auto *C) { return !C->HasExplicitGrads; }) ||
                  llvm::any_of(T.Steps, [](auto *C) { return !C->HasExplicitGrads; });
  if (!Implicit)
    return; // already migrated
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
  Members.addFeedingScopes(T, FirstBackward);
  if (T.Scope)
    for (const ForwardCall &F : FA.Forwards) {
      unsigned O = offsetOf(F.Call->getBeginLoc());
      if (O >= T.Scope->Begin && O <= forwardsEnd(*T.Scope, FirstBackward == ~0u ? 0 : FirstBackward))
        T.Forwards.push_back(&F);
    }
  else if (FirstBackward != ~0u &&
           !llvm::any_of(T.Backwards, [&](const ImplicitBackward *B) { return lossFromAutocastCallee(*B); }))
    addFp32Forwards(T, Lo, FirstBackward);
  findPlainBranch(T);
  Members.addMembers(T);
  FA.Steps.push_back(std::move(T));
}

void StepGrouper::addFp32Forwards(TrainingStep &T, unsigned Lo, unsigned FirstBackward) {
  const ImplicitBackward *First = nullptr;
  for (const ImplicitBackward *B : T.Backwards)
    if (offsetOf(B->Backward->getBeginLoc()) == FirstBackward)
      First = B;
  for (const ForwardCall &F : FA.Forwards) {
    unsigned O = offsetOf(F.Call->getBeginLoc());
    if (!First || O < Lo || O >= FirstBackward)
      continue;
    // The innermost block around the forward holds the backward too: a forward of a nested
    // block or a lambda that ended before it is not this step's.
    const Stmt *Block = F.Call;
    while (Block && !isa<CompoundStmt>(Block))
      Block = PM.getParent(Block);
    if (Block && encloses(Block, First->Backward))
      T.Forwards.push_back(&F);
  }
}

bool StepGrouper::computedIn(const AutocastScope &S, const ImplicitBackward &B) const {
  // The loss is given a value in the scope, or after it from values given in it, before the
  // backward (`auto pred = net->forward(x);` in the scope, `auto loss = mse_loss(pred.to(kFloat),
  // y);` in fp32 after it).
  const VarDecl *VD = B.LossVar;
  unsigned At = offsetOf(B.Backward->getBeginLoc());
  struct Values : AstVisitor {
    std::vector<std::pair<const VarDecl *, const Expr *>> All; // a variable and a value given it
    bool visitStmt(Stmt *St) override {
      addValuesGiven(St, All);
      return true;
    }
  } Vals;
  Vals.walk(FD->getBody());
  llvm::SmallPtrSet<const VarDecl *, 8> FromScope;
  for (const auto &[V, E] : Vals.All) {
    unsigned O = offsetOf(E->getBeginLoc());
    if (O >= S.Begin && O <= S.End)
      FromScope.insert(V);
  }
  auto UsesScopeValue = [&](const Expr *E) { return refersToAny(E, FromScope); };
  for (bool Grew = true; Grew && !FromScope.contains(VD);) {
    Grew = false;
    for (const auto &[V, E] : Vals.All) {
      unsigned O = offsetOf(E->getBeginLoc());
      if (O > S.End && O < At && !FromScope.contains(V) && UsesScopeValue(E)) {
        FromScope.insert(V);
        Grew = true;
      }
    }
  }
  return FromScope.contains(VD);
}

bool StepGrouper::lossFromAutocastCallee(const ImplicitBackward &B) const {
  const VarDecl *VD = B.LossVar;
  if (!VD || !VD->isLocalVarDecl() || !VD->getInit())
    return false;
  const auto *Call = dyn_cast<CallExpr>(strip(VD->getInit()));
  const FunctionDecl *Def = nullptr;
  if (!Call || !Call->getDirectCallee() || !Call->getDirectCallee()->hasBody(Def) ||
      !Def->getBody() || Def == FD)
    return false;
  // Its first switch turns autocast on (or may: a flag), or a guard does; a region that turns
  // it off first (and back on after) is not a scope of the loss.
  AutocastCallCollector C(Rules);
  C.walk(Def->getBody());
  for (const auto &[CE, R] : C.Found)
    if (R->Role == AutocastRole::Enable)
      return R->EnabledArg < 0 || (unsigned)R->EnabledArg >= CE->getNumArgs() ||
             boolConstant(CE->getArg(R->EnabledArg), Ctx) != std::optional<bool>(false);
  BodyCollector BC;
  BC.walk(Def->getBody());
  for (const DeclStmt *DS : BC.Decls)
    for (const Decl *D : DS->decls()) {
      const auto *V = dyn_cast<VarDecl>(D);
      bool Disables = false;
      if (V && isAutocastGuardClass(V->getType()->getAsCXXRecordDecl(), Rules, &Disables) && !Disables)
        return true;
    }
  return false;
}

void StepGrouper::groupUnscaledSteps() {
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
    if (T.Scope && !computedIn(*T.Scope, *B))
      T.Scope = nullptr;
    // No scope here: a loss that a function of this file computes under autocast
    // (`auto loss = compute_loss(...)`); the planner finds that scope (CalleeScope.cpp).
    if (!T.Scope && !lossFromAutocastCallee(*B))
      continue;
    for (const ScalerCall &C : FA.OptimizerSteps) {
      unsigned O = offsetOf(C.Call->getBeginLoc());
      if (O > At && O < Next)
        T.Steps.push_back(&C);
    }
    if (T.Steps.empty())
      continue;
    T.Backwards.push_back(B);
    T.Begin = T.Scope ? std::min(T.Scope->Begin, At) : At;
    Members.addFeedingScopes(T, At);
    for (const ForwardCall &F : FA.Forwards) {
      unsigned O = offsetOf(F.Call->getBeginLoc());
      if (T.Scope && O >= T.Scope->Begin && O <= forwardsEnd(*T.Scope, At))
        T.Forwards.push_back(&F);
    }
    Members.addMembers(T);
    FA.Steps.push_back(std::move(T));
  }
  llvm::sort(FA.Steps, [](const TrainingStep &A, const TrainingStep &B) { return A.Begin < B.Begin; });
}

const Stmt *StepGrouper::branchOf(const IfStmt *If, const Stmt *S) const {
  for (const Stmt *Cur = S; Cur; Cur = PM.getParent(Cur))
    if (PM.getParent(Cur) == If)
      return Cur == If->getThen() || Cur == If->getElse() ? Cur : nullptr;
  return nullptr;
}

void StepGrouper::findPlainBranch(TrainingStep &T) {
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
  // The later ifs that hold a scaler call of the step: those of the same block, and an if on the
  // same condition further out or deeper in (`for (...) { ...; if (amp) scaled.backward(); else
  // loss.backward(); } if (amp) scaler.step(opt); else opt.step();`, a gradient accumulation).
  std::vector<const ScalerCall *> Calls;
  for (const auto *List : {&T.Unscales, &T.Steps, &T.Updates, &T.Others})
    Calls.insert(Calls.end(), List->begin(), List->end());
  const IfStmt *FirstIf = P.Ifs.front();
  const auto *FirstBlock = dyn_cast_or_null<CompoundStmt>(PM.getParent(FirstIf));
  unsigned FirstEnd = offsetOf(FirstIf->getEndLoc());
  std::vector<std::pair<const IfStmt *, const Stmt *>> Later; // an if and its scaled branch
  for (const ScalerCall *C : Calls) {
    const IfStmt *Same = nullptr, *InBlock = nullptr;
    const Stmt *SameSide = nullptr, *InBlockSide = nullptr;
    for (const Stmt *Cur = C->Call, *Par = PM.getParent(Cur); Par; Cur = Par, Par = PM.getParent(Par)) {
      if (isa<LambdaExpr>(Par))
        break;
      const auto *If = dyn_cast<IfStmt>(Par);
      if (!If || (Cur != If->getThen() && Cur != If->getElse()) ||
          offsetOf(If->getBeginLoc()) <= FirstEnd)
        continue;
      if (sameCondition(If->getCond(), P.Condition, Ctx)) {
        Same = If;
        SameSide = Cur;
      }
      if (FirstBlock && PM.getParent(If) == FirstBlock) {
        InBlock = If;
        InBlockSide = Cur;
      }
    }
    const IfStmt *If = Same ? Same : InBlock;
    const Stmt *Side = Same ? SameSide : InBlockSide;
    if (If && !llvm::any_of(Later, [&](const auto &L) { return L.first == If; }))
      Later.push_back({If, Side});
  }
  llvm::sort(Later, [&](const auto &A, const auto &B) {
    return offsetOf(A.first->getBeginLoc()) < offsetOf(B.first->getBeginLoc());
  });
  for (const auto &[If, Scaled] : Later) {
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

} // namespace ampmigrate
