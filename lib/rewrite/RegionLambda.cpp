// The forward region becomes the function handed to value_and_grad; the scope goes.
#include "StepEmitter.h"
#include "ampmigrate/SourceText.h"
#include "StepPlanner.h"

using namespace clang;

namespace ampmigrate {

namespace {

class ControlFlowCollector : public AstVisitor {
public:
  ControlFlowCollector() { WrapsStmts = true; }
  const Stmt *Escape = nullptr; ///< return/break/continue/goto/co_return leaving the region
  int LoopDepth = 0;
  bool traverseStmt(Stmt *S) override {
    if (isa<LambdaExpr>(S))
      return true; // a nested function: its returns are its own
    if (auto *F = dyn_cast<ForStmt>(S))
      return loop(F->getBody());
    if (auto *W = dyn_cast<WhileStmt>(S))
      return loop(W->getBody());
    if (auto *D = dyn_cast<DoStmt>(S))
      return loop(D->getBody());
    if (auto *R = dyn_cast<CXXForRangeStmt>(S))
      return loop(R->getBody());
    if (auto *Sw = dyn_cast<SwitchStmt>(S))
      return loop(Sw->getBody());
    return descend(S);
  }
  bool loop(Stmt *Body) {
    ++LoopDepth;
    descend(Body);
    --LoopDepth;
    return true;
  }
  bool visitStmt(Stmt *S) override {
    if (isa<ReturnStmt, GotoStmt, CoreturnStmt, CoawaitExpr, CoyieldExpr>(S))
      return found(S);
    if (isa<BreakStmt, ContinueStmt>(S))
      return LoopDepth ? true : found(S);
    return true;
  }
  bool found(const Stmt *S) {
    if (!Escape)
      Escape = S;
    return true;
  }
};

/// The tensor variables a function reads (not through `.detach()`), and every assignment to
/// a local in the function, for the cross-step graph check.
class TensorReads : public AnalysedBodyVisitor {
public:
  TensorReads(const RuleSet &Rules, const ParentMap &PM) : Rules(Rules), PM(PM) {}
  const RuleSet &Rules;
  const ParentMap &PM;
  std::vector<const DeclRefExpr *> Reads;
  bool visitStmt(Stmt *S) override {
    const auto *E = dyn_cast<DeclRefExpr>(S);
    const auto *V = E ? dyn_cast<VarDecl>(E->getDecl()) : nullptr;
    if (!V || !V->isLocalVarDecl() || !isTensorType(V->getType(), Rules))
      return true;
    const Stmt *P = PM.getParentIgnoreParenImpCasts(const_cast<DeclRefExpr *>(E));
    if (const auto *ME = dyn_cast_or_null<MemberExpr>(P);
        ME && ME->getMemberDecl()->getIdentifier() && ME->getMemberDecl()->getName() == "detach")
      return true;
    Reads.push_back(E);
    return true;
  }
};

/// The variable an assignment (`v = ...`, `v += ...`, a class's operator=) or, with
/// `IncDec`, an increment or decrement writes; null for anything else.
const VarDecl *assignedVariable(const Stmt *S, bool IncDec) {
  const Expr *Lhs = nullptr;
  if (const auto *BO = dyn_cast<BinaryOperator>(S); BO && BO->isAssignmentOp())
    Lhs = BO->getLHS();
  else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(S); OC && OC->isAssignmentOp() && OC->getNumArgs())
    Lhs = OC->getArg(0);
  else if (const auto *UO = dyn_cast<UnaryOperator>(S); IncDec && UO && UO->isIncrementDecrementOp())
    Lhs = UO->getSubExpr();
  const auto *E = Lhs ? dyn_cast<DeclRefExpr>(Lhs->IgnoreParenImpCasts()) : nullptr;
  return E ? dyn_cast<VarDecl>(E->getDecl()) : nullptr;
}

class LocalAssignments : public AnalysedBodyVisitor {
public:
  std::vector<std::pair<const VarDecl *, SourceLocation>> Found;
  bool visitStmt(Stmt *S) override {
    if (const VarDecl *V = assignedVariable(S, /*IncDec=*/false))
      Found.push_back({V, S->getBeginLoc()});
    return true;
  }
};

} // namespace

bool StepPlanner::checkCrossStepGraph(unsigned RB, unsigned BodyEnd) {
  if (Opts.Level != AmpLevel::O2 && Opts.Level != AmpLevel::O3)
    return true;
  // The other steps' scopes in this file: what their forward regions compute.
  std::vector<const AutocastScope *> Others;
  for (const TrainingStep &O : FA.Steps)
    if (&O != &T && O.Scope && O.Scope != T.Scope && O.Scope->End > O.Scope->Begin &&
        SM.getFileID(SM.getExpansionLoc(O.Scope->ReportLoc)) == File)
      Others.push_back(O.Scope);
  if (Others.empty())
    return true;
  // Which forward computes what is at L: 0 this step's region, 1 another step's scope, -1 none.
  auto Area = [&](SourceLocation L) {
    unsigned O = off(L);
    if (O >= RB && O < BodyEnd)
      return 0;
    for (const AutocastScope *S : Others)
      if (O >= S->Begin && O < S->End)
        return 1;
    return -1;
  };
  TensorReads TR(Rules, PM);
  TR.walk(FA.Function->getBody());
  LocalAssignments LA;
  LA.walk(FA.Function->getBody());
  for (const DeclRefExpr *E : TR.Reads) {
    int ReadIn = Area(E->getBeginLoc());
    if (ReadIn < 0)
      continue;
    const auto *V = cast<VarDecl>(E->getDecl());
    SourceLocation Made;
    if (int A = Area(V->getLocation()); A >= 0 && A != ReadIn)
      Made = V->getLocation();
    for (const auto &[Var, L] : LA.Found)
      if (Var == V && !Made.isValid())
        if (int A = Area(L); A >= 0 && A != ReadIn)
          Made = L;
    if (!Made.isValid())
      continue;
    std::string Why = ReadIn == 0
        ? "this step's loss is differentiated through `" + V->getNameAsString() +
              "`, computed in the forward region of another training step (" + where(Made) + ")"
        : "`" + V->getNameAsString() + "`, computed in this step's forward region (" + where(Made) +
              "), is differentiated by another training step (" + where(E->getBeginLoc()) + ")";
    block(ReadIn == 0 ? E->getBeginLoc() : Made,
          Why + "; at " + levelName(Opts.Level).str() + " a converted model computes with "
          "low-precision copies of its weights that are swapped out when the first step's "
          "value_and_grad returns, so the later step cannot differentiate through that graph: "
          "migrate with --level=O1, or by hand (compute it again in the later step, or `.detach()` "
          "it where no gradient should flow)");
    return false;
  }
  return true;
}

