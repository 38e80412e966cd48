// The analysis of one function (analyseFunction, private to lib/analysis), as stages that each
// read the FunctionBody and fill the FunctionAnalysis: the elements of its body found by
// declaration (ElementFinder, StepElements.cpp), its autocast scopes (ScopeBuilder,
// AutocastScopes.cpp), and the training steps they form (StepGrouper, StepGrouping.cpp) with their
// members (StepMembers, StepMembers.cpp). StepFinder runs it per function.
#pragma once

#include "ampmigrate/CallSummaries.h"
#include "BodyCollectors.h"
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/GenericLambdas.h"
#include "ampmigrate/ShapeRecognisers.h"

#include "clang/AST/ParentMap.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <algorithm>
#include <map>
#include <optional>

namespace ampmigrate {

/// The function under analysis as every stage of its analysis reads it: the AST, the rules, the
/// parent map (generic lambdas' analysed bodies grafted in) and the statements of its body by
/// kind. Built once, then read only.
struct FunctionBody {
  FunctionBody(clang::ASTContext &Ctx, const RuleSet &Rules, const clang::FunctionDecl *FD,
               const std::vector<clang::SourceRange> &Inactive, const CalleeFacts *Callees = nullptr);

  clang::ASTContext &Ctx;
  const clang::SourceManager &SM;
  const RuleSet &Rules;
  const clang::FunctionDecl *FD;
  /// The preprocessor's inactive regions of the translation unit.
  const std::vector<clang::SourceRange> &Inactive;
  /// What the run knows of the project functions whose bodies are not in this translation unit
  /// (CallSummaries.h); null when nobody asks.
  const CalleeFacts *Callees;
  clang::ParentMap PM;
  std::vector<const clang::CallExpr *> Calls;
  std::vector<const clang::DeclStmt *> Decls;
  std::vector<const clang::ReturnStmt *> Returns;
};

/// A stage of the analysis of one function: the body it reads (under short names) and the
/// structural queries every stage asks of it. A stage's results go into the FunctionAnalysis it
/// is handed; what one stage hands the next besides is an explicit value (PendingGuard).
class FunctionStage {
protected:
  explicit FunctionStage(const FunctionBody &Body)
      : Body(Body), Ctx(Body.Ctx), SM(Body.SM), Rules(Body.Rules), FD(Body.FD), PM(Body.PM) {}

  const FunctionBody &Body;
  clang::ASTContext &Ctx;
  const clang::SourceManager &SM;
  const RuleSet &Rules;
  const clang::FunctionDecl *FD;
  const clang::ParentMap &PM;

  unsigned offsetOf(clang::SourceLocation L) const {
    return SM.getFileOffset(SM.getExpansionLoc(L));
  }

  bool inLambda(const clang::Stmt *S) const;

  const clang::LambdaExpr *enclosingLambda(const clang::Stmt *S) const;

  /// The statement directly inside a compound statement (or if/loop body) that holds `S`.
  const clang::Stmt *statementOf(const clang::Stmt *S) const;

  bool encloses(const clang::Stmt *Outer, const clang::Stmt *S) const;
};

/// An RAII autocast guard declared in the body: found with the elements, made a scope by ScopeBuilder.
struct PendingGuard {
  const clang::VarDecl *Var;
  const clang::DeclStmt *DS;
  bool Disables;
};

/// Fills FA.UnresolvedCalls and FA.UncalledLambdas from the body's calls: in a template's own
/// definition, every call isUnresolvedCall; elsewhere, those in generic lambdas nothing
/// instantiates (UninstantiatedTemplates.cpp).
void findUnresolvedCalls(const FunctionBody &Body, FunctionAnalysis &FA);

/// Stage 1 (StepElements.cpp): the elements of the body, found by declaration: autocast calls,
/// clips, scaler calls, optimizer steps, zero_grads, forwards, backwards (scaled and plain).
class ElementFinder : FunctionStage {
public:
  ElementFinder(const FunctionBody &Body, FunctionAnalysis &FA) : FunctionStage(Body), FA(FA) {}

  /// Fills FA's element lists; returns the autocast guards, which become scopes in stage 2.
  std::vector<PendingGuard> run();

private:
  FunctionAnalysis &FA;
  std::vector<PendingGuard> Guards;

  /// True when `S` holds nothing but `Call` (after implicit wrappers).
  static bool isOnly(const clang::Stmt *S, const clang::Expr *Call);

