// Blockers for what a step computes beyond the shapes the rewrite carries (StepMeaning.h).
#include "StepMeaning.h"

#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/SourceText.h"
#include "ampmigrate/StepFinder.h"

#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Path.h"

using namespace clang;

namespace ampmigrate {
namespace {

std::string firstLineOf(llvm::StringRef S) {
  llvm::StringRef L = S.split('\n').first.rtrim();
  return L.size() < S.rtrim().size() ? (L + " ...").str() : L.str();
}

class MeaningCheck {
public:
  MeaningCheck(ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
               const TrainingStep &T)
      : Ctx(Ctx), SM(Ctx.getSourceManager()), Rules(Rules), FA(FA), T(T) {}

  std::vector<Blocker> run() {
    for (const ImplicitBackward *B : T.Backwards)
      checkBackward(*B);
    for (const ImplicitBackward *B : T.Plain.Backwards)
      checkBackward(*B);
    for (const ClipCall *C : T.Clips)
      checkClipNorm(*C);
    checkGuard();
    checkScalerPort();
    checkExits();
    for (const AutocastScope *S : T.FeedingScopes)
      Out.push_back({S->ReportLoc,
                     "this autocast scope computes values that the training step's loss reads "
                     "(the step's own scope starts at " + where(T.Scope->ReportLoc) + "); the "
                     "rewrite hands one scope's code to amp::value_and_grad, and this one would "
                     "stay outside it, its gradient lost: join the two scopes into one, or "
                     "migrate this step by hand"});
    return std::move(Out);
  }

private:
  ASTContext &Ctx;
  const SourceManager &SM;
  const RuleSet &Rules;
  const FunctionAnalysis &FA;
  const TrainingStep &T;
  std::vector<Blocker> Out;

  std::string text(const Stmt *S) const {
    return firstLineOf(StepFinder::textOf(Ctx, S->getSourceRange()));
  }

  /// A `return`, `break`, `continue` or `goto` between the step's backward and its step() that
  /// leaves the step: the original leaves the backward's gradients in .grad, where the next
  /// backward adds to them, while the explicit grads of value_and_grad would be dropped. Carried
  /// when a zero_grad() of the step clears .grad before its backward in every iteration (or
  /// call): then the original drops them too.
  void checkExits() {
    if (T.Backwards.empty() || T.GradientBegin > T.GradientEnd)
      return;
    struct Jumps : AstVisitor {
      std::vector<const Stmt *> Found;
      bool visitStmt(Stmt *S) override {
        // A throw the user wrote (not an error check's macro, TORCH_CHECK) leaves the same way
        // when a caller catches it and trains on.
        if (isa<ReturnStmt, BreakStmt, ContinueStmt, GotoStmt>(S) ||
            (isa<CXXThrowExpr>(S) && !S->getBeginLoc().isMacroID()))
          Found.push_back(S);
        return true;
      }
    } J;
    const Stmt *Body = FA.Function->getBody();
    J.walk(const_cast<Stmt *>(Body));
    ParentMap PM(const_cast<Stmt *>(Body));
    const Stmt *Backward = T.Backwards.front()->Backward;
    auto Encloses = [&](const Stmt *Outer, const Stmt *S) {
      for (const Stmt *P = S; P; P = PM.getParent(P))
        if (P == Outer)
          return true;
      return false;
    };
    const Stmt *Loop = nullptr; // the innermost loop around the backward
    for (const Stmt *P = PM.getParent(Backward); P && !Loop; P = PM.getParent(P))
      if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
        Loop = P;
    bool Cleared = llvm::any_of(T.ZeroGrads, [&](const ZeroGradCall *Z) {
      const Stmt *Block = PM.getParent(Z->Statement ? Z->Statement : Z->Call);
      return off(Z->Call->getBeginLoc()) < T.GradientBegin && (!Loop || Encloses(Loop, Z->Call)) &&
             isa_and_nonnull<CompoundStmt>(Block) && Encloses(Block, Backward);
    });
    for (const Stmt *S : J.Found) {
      unsigned At = off(S->getBeginLoc());
      if (At <= T.GradientBegin || At >= T.GradientEnd || Cleared)
        continue;
      bool InLambda = false;
      const Stmt *Target = nullptr; // the loop (or switch) a break or continue leaves
      for (const Stmt *P = PM.getParent(S); P && !InLambda; P = PM.getParent(P)) {
        InLambda = isa<LambdaExpr>(P);
        if (!Target && isa<BreakStmt, ContinueStmt>(S) &&
            (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P) || (isa<BreakStmt>(S) && isa<SwitchStmt>(P))))
          Target = P;
        if (!Target && isa<CXXThrowExpr>(S) && isa<CXXTryStmt>(P))
          Target = P; // caught by a try of the window stays in the step
      }
      if (InLambda || (Target && off(Target->getBeginLoc()) > T.GradientBegin))
        continue; // a lambda's own return, or a loop inside the window
      const Stmt *Holder = S;
      for (const Stmt *P = PM.getParent(Holder); P && !isa<CompoundStmt>(P); P = PM.getParent(P))
        Holder = P;
      Out.push_back({S->getBeginLoc(),
                     "`" + text(Holder) + "` can leave the step between its backward and step() (" +
                         where(S->getBeginLoc()) + "): the original keeps the backward's gradients "
                         "in .grad, where the next backward adds to them (no zero_grad() of the "
                         "step clears them before its backward), while the explicit grads of "
                         "amp::value_and_grad would be dropped: migrate this step by hand"});
      return;
    }
  }
  unsigned off(SourceLocation L) const { return SM.getFileOffset(SM.getExpansionLoc(L)); }