namespace {

/// What a statement of a guard tail must not do: run the step's forward, call the scaler or the
/// autocast API, or change a variable the scaled loss reads.
class TailHazards : public AnalysedBodyVisitor {
public:
  std::set<const ValueDecl *> LossVars;
  std::set<const Stmt *> StepCalls;
  const Stmt *Found = nullptr;
  bool visitStmt(Stmt *S) override {
    if (Found)
      return true;
    if (StepCalls.count(S)) {
      Found = S;
      return true;
    }
    auto Writes = [&](const Expr *E) {
      const auto *R = E ? dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts()) : nullptr;
      return R && LossVars.count(R->getDecl());
    };
    if (const VarDecl *V = assignedVariable(S, /*IncDec=*/true); V && LossVars.count(V))
      Found = S;
    else if (const auto *MC = dyn_cast<CXXMemberCallExpr>(S)) {
      // An in-place tensor method (`loss.nan_to_num_()`) on the loss.
      const CXXMethodDecl *M = MC->getMethodDecl();
      if (M && M->getIdentifier() && M->getName().ends_with("_") && !M->isConst() &&
          Writes(MC->getImplicitObjectArgument()))
        Found = S;
    }
    return true;
  }
};

/// The first call of a statement that may compute differently with autocast off than on: a
/// forward, a function given a module, a tensor result other than a test of values (isfinite,
/// comparisons, detach). The scope's own calls are removed with the scope and do not count. Such
/// a statement runs inside the scope in the original and after value_and_grad, without autocast,
/// in the rewrite.
class AutocastSensitive : public AnalysedBodyVisitor {
public:
  AutocastSensitive(const RuleSet &Rules, const std::set<const Stmt *> &ScopeCalls)
      : Rules(Rules), ScopeCalls(ScopeCalls) {}
  const RuleSet &Rules;
  const std::set<const Stmt *> &ScopeCalls;
  const CallExpr *Found = nullptr;
  bool visitStmt(Stmt *S) override {
    const auto *CE = dyn_cast<CallExpr>(S);
    if (Found || !CE || ScopeCalls.count(CE))
      return true;
    auto IsModule = [&](const Expr *E) {
      QualType T = E->getType().getNonReferenceType();
      if (const auto *P = T->getAs<PointerType>())
        T = P->getPointeeType();
      const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
      return RD && (isDerivedFromAny(RD, Rules.ModuleClasses) ||
                    isDerivedFromAny(RD, Rules.ModuleHolderTemplates));
    };
    bool Sensitive = llvm::any_of(CE->arguments(), IsModule);
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE))
      Sensitive = Sensitive || IsModule(MC->getImplicitObjectArgument());
    if (isTensorType(CE->getType(), Rules)) {
      static const llvm::StringSet<> Tests = {"isfinite", "isnan", "isinf", "isneginf", "isposinf",
                                              "all", "any", "detach", "logical_not", "eq", "ne",
                                              "gt", "ge", "lt", "le"};
      const FunctionDecl *FD = CE->getDirectCallee();
      bool Test = false;
      if (FD && FD->getIdentifier())
        Test = Tests.contains(FD->getName());
      else if (FD && FD->isOverloadedOperator())
        Test = llvm::is_contained({OO_Exclaim, OO_EqualEqual, OO_ExclaimEqual, OO_Less, OO_Greater,
                                   OO_LessEqual, OO_GreaterEqual, OO_AmpAmp, OO_PipePipe},
                                  FD->getOverloadedOperator());
      Sensitive = Sensitive || !Test;
    }
    if (Sensitive)
      Found = CE;
    return true;
  }
};

} // namespace

