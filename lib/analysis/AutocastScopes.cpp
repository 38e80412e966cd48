// Autocast scopes from the calls and guards of a function (pairs, guards, macro pairs, unclosed enables).
#include "FunctionAnalyser.h"
#include "ampmigrate/SourceText.h"
#include "ampmigrate/StepFinder.h"

using namespace clang;

namespace ampmigrate {

void ScopeBuilder::run() {
  buildScopes();
  collectInactive();
}

unsigned ScopeBuilder::endOffsetOfBlock(const Stmt *S) const {
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
    if (isa<CompoundStmt>(P))
      return offsetOf(P->getEndLoc());
  return offsetOf(FD->getBody()->getEndLoc());
}

const CXXCatchStmt *ScopeBuilder::handlerOf(const Stmt *S) const {
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P)) {
    if (const auto *H = dyn_cast<CXXCatchStmt>(P))
      return H;
    if (isa<LambdaExpr>(P))
      return nullptr;
  }
  return nullptr;
}

void ScopeBuilder::buildScopes() {
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
        // `try`): the scope ends at the last; the earlier ones belong to it. A disable in a
        // handler after the one on the normal path (`try { on; ...; off; step } catch (...)
        // { off; continue; }`) belongs to the scope too, but does not end it.
        for (size_t K = J + 1; TurnsOn && K < Enables.size(); ++K) {
          const AutocastCall *D = Enables[K];
          if (Used[K] || !sameDevice(*E, *D))
            continue;
          if (D->Turns != AutocastCall::State::Off && D->Turns != AutocastCall::State::Restore)
            break;
          Used[K] = true;
          const CXXCatchStmt *H = handlerOf(D->Call);
          if (H && H != handlerOf(Close->Call)) {
            ExtraCloses.push_back(D);
            continue;
          }
          ExtraCloses.push_back(Close);
          Close = D;
        }
        break;
      }
      if (C->Turns == E->Turns)
        break; // enabled twice: the first one is never closed on its own
    }
    Used[I] = true;
    if (!TurnsOn && !Close)
      continue; // a lone disable: nothing to report
    // A disable inside a loop that the enable precedes, re-enabled later in that loop and closed
    // for good after it: one scope with a hole around what lies between (`on; for (...) { fwd;
    // off; loss; backward(); on; } off;`). Every iteration's forward runs with autocast on.
    llvm::SmallVector<AutocastScope::Hole, 1> Holes;
    while (TurnsOn && Close && ExtraCloses.empty()) {
      std::optional<AutocastScope::Hole> H = holeAt(Enables, Used, *E, *Close);
      if (!H)
        break;
      Holes.push_back(*H);
      Close = closeAfterHole(Enables, Used, *E, *H->On);
    }
    AutocastScope S;
    S.Holes = Holes;
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
    if (const CompoundStmt *Block = enclosingBlock(G.DS))
      S.GuardBlockEnd = Block->getRBracLoc();
    FA.Scopes.push_back(S);
  }
  // Guard end calls (`guard.End()`), and auxiliary calls that belong to a scope.
  for (AutocastScope &S : FA.Scopes) {
    if (const Stmt *Anchor = S.Enable ? static_cast<const Stmt *>(S.Enable->Call) : S.GuardDeclStmt)
      S.NoGradGuard = noGradGuardOver(Anchor);
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

const Stmt *ScopeBuilder::loopBetween(const Stmt *Inner, const Stmt *Outside) const {
  const Stmt *Found = nullptr;
  for (const Stmt *P = PM.getParent(Inner); P; P = PM.getParent(P)) {
    if (isa<LambdaExpr>(P))
      return nullptr;
    if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P) && !encloses(P, Outside))
      Found = P; // the outermost loop holding Inner but not Outside
  }
  return Found;
}

std::optional<AutocastScope::Hole>
ScopeBuilder::holeAt(const std::vector<const AutocastCall *> &Enables, const std::vector<bool> &Used,
                     const AutocastCall &Enable, const AutocastCall &Off) const {
  if (Off.Turns != AutocastCall::State::Off || Off.MacroUse.isValid())
    return std::nullopt;
  const Stmt *Loop = loopBetween(Off.Call, Enable.Call);
  if (!Loop)
    return std::nullopt;
  // The next switch of this device after the disable: an enable in the same loop.
  unsigned OffAt = offsetOf(Off.Call->getBeginLoc());
  for (size_t K = 0; K < Enables.size(); ++K) {
    const AutocastCall *On = Enables[K];
    if (Used[K] || !sameDevice(Enable, *On) || offsetOf(On->Call->getBeginLoc()) <= OffAt)
      continue;
    if (On->Turns != AutocastCall::State::On || On->MacroUse.isValid() || !encloses(Loop, On->Call) ||
        enclosingLambda(On->Call) != enclosingLambda(Off.Call))
      return std::nullopt;
    return AutocastScope::Hole{&Off, On};
  }
  return std::nullopt;
}

