// Where the forward region may start and end: a scope around the loop of the step, the
// statements that leave it (and the guard tail that can run after value_and_grad instead), a graph
// shared with another step's forward region, and what goes when a scope call goes.
#include "ampmigrate/SourceText.h"
#include "RegionPlanner.h"

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

bool RegionPlanner::checkCrossStepGraph(unsigned RB, unsigned BodyEnd) {
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
    unsigned O = C.off(L);
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
              "`, computed in the forward region of another training step (" + C.where(Made) + ")"
        : "`" + V->getNameAsString() + "`, computed in this step's forward region (" + C.where(Made) +
              "), is differentiated by another training step (" + C.where(E->getBeginLoc()) + ")";
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

const Stmt *RegionPlanner::guardTail(const AutocastScope *S, llvm::ArrayRef<const Stmt *> Region,
                                   bool Enclosing, size_t &TailAt, std::string &Why) {
  TailAt = Region.size();
  if (Enclosing || T.mixed() || F.Split)
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
  // With no scope (an fp32 forward) nothing ran under autocast.
  unsigned ScopeEnd = !S ? 0 : F.CalleeScope ? C.off(Region.front()->getEndLoc()) : S->End;
  if (S && !F.CalleeScope && S->Shape != AutocastScope::Kind::CallPair)
    return nullptr;
  TailHazards H;
  for (const ImplicitBackward *Bi : F.AllBackwards) {
    VariablesRead R;
    if (Bi->Scale && Bi->Scale->Call->getNumArgs())
      R.walk(Bi->Scale->Call->getArg(0));
    else if (Bi->Loss)
      R.walk(Bi->Loss);
    H.LossVars.insert(R.Found.begin(), R.Found.end());
  }
  for (const ForwardCall *Fwd : T.Forwards)
    H.StepCalls.insert(Fwd->Call);
  for (const ScalerCall &SC : FA.ScalerCalls)
    H.StepCalls.insert(SC.Call);
  for (const ZeroGradCall *Z : F.stepZeroGrads(T))
    H.StepCalls.insert(Z->Call);
  // The scope's closing calls in the tail (`if (!finite) { set_enabled(false); continue; }`, the
  // disable after it) are removed from the tail with the scope; its enable is not.
  std::set<const Stmt *> ScopeCalls;
  if (S) {
    for (const AutocastCall *A : S->Auxiliary)
      ScopeCalls.insert(A->Call);
    if (S->Disable)
      ScopeCalls.insert(S->Disable->Call);
    if (F.CalleeScope)
      H.StepCalls.insert(ScopeCalls.begin(), ScopeCalls.end());
    if (S->Enable)
      H.StepCalls.insert(S->Enable->Call);
  }
  for (size_t I = First; I < Region.size(); ++I) {
    if (Region[I]->getBeginLoc().isMacroID()) {
      Why = "it is inside a macro";
      return Region[I];
    }
    if (C.off(Region[I]->getBeginLoc()) < ScopeEnd) {
      // It ran with autocast on; after the call it runs with autocast off: only a statement that
      // computes the same either way (a test of the loss, a log line, a counter) may move.
      AutocastSensitive AS(Rules, ScopeCalls);
      AS.walk(Region[I]);
      if (AS.Found) {
        Why = "it runs before the autocast scope ends, and `" +
              firstLine(C.text(AS.Found->getSourceRange())) + "` could compute differently without it";
        return Region[I];
      }
    }
    H.walk(Region[I]);
    if (H.Found) {
      Why = (H.StepCalls.count(H.Found) ? "it holds `" : "`") +
            firstLine(C.text(H.Found->getSourceRange())) +
            (H.StepCalls.count(H.Found) ? "`, a call of the step's own"
                                        : "` changes what " + C.backwardWords() + " reads");
      return H.Found;
    }
  }
  TailAt = First;
  return nullptr;
}

bool RegionPlanner::enclosingScopeRegion(const AutocastScope &S, const Stmt *ScopeStart, const CompoundStmt *Block,
                                       const Stmt *EndStmt, const Stmt *&R0) {
  auto Different = [&] {
    block(S.ReportLoc, "the autocast scope and " + C.backwardWords() + " are in different blocks");
    return false;
  };
  const CompoundStmt *Outer = C.parentCompound(ScopeStart);
  const Stmt *Holder = Outer ? C.childOf(Block, Outer) : nullptr;
  if (!Holder || (S.Enable && S.Enable->InLambda) ||
      C.off(ScopeStart->getBeginLoc()) >= C.off(Holder->getBeginLoc()))
    return Different();
  // Only loops and plain blocks between the step's block and the scope's: every iteration
  // that reaches the backward ran its forward under the scope.
  for (const Stmt *P = Block; P && P != Outer; P = PM.getParent(P))
    if (!isa<CompoundStmt, ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
      return Different();
  if (S.Shape == AutocastScope::Kind::Unclosed) {
    block(S.ReportLoc, "backward() runs inside the autocast scope (the scope is not closed "
                       "before it, nor after the loop that holds the step)");
    return false;
  }
  unsigned HolderEnd = C.off(Holder->getEndLoc());
  bool ClosedAfter = S.GuardDeclStmt
                         ? llvm::all_of(S.GuardEnds,
                                        [&](const CXXMemberCallExpr *E) {
                                          return C.off(E->getBeginLoc()) > HolderEnd;
                                        })
                         : S.Disable && C.childOf(S.Disable->Call, Outer) &&
                               C.off(S.Disable->Call->getBeginLoc()) > HolderEnd;
  if (!ClosedAfter) {
    const Stmt *Closer = S.GuardDeclStmt ? (S.GuardEnds.empty() ? nullptr : S.GuardEnds.front())
                                         : (S.Disable ? S.Disable->Call : nullptr);
    if (!Closer || !C.within(Closer, Holder))
      return Different();
    block(S.ReportLoc, "the autocast scope opens before the loop of the step but closes inside "
                       "it (" + lineText(SM, Closer->getBeginLoc()) + "): later iterations run their forward without autocast; migrate this "
                       "step by hand");
    return false;
  }
  for (const Stmt *Child : Block->body()) {
    if (Child == EndStmt)
      break;
    if (llvm::any_of(T.Forwards, [&](const ForwardCall *Fwd) { return C.within(Fwd->Call, Child); })) {
      R0 = Child;
      return true;
    }
  }
  block(S.ReportLoc, "the autocast scope encloses the loop of the step, but no forward of the "
                     "model precedes " + C.backwardWords() + " in the step's block");
  return false;
}

std::optional<size_t> RegionPlanner::tailStart(const ForwardRegion &R) {
  // A guard between the forward and the backward that leaves the iteration (`if (!finite) {
  // log; continue; }`): it runs after the call instead, before the step, with the same effect.
  size_t TailAt = R.Statements.size();
  std::string TailWhy;
  const Stmt *TailStop = guardTail(R.Scope, R.Statements, R.Enclosing, TailAt, TailWhy);
  for (size_t I = 0; I < TailAt; ++I) {
    const Stmt *St = R.Statements[I];
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
                                  C.where(TailStop->getBeginLoc()) + "): " + TailWhy
                            : std::string()));
      return std::nullopt;
    }
  }
  return TailAt;
}

} // namespace ampmigrate