  /// value_and_grad differentiates the loss itself: a gradient argument (the vector-Jacobian
  /// product's weight), create_graph, or retain_graph on the step's last backward (the graph
  /// kept for code after the step) would be dropped. What is carried: an undefined gradient
  /// (`{}`, `Tensor()`: the default), constant-false flags, and retain_graph on a backward that
  /// another backward of the same step follows (the rewrite differentiates their sum once).
  void checkBackward(const ImplicitBackward &B) {
    const CXXMemberCallExpr *Call = B.Backward;
    bool LastOfStep = llvm::none_of(T.Backwards, [&](const ImplicitBackward *O) {
      return O != &B && off(O->Backward->getBeginLoc()) > off(Call->getBeginLoc());
    });
    for (unsigned I = 0; I < Call->getNumArgs(); ++I) {
      const Expr *A = Call->getArg(I);
      if (isa<CXXDefaultArgExpr>(A))
        continue;
      bool Carried = I == 0 ? undefinedTensor(A) : isFalse(A) || (I == 1 && !LastOfStep);
      if (Carried)
        continue;
      const char *What = I == 0 ? "a gradient" : I == 1 ? "retain_graph" : "create_graph";
      Out.push_back({A->getBeginLoc(),
                     "`" + text(Call) + "` passes " + What + " (`" + text(A) +
                         "`) to backward(); amp::value_and_grad differentiates the loss itself "
                         "and takes no such argument, so the rewrite would compute other "
                         "gradients or free the graph: migrate this step by hand"});
      return;
    }
    checkScaledLossUses(B);
  }