  void classifyCall(const clang::CallExpr *CE);

  /// c10::DeviceType's values as the rules name devices: the 2.4+ call with at::kCPU and the
  /// deprecated set_cpu_enabled() are one device; other backends are devices of their own.
  static std::string deviceName(int64_t DeviceType);

  void addAutocastCall(const clang::CallExpr *CE, const AutocastFunctionRule *R);

  /// `{ set_enabled(true); }` from a macro: every call in the statement is an autocast call.
  bool macroStatementIsOnlyAutocast(const clang::Stmt *S) const;

  /// `void set_autocast(bool enabled) { log(); at::autocast::set_enabled(enabled); }`: a setter
  /// passes its caller's value on and runs nothing after it, so it opens no scope; the caller's
  /// calls of it are where autocast changes. A function that also does other work with a flag
  /// parameter after the call (`set_enabled(use_amp); forward...`) is a scope.
  bool forwardsCallersValue(const clang::Expr *Arg) const;
  /// Whether `S` is inside a loop of the function (a call before the setter may run after it).
  bool inLoop(const clang::Stmt *S) const;

  /// `set_enabled(prev)` where `prev` was read from the autocast state: a restore.
  bool isRestoreArgument(const clang::Expr *Arg) const;

  void addClip(const clang::CallExpr *CE, const ClipFunctionRule *R);

  void classifyMemberCall(const clang::CXXMemberCallExpr *MC);

  /// The expression that names the model in `model->forward`, `model.forward`, `this->forward`.
  static const clang::Expr *receiverExpr(const clang::Expr *Obj);

  void classifyCallOperator(const clang::CXXOperatorCallExpr *OC);

  /// `optimizer.step()` (no closure): the step of a training step without a scaler.
  void addOptimizerStep(const clang::CXXMemberCallExpr *MC);

  void addScalerCall(const clang::CXXMemberCallExpr *MC, const clang::CXXMethodDecl *MD);

  void classifyDecl(const clang::DeclStmt *DS);

  const ScalerCall *scaleCallAt(const clang::Expr *E) const;

  void findImplicitBackwards();

  const clang::VarDecl *scaledLossVariable(const clang::Expr *E) const;

  /// `loss.backward()` with no arguments on a local tensor that no scaler scaled: the backward
  /// of a step without a scaler when the loss was computed under autocast.
  void findPlainBackwards();
};

/// Stage 2 (AutocastScopes.cpp): the autocast scopes of the body from its autocast calls and
/// guards (pairs, guards, macro pairs, unclosed enables), and the inactive AMP code.
class ScopeBuilder : FunctionStage {
public:
  ScopeBuilder(const FunctionBody &Body, FunctionAnalysis &FA, const std::vector<PendingGuard> &Guards)
      : FunctionStage(Body), FA(FA), Guards(Guards) {}

  /// Fills FA.Scopes and FA.InactiveAmpCode.
  void run();

private:
  FunctionAnalysis &FA;
  const std::vector<PendingGuard> &Guards;

  /// The `catch` handler S is in (within this function, outside lambdas); null if none.
  const clang::CXXCatchStmt *handlerOf(const clang::Stmt *S) const;

  bool sameDevice(const AutocastCall &A, const AutocastCall &B) const {
    return A.Device.empty() || B.Device.empty() || A.Device == B.Device;
  }

  unsigned endOffsetOfBlock(const clang::Stmt *S) const;

  void buildScopes();

  /// The outermost loop that holds `Inner` and not `Outside` (within one lambda), or null.
  const clang::Stmt *loopBetween(const clang::Stmt *Inner, const clang::Stmt *Outside) const;
  /// A hole in the scope `Enable` opens: `Off` is in a loop that `Enable` precedes, and the next
  /// switch of the device, not yet used, turns autocast back on in that loop.
  std::optional<AutocastScope::Hole> holeAt(const std::vector<const AutocastCall *> &Enables,
                                            const std::vector<bool> &Used, const AutocastCall &Enable,
                                            const AutocastCall &Off) const;
  /// The disable that closes the scope after a hole's re-enable (marking both used), or null.
  const AutocastCall *closeAfterHole(const std::vector<const AutocastCall *> &Enables,
                                     std::vector<bool> &Used, const AutocastCall &Enable,
                                     const AutocastCall &ReEnable) const;

  /// The block a call sits in: it runs before everything that follows it in that block.
  const clang::CompoundStmt *enclosingBlock(const clang::Stmt *S) const;