const AutocastCall *ScopeBuilder::closeAfterHole(const std::vector<const AutocastCall *> &Enables,
                                                 std::vector<bool> &Used, const AutocastCall &Enable,
                                                 const AutocastCall &ReEnable) const {
  unsigned At = offsetOf(ReEnable.Call->getBeginLoc());
  for (size_t K = 0; K < Enables.size(); ++K) {
    const AutocastCall *C = Enables[K];
    if (C == &ReEnable)
      Used[K] = true;
    if (Used[K] || !sameDevice(Enable, *C) || offsetOf(C->Call->getBeginLoc()) <= At)
      continue;
    if (C->Turns != AutocastCall::State::Off && C->Turns != AutocastCall::State::Restore)
      return nullptr; // enabled again: the re-enable is never closed on its own
    Used[K] = true;
    return C;
  }
  return nullptr; // on to the end of the function: an unclosed scope with a hole
}

const VarDecl *ScopeBuilder::noGradGuardOver(const Stmt *S) const {
  if (Rules.NoGradGuardClasses.empty())
    return nullptr;
  const Stmt *Child = S;
  for (const Stmt *P = PM.getParent(S); P; Child = P, P = PM.getParent(P)) {
    if (isa<LambdaExpr>(P))
      return nullptr; // the lambda may run after the guard's block has ended
    const auto *CS = dyn_cast<CompoundStmt>(P);
    if (!CS)
      continue;
    for (const Stmt *Before : CS->body()) {
      if (Before == Child)
        break;
      const auto *DS = dyn_cast<DeclStmt>(Before);
      if (!DS)
        continue;
      for (const Decl *D : DS->decls()) {
        const auto *VD = dyn_cast<VarDecl>(D);
        if (!VD || VD->getType()->isReferenceType() || VD->getType()->isPointerType())
          continue;
        const CXXRecordDecl *RD = VD->getType()->getAsCXXRecordDecl();
        if (!RD || !isDerivedFromAny(RD, Rules.NoGradGuardClasses))
          continue;
        // `c10::InferenceMode guard(false);` leaves gradients on.
        if (const auto *CE = dyn_cast_or_null<CXXConstructExpr>(VD->getInit());
            CE && CE->getNumArgs() >= 1 && boolConstant(CE->getArg(0), Ctx) == std::optional<bool>(false))
          continue;
        return VD;
      }
    }
  }
  return nullptr;
}

const CompoundStmt *ScopeBuilder::enclosingBlock(const Stmt *S) const {
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
    if (const auto *CS = dyn_cast<CompoundStmt>(P))
      return CS;
  return nullptr;
}

bool ScopeBuilder::leavesFunction(const CXXThrowExpr *T) const {
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

void ScopeBuilder::findLeakingExit(AutocastScope &S, const AutocastCall &Enable,
                                       const std::vector<const AutocastCall *> &Closes) {
  BodyCollector BC;
  BC.walk(FD->getBody());
  std::vector<const Stmt *> Exits(Body.Returns.begin(), Body.Returns.end());
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
      // A disable in a macro (`catch (...) { AMP_OFF(); throw; }`) sits in the macro's own
      // braces (`do { ... } while (0)`): the block that counts is the one the macro is used in.
      const CompoundStmt *Block = enclosingBlock(C->Call);
      while (Block && Block->getLBracLoc().isMacroID())
        Block = enclosingBlock(Block);
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

void ScopeBuilder::attachAdjacentAuxiliary() {
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

void ScopeBuilder::findGuardEnds() {
  BodyCollector BC;
  BC.walk(FD->getBody());
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

void ScopeBuilder::collectInactive() {
  SourceRange Extent = FD->getBody()->getSourceRange();
  unsigned B = offsetOf(Extent.getBegin()), E = offsetOf(Extent.getEnd());
  FileID F = SM.getFileID(SM.getExpansionLoc(Extent.getBegin()));
  // Any autocast function of the rules, or the word itself, marks the region as AMP code.
  std::vector<std::string> Tokens = Rules.prefilterTokens();
  Tokens.push_back("autocast");
  for (const AutocastFunctionRule &A : Rules.Autocast)
    Tokens.push_back(StringRef(A.Function).rsplit("::").second.str());
  for (const SourceRange &R : Body.Inactive) {
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

std::string scopeHoleReason(const FunctionAnalysis &FA, const AutocastScope &S,
                            const SourceManager &SM) {
  auto At = [&](SourceLocation L) { return SM.getFileOffset(SM.getExpansionLoc(L)); };
  const AutocastScope::Hole &H = S.Holes.front();
  std::string Until = S.Disable ? lineText(SM, S.Disable->Call->getBeginLoc())
                                : std::string("the end of the function");
  std::string Inside = "what lies in it";
  for (const CXXMemberCallExpr *B : FA.BackwardCalls)
    if (At(B->getBeginLoc()) > At(H.Off->Call->getBeginLoc()) &&
        At(B->getBeginLoc()) < At(H.On->Call->getBeginLoc())) {
      Inside = "the backward() at " + lineText(SM, B->getBeginLoc());
      break;
    }
  return "autocast is on from " + lineText(SM, S.Enable->Call->getBeginLoc()) + " to " + Until +
         " with a hole from " + lineText(SM, H.Off->Call->getBeginLoc()) + " to " +
         lineText(SM, H.On->Call->getBeginLoc()) +
         " (turned off and on again inside the loop): each iteration's forward runs under "
         "autocast and " + Inside + " runs without it; a scope with a hole is not a shape the "
         "rewrite carries: migrate this step by hand";
}

} // namespace ampmigrate