  /// `{}`, `Tensor()`, `torch::Tensor{}`: backward()'s default gradient.
  static bool undefinedTensor(const Expr *A) {
    const Expr *E = A->IgnoreImplicit();
    if (const auto *M = dyn_cast<MaterializeTemporaryExpr>(E))
      E = M->getSubExpr()->IgnoreImplicit();
    if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E))
      E = BT->getSubExpr()->IgnoreImplicit();
    if (const auto *F = dyn_cast<CXXFunctionalCastExpr>(E))
      E = F->getSubExpr()->IgnoreImplicit();
    if (const auto *IL = dyn_cast<InitListExpr>(E))
      return IL->getNumInits() == 0;
    if (const auto *CE = dyn_cast<CXXConstructExpr>(E))
      return CE->getNumArgs() == 0;
    return false;
  }

  bool isFalse(const Expr *A) const {
    bool V;
    return !A->isValueDependent() && A->EvaluateAsBooleanCondition(V, Ctx) && !V;
  }

  /// `auto s = scaler.scale(loss); s.div_(k); s.backward();`: after the rewrite the scaled loss
  /// is what value_and_grad's function returns, so any other use of `s` acts on a value that no
  /// longer feeds the grads.
  void checkScaledLossUses(const ImplicitBackward &B) {
    if (!B.SplitVar || !B.ScaleStmt)
      return;
    struct Refs : AnalysedBodyVisitor {
      const VarDecl *Var;
      std::vector<const DeclRefExpr *> Found;
      bool visitStmt(Stmt *S) override {
        if (const auto *DRE = dyn_cast<DeclRefExpr>(S); DRE && DRE->getDecl() == Var)
          Found.push_back(DRE);
        return true;
      }
    } R;
    R.Var = B.SplitVar;
    R.walk(FA.Function->getBody());
    const Expr *Receiver = B.Backward->getImplicitObjectArgument();
    // Between the scaling and the backward: after the rewrite the variable is declared (or
    // assigned the scaled loss) where the backward was, so what stands before would act on
    // nothing that feeds the grads. Uses after the backward see the scaled loss as before.
    unsigned ScaleEnd = off(B.ScaleStmt->getEndLoc());
    unsigned BackwardBegin = off((B.BackwardStmt ? B.BackwardStmt : B.Backward)->getBeginLoc());
    for (const DeclRefExpr *DRE : R.Found) {
      unsigned O = off(DRE->getLocation());
      if (O <= ScaleEnd || O >= BackwardBegin)
        continue;
      if (Receiver && Receiver->IgnoreParenImpCasts() == DRE)
        continue;
      Out.push_back({DRE->getLocation(),
                     "the scaled loss `" + B.SplitVar->getName().str() + "` is used by `" +
                         text(statementOf(DRE)) + "` besides its backward(); after the rewrite "
                         "the scaled loss is what amp::value_and_grad's function returns, so this "
                         "use would no longer act on what the gradients are computed from: move "
                         "it before the scale() call (on the loss), or migrate this step by hand"});
      return;
    }
  }

  /// The outermost expression around `E` that is still inside one statement of a block.
  const Stmt *statementOf(const Stmt *E) const {
    const Stmt *Cur = E;
    DynTypedNodeList Parents = Ctx.getParents(*Cur);
    while (!Parents.empty()) {
      const Stmt *P = Parents[0].get<Stmt>();
      if (!P || isa<CompoundStmt>(P))
        break;
      Cur = P;
      Parents = Ctx.getParents(*Cur);
    }
    return Cur;
  }

  /// A constant max norm that is not a positive number: PyTorch clips by `max_norm / norm`
  /// whatever its sign (0 zeroes the grads, a negative one flips them, NaN poisons them), while
  /// amp::clip_by_global_norm_ requires a positive norm. +inf (clip nothing, return the norm) is
  /// carried: the runtime's in-place clip leaves the grads as they are for it.
  void checkClipNorm(const ClipCall &C) {
    const ClipFunctionRule *R = C.Rule;
    if (!R || R->byValue() || R->MaxNormArg < 0 || (unsigned)R->MaxNormArg >= C.Call->getNumArgs())
      return;
    const Expr *N = C.Call->getArg(R->MaxNormArg);
    Expr::EvalResult V;
    if (N->isValueDependent() || !N->EvaluateAsRValue(V, Ctx))
      return;
    bool Positive;
    if (V.Val.isFloat()) {
      const llvm::APFloat &F = V.Val.getFloat();
      Positive = !F.isNaN() && !F.isNegative() && !F.isZero();
    } else if (V.Val.isInt()) {
      Positive = V.Val.getInt().isStrictlyPositive();
    } else {
      return;
    }
    if (Positive)
      return;
    Out.push_back({N->getBeginLoc(),
                   "`" + text(C.Call) + "` clips with the max norm `" + text(N) +
                       "`, which is not a positive number; libtorch scales the grads by it all "
                       "the same, amp::clip_by_global_norm_ refuses it: migrate this clip by "
                       "hand"});
  }

  void checkGuard() {
    const AutocastScope *S = T.Scope;
    if (!S || S->Shape != AutocastScope::Kind::Guard || !S->GuardVar)
      return;
    const auto *Use = dyn_cast_or_null<CXXConstructExpr>(
        S->GuardVar->getInit() ? S->GuardVar->getInit()->IgnoreImplicit() : nullptr);
    if (!Use || !Use->getConstructor())
      return;
    const CXXRecordDecl *RD = Use->getConstructor()->getParent();
    for (const std::string &Named : Rules.Guards)
      if (qualifiedName(RD) == Named)
        return; // a class the rules name: its meaning is the rules'
    if (const Stmt *E = guardSideEffect(Use->getConstructor(), Rules))
      Out.push_back({S->ReportLoc,
                     "the guard class `" + RD->getNameAsString() + "` does more than switch "
                         "autocast: `" + text(statementOf(E)) + "` (" + where(E->getBeginLoc()) + ") would be "
                         "removed with the guard; keep that code outside the guard class, or "
                         "migrate this step by hand"});
  }

  /// A scaler class of the project (recognised by shape, not named by the rules) is replaced by
  /// amp::GradScaler: what its methods that the step calls do besides scaling (a log line, a
  /// counter in a global, a call into project code) would be lost with it.
  void checkScalerPort() {
    const CXXRecordDecl *RD = T.ScalerClass ? T.ScalerClass->getDefinition() : nullptr;
    if (!RD || SM.isInSystemHeader(SM.getExpansionLoc(RD->getLocation())))
      return;
    for (const std::string &Named : Rules.ScalerClasses)
      if (qualifiedName(RD) == Named)
        return;
    llvm::SmallVector<const CXXMemberCallExpr *, 8> Calls;
    for (const auto *List : {&T.Unscales, &T.Steps, &T.Updates})
      for (const ScalerCall *C : *List)
        Calls.push_back(C->Call);
    for (const ImplicitBackward *B : T.Backwards)
      if (B->Scale)
        Calls.push_back(B->Scale->Call);
    llvm::SmallPtrSet<const CXXMethodDecl *, 8> Seen;
    for (const CXXMemberCallExpr *Call : Calls) {
      const CXXMethodDecl *MD = Call->getMethodDecl();
      if (!MD || !Seen.insert(MD->getCanonicalDecl()).second)
        continue;
      if (const Stmt *E = portSideEffect(MD, RD, 0)) {
        Out.push_back({Call->getBeginLoc(),
                       "the scaler class `" + RD->getNameAsString() + "`'s " +
                           MD->getNameAsString() + "() does more than scaling: `" +
                           text(statementOf(E)) + "` (" + where(E->getBeginLoc()) +
                           ") would be lost when the class is replaced by amp::GradScaler; move "
                           "it out of the class, or migrate this step by hand"});
        return;
      }
    }
    checkPortUnscales(RD);
  }

  /// A port replaced by amp::GradScaler must do what it does: its unscale_() and step() (with
  /// what they call in the class) read or write the gradients. One that never touches a grad
  /// (`p = p * inv` on a copy of the parameter) trains with scaled grads, and the replacement
  /// would change what the program computes.
  void checkPortUnscales(const CXXRecordDecl *RD) {
    const ScalerCall *First = nullptr;
    for (const auto *List : {&T.Unscales, &T.Steps})
      for (const ScalerCall *C : *List) {
        const CXXMethodDecl *MD = C->Call->getMethodDecl();
        const FunctionDecl *Def = nullptr;
        if (!MD || !MD->hasBody(Def))
          return; // a method defined elsewhere: not judged here
        if (portTouchesGrads(MD, RD, 0))
          return;
        First = First ? First : C;
      }
    if (!First)
      return;
    Out.push_back({First->Call->getBeginLoc(),
                   "the scaler class `" + RD->getNameAsString() + "`'s " +
                       First->Call->getMethodDecl()->getNameAsString() +
                       "() never reads or writes a gradient (.grad(), mutable_grad()): it does "
                       "not unscale the grads as amp::GradScaler, which would replace it, does; "
                       "the rewrite would change what the step computes: migrate this step by hand"});
  }

  /// Whether `MD` (or a method of `Port` it calls, two levels deep) calls a function whose name
  /// says it works on gradients (`grad`, `mutable_grad`, `..._unscale_`) or names a `grad` member.
  bool portTouchesGrads(const CXXMethodDecl *MD, const CXXRecordDecl *Port, int Depth) const {
    const FunctionDecl *Def = nullptr;
    if (!MD->hasBody(Def) || !Def->getBody())
      return false;
    struct Grads : AnalysedBodyVisitor {
      const MeaningCheck &M;
      const CXXRecordDecl *Port;
      int Depth;
      bool Found = false;
      Grads(const MeaningCheck &M, const CXXRecordDecl *Port, int Depth) : M(M), Port(Port), Depth(Depth) {}
      static bool gradName(const NamedDecl *D) {
        return D && D->getIdentifier() && (D->getName().contains("grad") || D->getName().contains("unscale"));
      }
      bool visitStmt(Stmt *S) override {
        if (const auto *CE = dyn_cast<CallExpr>(S))
          if (const FunctionDecl *F = CE->getDirectCallee()) {
            const auto *Method = dyn_cast<CXXMethodDecl>(F);
            if (Method && Method->getParent()->getCanonicalDecl() == Port->getCanonicalDecl())
              Found = Depth < 2 && M.portTouchesGrads(Method, Port, Depth + 1);
            else
              Found = gradName(F);
          }
        if (const auto *ME = dyn_cast<MemberExpr>(S); ME && !Found)
          Found = gradName(ME->getMemberDecl()) && !isa<CXXMethodDecl>(ME->getMemberDecl());
        return !Found;
      }
    } G(*this, Port, Depth);
    G.walk(Def->getBody());
    return G.Found;
  }

  /// The first statement of `MD` (or of a method of `Port` it calls, two levels deep) that does
  /// output or reaches outside the port: a call of a function outside at::, c10::, torch:: and
  /// std:: (and of the C library's non-output functions), output through a stream or stdio, a
  /// use of a mutable global.
  const Stmt *portSideEffect(const CXXMethodDecl *MD, const CXXRecordDecl *Port, int Depth) const {
    const FunctionDecl *Def = nullptr;
    if (!MD->hasBody(Def) || !Def->getBody())
      return nullptr;
    struct Effects : AnalysedBodyVisitor {
      const MeaningCheck &M;
      const CXXRecordDecl *Port;
      int Depth;
      const Stmt *Found = nullptr;
      Effects(const MeaningCheck &M, const CXXRecordDecl *Port, int Depth)
          : M(M), Port(Port), Depth(Depth) {}
      bool visitStmt(Stmt *S) override {
        if (const auto *DRE = dyn_cast<DeclRefExpr>(S))
          if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
              V && V->hasGlobalStorage() && !V->isStaticLocal() && !V->getType().isConstQualified() &&
              !V->isConstexpr() && !inSystemHeader(V))
            Found = S;
        if (const auto *CE = dyn_cast<CallExpr>(S); CE && !Found)
          if (const FunctionDecl *F = CE->getDirectCallee()) {
            const auto *Method = dyn_cast<CXXMethodDecl>(F);
            if (Method && Method->getParent()->getCanonicalDecl() == Port->getCanonicalDecl()) {
              if (Depth < 2)
                if (const Stmt *Inner = M.portSideEffect(Method, Port, Depth + 1))
                  Found = Inner;
            } else if (!allowed(F)) {
              Found = S;
            }
          }
        return !Found;
      }
      bool inSystemHeader(const Decl *D) const {
        return M.SM.isInSystemHeader(M.SM.getExpansionLoc(D->getLocation()));
      }
      static bool writesOutput(llvm::StringRef Q) {
        return Q.contains("ostream") || Q.contains("printf") || Q.contains("puts") ||
               Q.contains("putc") || Q.contains("fwrite") || Q.contains("syslog") ||
               Q.contains("operator<<");
      }
      bool allowed(const FunctionDecl *F) const {
        if (F->getBuiltinID())
          return true;
        std::string Q = qualifiedName(F);
        if (writesOutput(Q))
          return false;
        if (inLibraryNamespace(F))
          return true;
        // The C library's functions (math, memory) in the global namespace.
        return !llvm::StringRef(Q).contains("::") && inSystemHeader(F);
      }
    } E(*this, Port, Depth);
    E.walk(Def->getBody());
    return E.Found;
  }

  std::string where(SourceLocation L) const {
    PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(L));
    if (P.isInvalid())
      return "?";
    return positionText(llvm::sys::path::filename(P.getFilename()), P.getLine());
  }
};