  /// A guard of the rules' no-grad-guards declared before `S` in its block or an enclosing one
  /// (within the same function or lambda body), or null.
  const clang::VarDecl *noGradGuardOver(const clang::Stmt *S) const;

  /// A `throw` in a `catch` handler (a rethrow), or one written outside any `try`: the exception
  /// leaves the function. A throw from a macro (TORCH_CHECK) is an error report, not a path the
  /// user wrote.
  bool leavesFunction(const clang::CXXThrowExpr *T) const;

  /// A return, or an exception leaving the function, between enable and disable leaves autocast
  /// on for that path, unless one of the scope's disables runs before it on that path (a `catch`
  /// that disables and then rethrows).
  void findLeakingExit(AutocastScope &S, const AutocastCall &Enable,
                       const std::vector<const AutocastCall *> &Closes);

  void attachAdjacentAuxiliary();

  void findGuardEnds();

  void collectInactive();
};

/// Stage 3b (StepMembers.cpp, StepDataflow.cpp): the members of a step, by the one rule, from
/// the elements and scopes of stages 1 and 2, which it reads only.
class StepMembers : FunctionStage {
public:
  StepMembers(const FunctionBody &Body, const FunctionAnalysis &FA)
      : FunctionStage(Body), FA(FA), Summaries(Body.Ctx, Body.Rules) {}

  /// The gradient window, the clips in it, the zero_grad() calls of the step's optimizers and
  /// models, and the other statements in the window that touch `.grad`.
  void addMembers(TrainingStep &T);

  /// TrainingStep::FeedingScopes: earlier scopes that a variable carries into the region
  /// [T.Scope->Begin, FirstBackward).
  void addFeedingScopes(TrainingStep &T, unsigned FirstBackward);

private:
  const FunctionAnalysis &FA;

  /// Is `E` (an argument) the parameters, a model or an optimizer of the step?
  bool namesStepParameters(const TrainingStep &T, const clang::Expr *E) const;
  /// A local container the function fills with parameters (`for (auto &p : m->parameters())
  /// ps.push_back(p);`, `ps = opt.parameters();`): handing it to code hands the parameters.
  bool collectsParameters(const clang::VarDecl *V) const;
  /// An expression whose value is parameters: a `parameters()` list, or the variable of a
  /// range-for over one (the elements).
  bool isParameterValue(const clang::Expr *E) const;
  mutable llvm::DenseMap<const clang::VarDecl *, bool> CollectsParameters;

  bool isStepElement(const TrainingStep &T, const clang::CallExpr *CE) const;

  /// The statement of the step's block that holds `S`: the block of its first backward, or, when
  /// `S` is outside it (after a micro-batch loop of a gradient accumulation), the block of its
  /// first step(); else the nearest statement of any block.
  const clang::Stmt *stepStatementOf(const TrainingStep &T, const clang::Stmt *S) const;

  /// `optimizer.step()` of one of the step's optimizers: it reads `.grad` (a member only as the
  /// step of an unscaled step or of a mixed step's plain path).
  bool isOwnStepOf(const TrainingStep &T, const clang::CallExpr *CE) const;

  /// Whether a function defined outside the system headers calls a tensor's grad()/mutable_grad(),
  /// in its body or in the functions it calls (a few calls deep).
  llvm::DenseMap<const clang::FunctionDecl *, bool> TouchesGrad;
  bool bodyTouchesGrad(const clang::FunctionDecl *F, int Depth);
  /// For a call of a project function whose body is not in this translation unit (and was not
  /// skipped by the fast path): what the run's summaries say of `Fact`; nullopt for any other call.
  std::optional<CalleeAnswer> elsewhere(const clang::CallExpr *CE, CalleeFact Fact) const;
  /// The window's calls are judged by what they run (issue #37: a step is rewritten only when
  /// every statement in it is understood). A call is understood when it is a library call that
  /// does not act on .grad, or a call of a project function whose every reachable body (in this
  /// translation unit, or in the run's summaries) neither touches .grad, nor runs a backward, nor
  /// calls through a function pointer, nor reaches a function no file of the run has. Fills `A`
  /// and answers true for a call that is not understood.
  bool notUnderstood(const clang::CallExpr *CE, GradAccess &A);
  /// The same for one function the call runs (the callee, or an override of it).
  bool judgeFunction(const clang::FunctionDecl *F, GradAccess &A);
  /// The methods of this TU (outside system headers) that override `MD`, directly or not.
  const std::vector<const clang::CXXMethodDecl *> &overridersOf(const clang::CXXMethodDecl *MD);
  llvm::DenseMap<const clang::CXXMethodDecl *, std::vector<const clang::CXXMethodDecl *>> Overriders;
  bool OverridersKnown = false;
  /// A library method that changes one of the step's models or optimizers (`model->to(device)`,
  /// `model = Net()`): its name, else nullopt. Const methods and the reading ones (parameters(),
  /// train(), eval(), param_groups(), ...) do not.
  std::optional<std::string> changesTrainingObject(const TrainingStep &T, const clang::CallExpr *CE) const;
  FunctionSummariser Summaries;