const Stmt *StepPlanner::guardTail(const AutocastScope &S, llvm::ArrayRef<const Stmt *> Region,
                                   bool Enclosing, size_t &TailAt, std::string &Why) {
  TailAt = Region.size();
  if (Enclosing || T.mixed() || Desc.Split)
    return nullptr;
  size_t First = Region.size();
  for (size_t I = 0; I < Region.size(); ++I) {
    ControlFlowCollector CF;
    CF.walk(Region[I]);
    if (CF.Escape && !isa<CoawaitExpr, CoyieldExpr>(CF.Escape)) {
      First = I;
      break;
    }
  }
  if (First == Region.size() || First == 0)
    return nullptr;
  // Statements before the scope's end move only when autocast does not change them; not in a
  // scope this region's first statement is a call of (a callee's scope ended inside the callee).
  unsigned ScopeEnd = Desc.CalleeScope ? off(Region.front()->getEndLoc()) : S.End;
  if (!Desc.CalleeScope && S.Shape != AutocastScope::Kind::CallPair)
    return nullptr;
  TailHazards H;
  for (const ImplicitBackward *Bi : Desc.AllBackwards) {
    VariablesRead R;
    if (Bi->Scale && Bi->Scale->Call->getNumArgs())
      R.walk(Bi->Scale->Call->getArg(0));
    else if (Bi->Loss)
      R.walk(Bi->Loss);
    H.LossVars.insert(R.Found.begin(), R.Found.end());
  }
  for (const ForwardCall *F : T.Forwards)
    H.StepCalls.insert(F->Call);
  for (const ScalerCall &C : FA.ScalerCalls)
    H.StepCalls.insert(C.Call);
  for (const ZeroGradCall *Z : stepZeroGrads())
    H.StepCalls.insert(Z->Call);
  // The scope's closing calls in the tail (`if (!finite) { set_enabled(false); continue; }`, the
  // disable after it) are removed from the tail with the scope; its enable is not.
  std::set<const Stmt *> ScopeCalls;
  for (const AutocastCall *A : S.Auxiliary)
    ScopeCalls.insert(A->Call);
  if (S.Disable)
    ScopeCalls.insert(S.Disable->Call);
  if (Desc.CalleeScope)
    H.StepCalls.insert(ScopeCalls.begin(), ScopeCalls.end());
  if (S.Enable)
    H.StepCalls.insert(S.Enable->Call);
  for (size_t I = First; I < Region.size(); ++I) {
    if (Region[I]->getBeginLoc().isMacroID()) {
      Why = "it is inside a macro";
      return Region[I];
    }
    if (off(Region[I]->getBeginLoc()) < ScopeEnd) {
      // It ran with autocast on; after the call it runs with autocast off: only a statement that
      // computes the same either way (a test of the loss, a log line, a counter) may move.
      AutocastSensitive AS(Rules, ScopeCalls);
      AS.walk(Region[I]);
      if (AS.Found) {
        Why = "it runs before the autocast scope ends, and `" +
              firstLine(text(AS.Found->getSourceRange())) + "` could compute differently without it";
        return Region[I];
      }
    }
    H.walk(Region[I]);
    if (H.Found) {
      Why = (H.StepCalls.count(H.Found) ? "it holds `" : "`") +
            firstLine(text(H.Found->getSourceRange())) +
            (H.StepCalls.count(H.Found) ? "`, a call of the step's own"
                                        : "` changes what the scaled backward reads");
      return H.Found;
    }
  }
  TailAt = First;
  return nullptr;
}

const Stmt *StepPlanner::removalUnit(const AutocastScope &S, const Stmt *St) const {
  const auto *Block = dyn_cast_or_null<CompoundStmt>(PM.getParent(St));
  const auto *If = Block ? dyn_cast_or_null<IfStmt>(PM.getParent(Block)) : nullptr;
  // A condition that only reads (`use_amp`, an optional scaler's truth) goes with the block.
  if (!If || If->getThen() != Block || If->getElse() || If->getInit() || If->getConditionVariable() ||
      (If->getCond()->HasSideEffects(Ctx) && !onlyReads(If->getCond())))
    return St;
  auto OfScope = [&](const Stmt *Child) {
    auto Is = [&](const AutocastCall *A) { return A && A->Removable == Child; };
    return Is(S.Enable) || Is(S.Disable) || llvm::any_of(S.Auxiliary, Is);
  };
  return llvm::all_of(Block->body(), OfScope) ? If : St;
}

