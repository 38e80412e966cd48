// amp-manual-migration: what the tool will not rewrite, each with its reason.
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/Engine.h"
#include "ampmigrate/SourceText.h"
#include "ampmigrate/ShapeRecognisers.h"
#include "ampmigrate/StepFinder.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/Support/Path.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace clang;
namespace ampmigrate {

/// The first line of a call's text, for a message.
static std::string firstLineOf(const CheckInput &In, const CallExpr *CE) {
  std::string Text = StepFinder::textOf(In.Ctx, CE->getSourceRange());
  return Text.substr(0, Text.find('\n'));
}

/// "line N" in the file of `Here`, else "file:N" (the file's name): a callee's backward in a header.
static std::string lineOrFileLine(const SourceManager &SM, SourceLocation L, SourceLocation Here) {
  SourceLocation E = SM.getExpansionLoc(L);
  if (SM.getFileID(E) == SM.getFileID(SM.getExpansionLoc(Here)))
    return lineText(SM, L);
  return llvm::sys::path::filename(SM.getFilename(E)).str() + ":" + std::to_string(SM.getExpansionLineNumber(L));
}

/// A call from the scope's start up to `Before` of a function whose body is in another file of the
/// project and runs a backward there (its summary says so), with that function and where.
static const CallExpr *backwardElsewhere(const CheckInput &In, const AutocastScope &S,
                                         unsigned Before, CalleeAnswer &Answer) {
  if (!In.Callees)
    return nullptr;
  const SourceManager &SM = In.Ctx.getSourceManager();
  struct Calls : AnalysedBodyVisitor {
    std::vector<const CallExpr *> Found;
    bool visitStmt(Stmt *St) override {
      if (const auto *CE = dyn_cast<CallExpr>(St))
        Found.push_back(CE);
      return true;
    }
  } C;
  C.walk(In.Function.Function->getBody());
  for (const CallExpr *CE : C.Found) {
    unsigned O = SM.getFileOffset(SM.getExpansionLoc(CE->getBeginLoc()));
    const FunctionDecl *F = CE->getDirectCallee();
    const FunctionDecl *Def = nullptr;
    if (O < S.Begin || O >= Before || !F || F->hasBody(Def) || !isProjectFunction(F))
      continue;
    Answer = In.Callees->ask(F, CalleeFact::RunsBackward);
    if (Answer.K == CalleeAnswer::Kind::Yes)
      return CE;
  }
  return nullptr;
}

/// A backward's loss that the scope computes only through code written elsewhere: `loss` is
/// assigned nowhere in the scope's own statements, but in a lambda (or at a line) outside it,
/// while a step() follows the backward. The reason says so (the step is there; the forward to
/// hand to amp::value_and_grad is what is missing); nullopt for any other case.
static std::optional<std::string> lossComputedOutside(const CheckInput &In, const AutocastScope &S,
                                                      const CXXMemberCallExpr *Backward) {
  const SourceManager &SM = In.Ctx.getSourceManager();
  auto Off = [&](SourceLocation L) { return SM.getFileOffset(SM.getExpansionLoc(L)); };
  const auto *Ref = dyn_cast<DeclRefExpr>(Backward->getImplicitObjectArgument()->IgnoreParenImpCasts());
  const auto *Loss = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  if (!Loss || !Loss->isLocalVarDecl())
    return std::nullopt;
  const ScalerCall *Step = nullptr;
  for (const ScalerCall &St : In.Function.OptimizerSteps)
    if (!Step && Off(St.Call->getBeginLoc()) > Off(Backward->getBeginLoc()))
      Step = &St;
  if (!Step)
    return std::nullopt;
  // Every value given to `loss` in the function, lambdas included, with the lambda it is in.
  struct Writes : AstVisitor {
    const VarDecl *Loss = nullptr;
    std::vector<std::pair<const Stmt *, const LambdaExpr *>> Found;
    std::vector<const LambdaExpr *> Open;
    Writes() { WrapsStmts = true; }
    bool traverseStmt(Stmt *St) override {
      const auto *L = dyn_cast_or_null<LambdaExpr>(St);
      if (L)
        Open.push_back(L);
      bool Go = descend(St);
      if (L)
        Open.pop_back();
      return Go;
    }
    bool visitStmt(Stmt *St) override {
      std::vector<std::pair<const VarDecl *, const Expr *>> Given;
      if (addValuesGiven(St, Given))
        for (const auto &[V, E] : Given)
          if (V == Loss)
            Found.push_back({St, Open.empty() ? nullptr : Open.back()});
      return true;
    }
  } W;
  W.Loss = Loss;
  W.walk(In.Function.Function->getBody());
  const std::pair<const Stmt *, const LambdaExpr *> *Outside = nullptr;
  for (const auto &Wr : W.Found) {
    unsigned At = Off(Wr.first->getBeginLoc());
    if (At >= S.Begin && At <= S.End && !Wr.second)
      return std::nullopt; // the scope computes it itself: some other reason
    if (Wr.second && Off(Wr.second->getBeginLoc()) >= S.Begin && Off(Wr.second->getEndLoc()) <= S.End)
      return std::nullopt; // a lambda written inside the scope
    if (!Outside || (!Outside->second && Wr.second))
      Outside = &Wr;
  }
  if (!Outside)
    return std::nullopt;
  std::string Where = "at " + lineText(SM, Outside->first->getBeginLoc()) + ", outside the scope";
  if (const LambdaExpr *L = Outside->second) {
    Where = "in a lambda defined at " + lineText(SM, L->getBeginLoc());
    if (SM.getExpansionLineNumber(L->getBeginLoc()) != SM.getExpansionLineNumber(Outside->first->getBeginLoc()))
      Where += " (assigned at " + lineText(SM, Outside->first->getBeginLoc()) + ")";
  }
  return "backward() at " + lineText(SM, Backward->getBeginLoc()) + " follows this autocast scope "
         "and `" + firstLineOf(In, Step->Call) + "` at " + lineText(SM, Step->Call->getBeginLoc()) +
         " follows it, but the scope does not compute `" + Loss->getNameAsString() + "` in its own "
         "statements: it is assigned " + Where + "; the rewrite hands the scope's statements to "
         "amp::value_and_grad as the forward, so write the loss's computation in the scope, or "
         "migrate this step by hand";
}

/// Why a closed scope has no training step, naming the backward() that follows it when there is
/// one: run on something the tool does not recognise as a scaler's scale(), or with no step().
static std::string noStepReason(const CheckInput &In, const AutocastScope &S) {
  const SourceManager &SM = In.Ctx.getSourceManager();
  const CXXMemberCallExpr *Next = nullptr;
  for (const CXXMemberCallExpr *B : In.Function.BackwardCalls)
    if (SM.getFileOffset(SM.getExpansionLoc(B->getBeginLoc())) > S.End) {
      Next = B;
      break;
    }
  if (!Next && S.HandedTo) {
    const FunctionDecl *Callee = S.HandedTo->getDirectCallee();
    return "what this scope computes is handed to '" + Callee->getNameAsString() + "' at " +
           lineText(SM, S.HandedTo->getBeginLoc()) + ", which trains with it (`" +
           firstLineOf(In, S.HandedToBackward) + "` at " +
           lineOrFileLine(SM, S.HandedToBackward->getBeginLoc(), S.HandedTo->getBeginLoc()) +
           "): a forward here and its backward in a function it calls is not a shape the rewrite "
           "carries; move the backward and the step into this function, or migrate by hand";
  }
  if (!Next && S.HandedToUnseen) {
    const FunctionDecl *Callee = S.HandedToUnseen->getDirectCallee();
    return "the call of '" + Callee->getNameAsString() + "' at " + lineText(SM, S.HandedToUnseen->getBeginLoc()) +
           ", in or after this scope, hands it an optimizer or a scaler, and its body is not in "
           "this translation unit: it may train there, so the scope is not taken for inference "
           "code, and a step whose backward is in another file cannot be rewritten from here; "
           "migrate it by hand where the backward is";
  }
  if (!Next && S.ReturnedToTrainer)
    return "what this scope computes leaves the function (returned at " +
           lineText(SM, S.ReturnedToTrainer->getBeginLoc()) + ") to '" + S.TrainerName +
           "', in another file, which calls '" + In.Function.Function->getNameAsString() +
           "' and runs a backward (" + S.TrainerBackward + "): the step's forward is here and its "
           "backward there, which the rewrite does not carry; migrate it by hand where the "
           "backward is";
  if (!Next && S.ReturnedUncalled)
    return "the loss computed in this scope leaves the function (returned at " +
           lineText(SM, S.ReturnedUncalled->getBeginLoc()) + ") and nothing in this file calls '" +
           In.Function.Function->getNameAsString() +
           "': its backward is not in this file, so the step cannot be rewritten from here; "
           "migrate it by hand where the backward is (a step that calls a function of its own "
           "file for its loss is rewritten)";
  if (!Next) {
    // Training without a visible backward: it runs in a function the analysis cannot see.
    for (const ScalerCall &St : In.Function.OptimizerSteps)
      if (unsigned StepAt = SM.getFileOffset(SM.getExpansionLoc(St.Call->getBeginLoc()));
          StepAt > S.End) {
        CalleeAnswer There;
        if (const CallExpr *Via = backwardElsewhere(In, S, StepAt, There))
          return "no backward() is visible in this function, yet it steps the optimizer (" +
                 lineText(SM, St.Call->getBeginLoc()) + "): the backward runs in '" +
                 There.Function + "' (" + There.Where + "), in another file, called at " +
                 lineText(SM, Via->getBeginLoc()) + ", so the forward pass cannot be handed to "
                 "amp::value_and_grad; migrate this step by hand";
        return "no backward() is visible in this function, yet it steps the optimizer (" +
               lineText(SM, St.Call->getBeginLoc()) +
               "): the backward runs in a function this file does not define, so the forward "
               "pass cannot be handed to amp::value_and_grad; migrate this step by hand";
      }
    return "no training step (a backward of the loss computed here, then the optimizer's or the "
           "scaler's step) follows this autocast scope in this function; when they are in another "
           "function, move the step into one function or migrate by hand";
  }
  std::string Line = lineText(SM, Next->getBeginLoc());
  const Expr *Recv = Next->getImplicitObjectArgument()->IgnoreImplicit()->IgnoreParenImpCasts();
  const auto *Call = dyn_cast<CallExpr>(Recv);
  const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(Call);
  bool OnTensorMethod = MC && MC->getMethodDecl() &&
                        isDerivedFromAny(MC->getMethodDecl()->getParent(), In.Rules.TensorClasses);
  bool Scaled = llvm::any_of(In.Function.Backwards,
                             [&](const ImplicitBackward &B) { return B.Backward == Next; });
  if (Call && !OnTensorMethod && !Scaled && Call->getNumArgs() > 0 && !isa<CXXOperatorCallExpr>(Call))
    return "backward() at " + Line + " runs on `" +
           StepFinder::textOf(In.Ctx, Recv->getSourceRange()) +
           "`, which is not the scale() of a loss scaler the tool recognises; name the scaler "
           "class in a rule file (scaler.classes, docs/rules.md) or migrate by hand";
  if (std::optional<std::string> Why = lossComputedOutside(In, S, Next))
    return *Why;
  return "backward() at " + Line + " follows this autocast scope, but no optimizer or "
         "scaler step() follows it in this function; when the step is in another function, move "
         "it into this one or migrate by hand";
}

/// A loss-scaling step by a class the tool does not know: its scale() whose result is
/// backpropagated in this function.
static void reportUnknownScalers(const CheckInput &In, FindingSink &Out) {
  llvm::SmallPtrSet<const CXXRecordDecl *, 2> Said;
  for (const CXXMemberCallExpr *MC : In.Function.UnknownScalerScales) {
    if (In.Function.BackwardCalls.empty())
      continue;
    const CXXRecordDecl *Class = MC->getMethodDecl()->getParent();
    if (!Said.insert(Class->getCanonicalDecl()).second)
      continue;
    std::string Name = qualifiedName(Class);
    std::string Unscale = "an unscale method";
    for (const CXXMethodDecl *M : Class->getDefinition()->methods())
      if (methodNamed(M, In.Rules.ScalerMethods.Unscale)) {
        Unscale = M->getNameAsString() + "()";
        break;
      }
    Out.report("amp-manual-migration", MC->getBeginLoc(),
               "not migrated automatically: a loss-scaling step by '" + Name +
                   "', which the tool does not know as a loss scaler (it has " +
                   MC->getMethodDecl()->getNameAsString() + "() and " + Unscale +
                   ", but no step method: scaler.methods.step); if it "
                   "scales the loss, unscales the grads and skips the optimizer's step on "
                   "overflow as GradScaler does, name it in a rules file (scaler: {classes: [" +
                   Name + "]}, docs/rules.md) to have the step analysed, or migrate by hand");
  }
}

void checkManualMigration(const CheckInput &In, FindingSink &Out) {
  reportUnknownScalers(In, Out);
  for (const MigrationPlan *P : In.Plans)
    for (const Blocker &B : P->Blockers)
      Out.report("amp-manual-migration", B.Loc, "not migrated automatically: " + B.Reason);
  for (const AutocastScope &S : In.Function.Scopes) {
    if (S.DisablesAutocast || isInferenceScope(In, S))
      continue;
    bool InStep = llvm::any_of(In.Function.Steps, [&](const TrainingStep &T) {
                    return T.Scope == &S || llvm::is_contained(T.FeedingScopes, &S);
                  }) ||
                  llvm::any_of(In.CalleePlans, [&](const MigrationPlan *P) { return P->CalleeScope == &S; });
    if (InStep)
      continue;
    std::string Why =
        !S.Holes.empty() ? scopeHoleReason(In.Function, S, In.Ctx.getSourceManager())
        : unresolvedAt(In.Ctx.getSourceManager(), In.Function, S.Begin)
            ? uninstantiatedReason(In.Ctx, In.Function, "this autocast scope", S.Begin)
        : S.Shape == AutocastScope::Kind::Unclosed
            ? "autocast is enabled with no training step in this function (a global or "
              "start-up switch?); convert the model where it is created with " +
                  In.Rules.Target.Convert
            : noStepReason(In, S);
    Out.report("amp-manual-migration", S.ReportLoc, "not migrated automatically: " + Why);
  }
}

} // namespace ampmigrate