  void addGradAccesses(TrainingStep &T);
  /// Variables of project classes declared in the window, judged by their constructors and
  /// destructors (GradAccess of the kind their bodies give).
  void addObjectsMade(TrainingStep &T);
  void addGradReadsAfter(TrainingStep &T);
  /// The `.grad()` read (not a clearing) that calling `CE` leads to, in a function defined in
  /// this translation unit a few calls deep; null when none.
  const clang::CallExpr *gradReadInCallee(const clang::CallExpr *CE);
  void addGradReadsBefore(TrainingStep &T);
  /// The innermost loop around the step's last step() (null outside a loop); Found: that call exists.
  const clang::Stmt *loopAroundLastStep(const TrainingStep &T, bool &Found) const;
};

/// Stage 3 (StepGrouping.cpp): the training steps the elements form (per scaler, unscaled, a
/// mixed step's plain path), each with its members from StepMembers.
class StepGrouper : FunctionStage {
public:
  StepGrouper(const FunctionBody &Body, FunctionAnalysis &FA)
      : FunctionStage(Body), FA(FA), Members(Body, FA) {}

  /// Fills FA.Steps.
  void run();

private:
  FunctionAnalysis &FA;
  StepMembers Members;

  void groupSteps();
  std::vector<unsigned> stepCuts(const ObjectRef &Scaler) const;
  void groupStep(const ObjectRef &Scaler, unsigned Lo, unsigned Hi);

  /// A scaled step with no autocast scope (an fp32 forward, rewritten at O0): its forwards are
  /// the model's forward calls in [Lo, FirstBackward) whose innermost block holds the first scaled
  /// backward (the step's loop body, or a block around it).
  void addFp32Forwards(TrainingStep &T, unsigned Lo, unsigned FirstBackward);

  /// Whether the loss of a plain backward is computed in the scope: its initialisation, or an
  /// assignment to it, lies within [Begin, End] of the scope.
  bool computedIn(const AutocastScope &S, const ImplicitBackward &B) const;

  /// A plain backward's loss variable initialised by a call of a function of this translation
  /// unit that opens an autocast scope (an enable call or an RAII guard in its body).
  bool lossFromAutocastCallee(const ImplicitBackward &B) const;

  /// Steps without a scaler (bf16/fp32 autocast), in a function with no scaler calls: each plain
  /// `loss.backward()` whose loss was computed in the last autocast scope opened before it, with
  /// the `optimizer.step()` calls between it and the next plain backward. Membership of the rest
  /// (clips, zero_grad, `.grad` accesses) is addMembers', as for a scaled step.
  void groupUnscaledSteps();

  /// The branch of `If` that holds `S` (its then or else statement), or null (S is in the
  /// condition, or not in `If`).
  const clang::Stmt *branchOf(const clang::IfStmt *If, const clang::Stmt *S) const;

  /// A mixed step: the first scaled backward sits in one branch of an if whose other branch runs a
  /// plain `loss.backward()` (the fp32 path). The ifs of that block that hold the step's other
  /// scaler calls are the same choice split up; the `optimizer.step()` calls of the step's
  /// optimizers on their other branches are the plain path's steps. Whether the conditions agree
  /// and the paths can be rewritten is the planner's to judge; membership is decided here.
  void findPlainBranch(TrainingStep &T);
};

/// The analysis of one function, in order: its elements, its scopes, its steps.
/// `Callees` answers for project functions whose bodies are in other files (null: nobody asks).
FunctionAnalysis analyseFunction(clang::ASTContext &Ctx, const RuleSet &Rules,
                                 const clang::FunctionDecl *FD,
                                 const std::vector<clang::SourceRange> &Inactive,
                                 const CalleeFacts *Callees = nullptr);

} // namespace ampmigrate