bool StepPlanner::enclosingScopeRegion(const AutocastScope &S, const Stmt *ScopeStart, const CompoundStmt *C,
                                       const Stmt *EndStmt, const Stmt *&R0) {
  auto Different = [&] {
    block(S.ReportLoc, "the autocast scope and the scaled backward are in different blocks");
    return false;
  };
  const CompoundStmt *Outer = parentCompound(ScopeStart);
  const Stmt *Holder = Outer ? childOf(C, Outer) : nullptr;
  if (!Holder || (S.Enable && S.Enable->InLambda) ||
      off(ScopeStart->getBeginLoc()) >= off(Holder->getBeginLoc()))
    return Different();
  // Only loops and plain blocks between the step's block and the scope's: every iteration
  // that reaches the backward ran its forward under the scope.
  for (const Stmt *P = C; P && P != Outer; P = PM.getParent(P))
    if (!isa<CompoundStmt, ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
      return Different();
  if (S.Shape == AutocastScope::Kind::Unclosed) {
    block(S.ReportLoc, "backward() runs inside the autocast scope (the scope is not closed "
                       "before it, nor after the loop that holds the step)");
    return false;
  }
  unsigned HolderEnd = off(Holder->getEndLoc());
  bool ClosedAfter = S.GuardDeclStmt
                         ? llvm::all_of(S.GuardEnds,
                                        [&](const CXXMemberCallExpr *E) {
                                          return off(E->getBeginLoc()) > HolderEnd;
                                        })
                         : S.Disable && childOf(S.Disable->Call, Outer) &&
                               off(S.Disable->Call->getBeginLoc()) > HolderEnd;
  if (!ClosedAfter) {
    const Stmt *Closer = S.GuardDeclStmt ? (S.GuardEnds.empty() ? nullptr : S.GuardEnds.front())
                                         : (S.Disable ? S.Disable->Call : nullptr);
    if (!Closer || !within(Closer, Holder))
      return Different();
    block(S.ReportLoc, "the autocast scope opens before the loop of the step but closes inside "
                       "it (" + lineText(SM, Closer->getBeginLoc()) + "): later iterations run their forward without autocast; migrate this "
                       "step by hand");
    return false;
  }
  for (const Stmt *Child : C->body()) {
    if (Child == EndStmt)
      break;
    if (llvm::any_of(T.Forwards, [&](const ForwardCall *F) { return within(F->Call, Child); })) {
      R0 = Child;
      return true;
    }
  }
  block(S.ReportLoc, "the autocast scope encloses the loop of the step, but no forward of the "
                     "model precedes the scaled backward in the step's block");
  return false;
}

void StepPlanner::checkRegion(const ImplicitBackward &B) {
  std::set<const Stmt *> RemovedUnits;   // scope statements removed (one `if` may hold several)
  const Stmt *EndStmt = B.ScaleStmt ? B.ScaleStmt : B.BackwardStmt;
  // A mixed step: the region ends at the if that chooses the path (checkMixedBackwards removes
  // the backwards in its branches).
  if (T.mixed())
    EndStmt = T.Plain.Ifs.front();
  if (!B.BackwardStmt || !EndStmt) {
    block(B.Backward->getBeginLoc(), "backward() is part of a larger expression");
    return;
  }
  const CompoundStmt *C = parentCompound(EndStmt);
  if (!C || (B.ScaleStmt && parentCompound(B.BackwardStmt) != C)) {
    block(B.Backward->getBeginLoc(), "the scaled loss and backward() are not statements of one block");
    return;
  }
  if (!T.mixed() && !Desc.Split && !checkAccumulation(B, C))
    return;
  // The scope in this function; or, with the scope in a called function, the statement that
  // calls it starts the region.
  const AutocastScope &S = Desc.CalleeScope ? *Desc.CalleeScope : *T.Scope;
  const Stmt *R0 = Desc.CalleeCallStmt;
  bool Enclosing = false; // the scope encloses the loop that holds the step
  if (!Desc.CalleeScope) {
    const Stmt *ScopeStart = S.GuardDeclStmt ? S.GuardDeclStmt
                                             : (S.Enable->Removable ? S.Enable->Removable : S.Enable->Call);
    R0 = childOf(ScopeStart, C);
    unsigned BackOff = off(B.Backward->getBeginLoc());
    if (!R0) {
      if (!enclosingScopeRegion(S, ScopeStart, C, EndStmt, R0))
        return;
      Enclosing = true;
    } else if (S.Shape == AutocastScope::Kind::Unclosed || (S.Disable && off(S.Disable->Call->getBeginLoc()) > BackOff) ||
        (S.GuardDeclStmt && parentCompound(S.GuardDeclStmt) == C && S.GuardEnds.empty())) {
      block(B.Backward->getBeginLoc(), "backward() runs inside the autocast scope (the scope is "
                                       "not closed before it)");
      return;
    }
  }
  // Region statements: [R0, EndStmt) in C.
  std::vector<const Stmt *> Region;
  bool In = false;
  for (const Stmt *Child : C->body()) {
    if (Child == R0)
      In = true;
    if (Child == EndStmt)
      break;
    if (In)
      Region.push_back(Child);
  }
  if (Region.empty()) {
    block(S.ReportLoc, "the autocast scope does not precede the backward in its block");
    return;
  }
  // A guard between the forward and the backward that leaves the iteration (`if (!finite) {
  // log; continue; }`): it runs after the call instead, before the step, with the same effect.
  size_t TailAt = Region.size();
  std::string TailWhy;
  const Stmt *TailStop = guardTail(S, Region, Enclosing, TailAt, TailWhy);
  for (size_t I = 0; I < TailAt; ++I) {
    const Stmt *St = Region[I];
    ControlFlowCollector CF;
    CF.walk(St);
    if (CF.Escape) {
      if (isa<CoawaitExpr>(CF.Escape) || isa<CoyieldExpr>(CF.Escape))
        block(CF.Escape->getBeginLoc(), "the forward region suspends the coroutine (co_await or "
                                        "co_yield), which cannot move into the function given "
                                        "to amp::value_and_grad");
      else
        block(CF.Escape->getBeginLoc(),
              "the forward region contains a statement that leaves it (return, break, continue "
              "or goto), which cannot move into the function given to amp::value_and_grad" +
                  (TailStop ? "; nor can it run after that call, before the step (" +
                                  where(TailStop->getBeginLoc()) + "): " + TailWhy
                            : std::string()));
      return;
    }
  }
  unsigned RB, RE;
  if (!fileRange(SourceRange(R0->getBeginLoc(), R0->getBeginLoc()), RB, RE) && !R0->getBeginLoc().isMacroID()) {
    block(R0->getBeginLoc(), "the forward region starts inside a macro");
    return;
  }
  RB = off(R0->getBeginLoc());
  const ImplicitBackward &LastB = *Desc.AllBackwards.back();
  CharSourceRange EndR = stmtRange(LastB.BackwardStmt);
  if (EndR.isInvalid() || LastB.BackwardStmt->getBeginLoc().isMacroID() ||
      B.BackwardStmt->getBeginLoc().isMacroID()) {
    block(B.Backward->getBeginLoc(), "backward() is inside a macro");
    return;
  }
  RegionBegin = lineStart(RB);
  if (!onlySpace(RegionBegin, RB)) {
    block(R0->getBeginLoc(), "the forward region does not start its line");
    return;
  }
  for (const Edit &G : VersionGroups) // the enable spelled per version: from its `#if` on
    if (G.Offset < RegionBegin && RegionBegin < G.Offset + G.Length)
      RegionBegin = G.Offset;
  unsigned BE = SM.getFileOffset(EndR.getEnd());
  RegionEnd = lineEnd(BE);
  if (T.mixed()) // the region's text ends where the if starts; the if stays
    RegionEnd = lineStart(off(EndStmt->getBeginLoc()));
  unsigned BodyEnd = RegionEnd; // text up to (not including) the scale/backward statements
  unsigned EndStmtOff = lineStart(off(EndStmt->getBeginLoc()));
  BodyEnd = EndStmtOff;
  if (!onlySpace(EndStmtOff, off(EndStmt->getBeginLoc()))) {
    block(EndStmt->getBeginLoc(), "the scaled backward does not start its line");
    return;
  }
  unsigned TailBegin = EndStmtOff; // the guard tail: [TailBegin, EndStmtOff)
  if (TailAt < Region.size()) {
    TailBegin = lineStart(off(Region[TailAt]->getBeginLoc()));
    if (!onlySpace(TailBegin, off(Region[TailAt]->getBeginLoc()))) {
      block(Region[TailAt]->getBeginLoc(), "the statement that leaves the iteration before the "
                                           "backward does not start its line");
      return;
    }
    BodyEnd = TailBegin;
  }
  std::vector<Edit> TailEdits; // the scope's calls in the tail, removed from its text
  auto InTail = [&](unsigned O) { return O >= TailBegin && O < EndStmtOff; };
  std::string Indent = indentAt(RB);
  if (!checkCrossStepGraph(RB, BodyEnd))
    return;

  // Edits inside the region, relative to the file.
  std::vector<Edit> Inner;
  auto RemoveStmt = [&](const Stmt *St, SourceLocation Why) { removeInto(St, Why, Inner); };
  // The scope's own statements: inside the region they leave with it; outside it (a scope
  // around the loop, a cache call after the region) they are removed where they are.
  auto RemoveScopeStmt = [&](const Stmt *St, SourceLocation Why) {
    unsigned O = off(St->getBeginLoc());
    if (O >= RB && O < BodyEnd)
      RemoveStmt(St, Why);
    else if (InTail(O))
      removeInto(St, Why, TailEdits);
    else
      removeInto(St, Why, Desc.Region.InFile);
  };
  auto RemoveCall = [&](const AutocastCall *A) {
    if (!A)
      return;
    if (!A->Removable) {
      if (A->MacroUse.isValid())
        block(A->MacroUse, "an autocast call sits inside a macro body with other code; edit "
                           "the macro by hand (macro bodies are never edited)");
      else
        block(A->Call->getBeginLoc(), "the autocast call is part of a larger expression");
      return;
    }
    const Stmt *Unit = removalUnit(S, A->Removable);
    if (RemovedUnits.insert(Unit).second)
      RemoveScopeStmt(Unit, A->Call->getBeginLoc());
  };
  if (Desc.CalleeScope) {
    checkCalleeScope();
  } else {
    RemoveCall(S.Enable);
    RemoveCall(S.Disable);
    for (const AutocastCall *A : S.Auxiliary) {
      unsigned O = off(A->Call->getBeginLoc());
      if ((O >= RB && O < BodyEnd) || InTail(O))
        RemoveCall(A);
      else if (A->Removable && Enclosing)
        RemoveCall(A); // with its `if (use_amp) { ... }` when that holds only the scope's calls
      else if (A->Removable) {
        Edit E;
        // A call in a conditional that goes whole with the region (`#ifdef USE_AMP` before the
        // enable) leaves with it.
        auto WithRegion = [&] {
          return llvm::any_of(VersionGroups, [&](const Edit &G) {
            return G.Offset >= RegionBegin && G.Offset < BodyEnd && E.Offset >= G.Offset &&
                   E.Offset < G.Offset + G.Length;
          });
        };
        if (removal(A->Removable, E) && !WithRegion())
          Desc.Region.replace(E);
      }
    }
    if (S.GuardDeclStmt)
      RemoveScopeStmt(S.GuardDeclStmt, S.ReportLoc);
    for (const CXXMemberCallExpr *End : S.GuardEnds) {
      const Stmt *St = End;
      while (PM.getParent(St) && !isa<CompoundStmt>(PM.getParent(St)))
        St = PM.getParent(St);
      RemoveScopeStmt(St, End->getBeginLoc());
    }
  }
  // A scope around the loop covers every forward of the model in it: one outside this step's
  // region would keep running under no autocast on the unconverted model.
  if (Enclosing)
    for (const ForwardCall *F : T.Forwards) {
      unsigned O = off(F->Call->getBeginLoc());
      if (O < RB || O >= BodyEnd) {
        block(F->Call->getBeginLoc(),
              "`" + text(F->Call->getSourceRange()) + "` runs in the autocast scope around the "
              "loop but outside the step's forward region; after the rewrite it would run in "
              "fp32 on the unconverted model: migrate this step by hand");
        return;
      }
    }
  // Forward calls go through the converted model; outputs back to ordinary tensors.
  std::vector<std::string> Conversions;
  for (const ForwardCall *F : T.Forwards) {
    unsigned O = off(F->Call->getBeginLoc());
    if (O < RB || O >= BodyEnd)
      continue;
    if (const CallExpr *Q = autocastQueryInForward(F->Call, Rules)) {
      block(F->Call->getBeginLoc(),
            "the model's forward asks whether autocast is on (`" +
                firstLine(text(Q->getSourceRange())) + "` at " + where(Q->getBeginLoc()) +
                "); after the conversion autocast is never enabled, so that code would take "
                "its other path: migrate this step by hand");
      return;
    }
    std::string Conv;
    if (auto Known = ModelNames.find(F->Model.Decl); Known != ModelNames.end()) {
      Conv = Known->second; // converted already by this step
    } else {
      unsigned At = 0;
      bool BeforeLoop = false;
      llvm::SmallVector<const LambdaExpr *, 2> Crossed;
      if (auto LP = conversionOutsideLambdas(R0, F->Model, FA.Function, PM, SM)) {
        // The step runs in a lambda that captures the model: converted once, outside it.
        if (!conversionBefore(F->Model, LP->Anchor, At)) {
          block(LP->Anchor->getBeginLoc(), "the statement holding the lambda of the step does "
                                           "not start its line; the model cannot be converted "
                                           "before it");
          return;
        }
        BeforeLoop = true;
        Crossed = LP->Crossed;
      } else {
        BeforeLoop = conversionBeforeLoop(F->Model, R0, At);
      }
      std::string Level, Dtype;
      if (!levelExpr(S, BeforeLoop ? At : RB, Level) || !conversionArgs(S, BeforeLoop ? At : RB, Dtype))
        return;
      std::string Rhs = " = " + Tgt.Convert + "(" + modelText(F->Model) + ", " + Level + Dtype + ");\n";
      const FunctionPlanning::Conversion *Earlier = nullptr;
      if (BeforeLoop) {
        auto It = Shared.Conversions.find({F->Model.Decl, At});
        if (It != Shared.Conversions.end())
          Earlier = &It->second;
      }
      if (Earlier && Earlier->Line != indentAt(At) + "auto " + Earlier->Name + Rhs) {
        block(F->Call->getBeginLoc(),
              "another training step of this function converts `" + modelText(F->Model) +
                  "` before the same loop differently (`" + StringRef(Earlier->Line).trim().str() +
                  "`); a model has one conversion: migrate these steps by hand");
        return;
      }
      Conv = Earlier ? Earlier->Name : freshName(convertedModelBase(F->Model));
      ModelNames[F->Model.Decl] = Conv;
      for (const LambdaExpr *L : Crossed) {
        std::optional<Edit> Capture = captureByCopy(L, Conv, SM);
        if (!Capture) {
          block(L->getBeginLoc(), "the capture list of the lambda holding the step is inside "
                                  "a macro; it cannot be given the converted model");
          return;
        }
        if (!Capture->Text.empty())
          Desc.Region.replace(*Capture);
      }
      std::string Line = "auto " + Conv + Rhs;
      if (BeforeLoop) {
        std::string Indented = perConfiguration(indentAt(At) + Line, Level);
        Desc.Region.insertJoined(At, Indented);
        LoopConversions.push_back({At, Indented});
        Shared.Conversions.try_emplace({F->Model.Decl, At}, FunctionPlanning::Conversion{Conv, Indented});
      } else {
        Conversions.push_back(perConfiguration(Indent + Line, Level));
      }
    }
    rewriteForward(*F, Conv, Inner);
  }
  // A structured binding of the enclosing code (`for (auto &[x, y] : batches)`) cannot be captured
  // by the lambda before C++20 (clang warns, older compilers refuse).
  if (!Ctx.getLangOpts().CPlusPlus20)
    for (const Stmt *St : Region) {
      struct Bindings : AstVisitor {
        const DeclRefExpr *Found = nullptr;
        unsigned From = 0;
        const SourceManager &SM;
        explicit Bindings(const SourceManager &SM) : SM(SM) {}
        bool visitStmt(Stmt *X) override {
          if (const auto *R = dyn_cast<DeclRefExpr>(X); R && isa<BindingDecl>(R->getDecl()) &&
              SM.getFileOffset(SM.getExpansionLoc(R->getDecl()->getLocation())) < From)
            Found = R;
          return !Found;
        }
      } B(SM);
      B.From = RB;
      B.walk(St);
      if (B.Found) {
        block(B.Found->getBeginLoc(),
              "the forward region uses the structured binding '" +
                  B.Found->getDecl()->getNameAsString() + "', which the lambda of " +
                  Tgt.ValueAndGrad + " cannot capture before C++20: bind it to a variable "
                  "first, or migrate by hand");
        return;
      }
    }
  // A scope whose forward runs in a function it calls (`loss = compute_loss(batch);` in the scope,
  // `model_->forward` in compute_loss): with the scope removed and no model converted, the step
  // would train in fp32.
  if (!Desc.CalleeScope && ModelNames.empty()) {
    const CallExpr *Via = nullptr;
    for (const Stmt *St : Region) {
      struct Calls : AstVisitor {
        const SourceManager &SM;
        const CallExpr *First = nullptr;
        explicit Calls(const SourceManager &SM) : SM(SM) {}
        bool visitStmt(Stmt *X) override {
          const auto *CE = dyn_cast<CallExpr>(X);
          const FunctionDecl *Def = nullptr;
          if (CE && !First && !isa<CXXOperatorCallExpr>(CE) && CE->getDirectCallee() &&
              CE->getDirectCallee()->hasBody(Def) &&
              SM.isWrittenInMainFile(SM.getExpansionLoc(Def->getLocation())))
            First = CE;
          return !First;
        }
      } C(SM);
      C.walk(St);
      unsigned O = C.First ? off(C.First->getBeginLoc()) : 0;
      if (C.First && O >= S.Begin && O <= S.End) {
        Via = C.First;
        break;
      }
    }
    block(S.ReportLoc, "no forward of a model runs in the autocast scope itself" +
                           (Via ? " (it calls `" + firstLine(text(Via->getSourceRange())) +
                                      "`, whose forward would run in fp32 once the scope is gone)"
                                : std::string()) +
                           "; the model to convert is not known: migrate this step by hand");
    return;
  }
  // zero_grad inside the region goes.
  for (const ZeroGradCall *Z : stepZeroGrads()) {
    unsigned O = off(Z->Call->getBeginLoc());
    if (O >= RB && O < BodyEnd && Z->Statement) {
      if (!Desc.Accumulation.On) {
        RemoveStmt(Z->Statement, Z->Call->getBeginLoc());
        continue;
      }
      CharSourceRange ZR = stmtRange(Z->Statement);
      if (ZR.isInvalid() || Z->Statement->getBeginLoc().isMacroID()) {
        block(Z->Call->getBeginLoc(), "zero_grad() is inside a macro");
        continue;
      }
      unsigned ZB = SM.getFileOffset(ZR.getBegin()), ZE = SM.getFileOffset(ZR.getEnd());
      Inner.push_back({ZB, ZE - ZB, Desc.GradsName + ".clear();"});
    }
  }
  // Declarations of the region that the code after it still names are declared before the
  // lambda (or the step is blocked). What stays outside: everything after the scale statement
  // except the scaled backward(s), whose scale() argument becomes the lambda's return.
  auto UsedOutside = [&](const Expr *E) {
    if (off(E->getBeginLoc()) < BodyEnd)
      return false;
    for (const ImplicitBackward *Bi : Desc.AllBackwards)
      if ((Bi->BackwardStmt && within(E, Bi->BackwardStmt)) ||
          (Bi->ScaleStmt && within(E, Bi->ScaleStmt)))
        return false;
    return !inMixedBackward(E); // a mixed step's backwards leave their branches too
  };
  RegionDeclarations Decls;
  if (auto Why = planRegionDeclarations(Ctx, Rules, Region, FA.Function->getBody(), UsedOutside,
                                        Decls)) {
    block(Why->Loc, Why->Reason);
    return;
  }
  std::string Hoisted;
  for (const std::string &D : Decls.Hoisted)
    Hoisted += Indent + D + "\n";
  Inner.insert(Inner.end(), Decls.Inner.begin(), Decls.Inner.end());
  if (!Blockers.empty())
    return;

  // Build the new region text: prelude, lambda with the re-indented body, the call.
  llvm::sort(Inner, [](const Edit &A, const Edit &B) {
    return A.Offset < B.Offset || (A.Offset == B.Offset && A.Length < B.Length);
  });
  // Several calls of one macro use (`AMP_OFF()` expanding to a disable and clear_cache) remove
  // the same text: one edit.
  Inner.erase(std::unique(Inner.begin(), Inner.end(),
                          [](const Edit &A, const Edit &B) {
                            return A.Offset == B.Offset && A.Length == B.Length && A.Text == B.Text;
                          }),
              Inner.end());
  for (size_t I = 1; I < Inner.size(); ++I)
    if (Inner[I].Offset < Inner[I - 1].Offset + Inner[I - 1].Length) {
      block(SM.getLocForStartOfFile(File).getLocWithOffset(Inner[I].Offset),
            "overlapping edits in the forward region");
      return;
    }
  std::string Body;
  unsigned Cur = RegionBegin;
  for (const Edit &E : Inner) {
    if (E.Offset < RegionBegin || E.Offset + E.Length > BodyEnd) {
      block(SM.getLocForStartOfFile(File).getLocWithOffset(E.Offset), "edit outside the forward region");
      return;
    }
    Body += Buffer.substr(Cur, E.Offset - Cur).str();
    Body += E.Text;
    Cur = E.Offset + E.Length;
  }
  Body += Buffer.substr(Cur, BodyEnd - Cur).str();
  // Re-indent the body by one level (two spaces), line by line, leaving blank lines blank.
  // A region that is one block `{ ... }` gives its contents: the lambda is the block now.
  std::string Indented;
  bool Unwrap = false;
  if (Region.size() == 1 && isa<CompoundStmt>(Region.front()) && !Region.front()->getBeginLoc().isMacroID()) {
    StringRef BodyRef(Body);
    StringRef Trimmed = BodyRef.trim();
    size_t Open = BodyRef.find('{'), Close = BodyRef.rfind('}');
    if (Trimmed.starts_with("{") && Trimmed.ends_with("}") && Open != StringRef::npos &&
        onlySpace(0, 0)) {
      StringRef Inside = BodyRef.slice(Open + 1, Close);
      // Keep whole lines: drop the rest of the `{` line and the indentation before `}`.
      size_t FirstNL = Inside.find('\n');
      size_t LastNL = Inside.rfind('\n');
      if (FirstNL != StringRef::npos && Inside.take_front(FirstNL).trim().empty() &&
          Inside.drop_front(LastNL + 1).trim().empty()) {
        Indented = Inside.slice(FirstNL + 1, LastNL + 1).str();
        Unwrap = true;
      }
    }
  }
  StringRef Rest(Unwrap ? StringRef() : StringRef(Body));
  while (!Rest.empty()) {
    auto [Line, Tail] = Rest.split('\n');
    if (!Line.trim().empty())
      Indented += "  ";
    Indented += Line.str();
    if (Rest.size() > Line.size())
      Indented += "\n";
    Rest = Tail;
  }
  // The function returns the scaled loss (the sum of them, with several backwards).
  std::string ScaleCall;
  for (const ImplicitBackward *Bi : Desc.AllBackwards) {
    if (!Bi->Scale) { // no scaler: the function returns the loss itself
      ScaleCall += (ScaleCall.empty() ? "" : " + ") + text(Bi->Loss->getSourceRange());
      continue;
    }
    const CXXMemberCallExpr *SCall = Bi->Scale->Call;
    std::string ScaleArg = SCall->getNumArgs() ? text(SCall->getArg(0)->getSourceRange()) : "";
    // The receiver as written, with its `.` or `->` (`scaler.`, `scaler->` on a smart pointer,
    // `(*scaler).`): the text from the call's start up to the method name.
    std::string ScalerRecv;
    if (const auto *ME = dyn_cast<MemberExpr>(SCall->getCallee());
        ME && !ME->getMemberLoc().isMacroID() && !SCall->getBeginLoc().isMacroID()) {
      unsigned RB0 = off(SCall->getBeginLoc()), RE0 = off(ME->getMemberLoc());
      if (RE0 > RB0)
        ScalerRecv = StringRef(Buffer).substr(RB0, RE0 - RB0).rtrim().str();
    }
    if (ScalerRecv.empty()) {
      block(SCall->getBeginLoc(), "the scale() call is inside a macro body");
      return;
    }
    ScaleCall += (ScaleCall.empty() ? "" : " + ") + ScalerRecv +
                 canonicalMethod(ScalerCall::Method::Scale) + "(" + ScaleArg + ")";
  }

  if (T.mixed())
    ScaleCall = mixedReturn(ScaleCall);
  std::string ValueName = "scaled_loss";
  bool AssignBack = false;
  if (T.Unscaled || T.mixed())
    ValueName = freshName("loss_value");
  else if (B.SplitVar && !B.SplitAssignsArgument && isa<DeclStmt>(B.ScaleStmt))
    ValueName = B.SplitVar->getNameAsString();
  else {
    ValueName = freshName("scaled_loss");
    AssignBack = B.SplitVar != nullptr;
  }
  // The guard tail's text, less the scope's calls in it.
  llvm::sort(TailEdits, [](const Edit &A, const Edit &B) { return A.Offset < B.Offset; });
  std::string GuardText;
  unsigned TailCur = TailBegin;
  for (const Edit &E : TailEdits) {
    if (E.Offset < TailCur || E.Offset + E.Length > EndStmtOff) {
      block(SM.getLocForStartOfFile(File).getLocWithOffset(E.Offset),
            "overlapping edits in the statements that leave the iteration before the backward");
      return;
    }
    GuardText += Buffer.substr(TailCur, E.Offset - TailCur).str() + E.Text;
    TailCur = E.Offset + E.Length;
  }
  GuardText += Buffer.substr(TailCur, EndStmtOff - TailCur).str();
  RegionLambda &L = Desc.Lambda.emplace();
  L.Guard = GuardText;
  L.Begin = RegionBegin;
  L.End = RegionEnd;
  L.Indent = Indent;
  for (const std::string &C : Conversions)
    L.Before += C;
  L.Before += Hoisted;
  L.Body = Indented;
  L.Returns = ScaleCall;
  L.ValueName = ValueName;
  // Comments after the statements the call replaces (the scale and backward lines) stay on
  // the line of the call.
  auto KeepTrailing = [&](const Stmt *St) {
    if (!St)
      return;
    CharSourceRange R = stmtRange(St);
    if (R.isInvalid())
      return;
    unsigned E = SM.getFileOffset(R.getEnd());
    StringRef Rest = StringRef(Buffer).slice(E, lineEnd(E)).rtrim("\r\n");
    if (!Rest.trim().empty())
      L.Trailing += " " + Rest.trim().str();
  };
  // (A mixed step's if stays, and its backwards' comments stay in their branches.)
  if (!T.mixed()) {
    KeepTrailing(EndStmt);
    for (const ImplicitBackward *Bi : Desc.AllBackwards)
      if (Bi->BackwardStmt != EndStmt)
        KeepTrailing(Bi->BackwardStmt);
  }
  if (Desc.Accumulation.On)
    L.MicroName = freshName("micro_grads");
  if (AssignBack)
    L.AssignBackTo = B.SplitVar->getNameAsString();
  // Statements between the scale statement and backward (split form) stay after the call.
  if (B.ScaleStmt) {
    unsigned SB = lineEnd(SM.getFileOffset(stmtRange(B.ScaleStmt).getEnd()));
    unsigned BB = lineStart(off(B.BackwardStmt->getBeginLoc()));
    if (SB < BB)
      L.After += Buffer.substr(SB, BB - SB).str();
  }
  // Comments between several backwards stay, after the call.
  for (size_t I = 1; I < Desc.AllBackwards.size(); ++I) {
    unsigned SB = lineEnd(SM.getFileOffset(stmtRange(Desc.AllBackwards[I - 1]->BackwardStmt).getEnd()));
    unsigned BB = lineStart(off(Desc.AllBackwards[I]->BackwardStmt->getBeginLoc()));
    if (SB < BB)
      L.After += Buffer.substr(SB, BB - SB).str();
  }
}

void StepEmitter::emitRegion() const {
  Out.write(D.Region);
  if (!D.Lambda)
    return; // the stepping half of a split step has no region
  const RegionLambda &L = *D.Lambda;
  const std::string &Indent = L.Indent;
  std::string Text = L.Before;
  Text += Indent + "auto " + D.GradFnName + " = " + Tgt.ValueAndGrad + "([&] {\n";
  Text += L.Body;
  Text += Indent + "  return " + L.Returns + ";\n";
  Text += Indent + "}, " + D.OptParams + ");\n";
  if (D.Accumulation.On) {
    Text += Indent + "auto [" + L.ValueName + ", " + L.MicroName + "] = " + D.GradFnName + "();" +
            L.Trailing + "\n";
    Text += L.Guard;
    Text += Indent + Tgt.Accumulate + "(" + D.GradsName + ", " + L.MicroName + ");\n";
  } else {
    Text += Indent + "auto [" + L.ValueName + ", " + D.GradsName + "] = " + D.GradFnName + "();" +
            L.Trailing + "\n";
    Text += L.Guard;
  }
  if (!D.PerOptimizer.empty() && !D.Accumulation.On) {
    std::string Names;
    for (const auto &[O, Name] : D.PerOptimizer)
      Names += (Names.empty() ? "" : ", ") + Name;
    Text += Indent + "auto [" + Names + "] = " + Tgt.SplitGrads + "(" + D.GradsName + ", " +
            D.OptimizerArgs + ");\n";
  }
  if (!L.AssignBackTo.empty())
    Text += Indent + L.AssignBackTo + " = " + L.ValueName + ";\n";
  Text += L.After;
  Out.replace(L.Begin, L.End - L.Begin, Text);
}

} // namespace ampmigrate