/// Walks a guard's constructor and destructor for anything but autocast calls and the guard's
/// own state.
class GuardEffects : public AstVisitor {
public:
  GuardEffects(const CXXRecordDecl *Guard, const RuleSet &Rules) : Guard(Guard), Rules(Rules) {}
  const Stmt *Found = nullptr;
  int Depth = 0;

  bool visitStmt(Stmt *S) override {
    if (const auto *CE = dyn_cast<CallExpr>(S))
      return visitCall(CE);
    if (const auto *CE = dyn_cast<CXXConstructExpr>(S)) {
      const CXXConstructorDecl *C = CE->getConstructor();
      if (C && !C->isTrivial() && !C->getParent()->isTriviallyCopyable())
        return found(S);
      return true;
    }
    if (isa<CXXNewExpr, CXXDeleteExpr, CXXThrowExpr, GCCAsmStmt, MSAsmStmt>(S))
      return found(S);
    if (const auto *DRE = dyn_cast<DeclRefExpr>(S))
      if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
          V && V->hasGlobalStorage() && !V->getType().isConstQualified() && !V->isConstexpr())
        return found(S); // a counter, a flag or a log shared outside the guard
    return true;
  }

private:
  const CXXRecordDecl *Guard;
  const RuleSet &Rules;

  bool found(const Stmt *S) {
    Found = S;
    return false;
  }

  bool visitCall(const CallExpr *CE) {
    const FunctionDecl *F = CE->getDirectCallee();
    if (!F)
      return found(CE);
    if (Rules.autocastRule(qualifiedName(F)))
      return true;
    // Builtins the autocast calls' arguments use (`__builtin_expect` of a check macro) are not
    // effects; neither is a trivial member function of the guard's own state.
    if (F->getBuiltinID())
      return true;
    const auto *MD = dyn_cast<CXXMethodDecl>(F);
    if (MD && MD->getParent()->getCanonicalDecl() == Guard->getCanonicalDecl()) {
      const FunctionDecl *Def = nullptr;
      if (Depth < 2 && MD->hasBody(Def) && Def->getBody()) {
        GuardEffects Inner(Guard, Rules);
        Inner.Depth = Depth + 1;
        Inner.walk(Def->getBody());
        if (Inner.Found)
          return found(Inner.Found);
        return true;
      }
      if (MD->isTrivial() || (MD->isDefaulted() && MD->isCopyAssignmentOperator()))
        return true;
    }
    // Operators on scalars and enums of the guard's state (`prev_ = x` on an enum class spelled
    // as an operator call never happens; a defaulted assignment of a trivially copyable member
    // is not an effect).
    if (MD && (MD->isCopyAssignmentOperator() || MD->isMoveAssignmentOperator()) &&
        MD->isDefaulted() && MD->getParent()->isTriviallyCopyable())
      return true;
    return found(CE);
  }
};

} // namespace

const Stmt *guardSideEffect(const CXXConstructorDecl *Ctor, const RuleSet &Rules) {
  const CXXRecordDecl *RD = Ctor->getParent();
  GuardEffects G(RD, Rules);
  const FunctionDecl *Def = nullptr;
  if (Ctor->hasBody(Def) && Def->getBody()) {
    if (const auto *CD = dyn_cast<CXXConstructorDecl>(Def))
      for (const CXXCtorInitializer *Init : CD->inits())
        if (Init->isWritten() && !G.walk(Init->getInit()))
          return G.Found;
    if (!G.walk(Def->getBody()))
      return G.Found;
  }
  const CXXDestructorDecl *Dtor = RD->getDefinition() ? RD->getDefinition()->getDestructor() : nullptr;
  const FunctionDecl *DtorDef = nullptr;
  if (Dtor && Dtor->hasBody(DtorDef) && DtorDef->getBody() && !G.walk(DtorDef->getBody()))
    return G.Found;
  return nullptr;
}

std::vector<Blocker> meaningBlockers(ASTContext &Ctx, const RuleSet &Rules,
                                     const FunctionAnalysis &FA, const TrainingStep &T) {
  return MeaningCheck(Ctx, Rules, FA, T).run();
}

} // namespace ampmigrate
