// The analysis model: the AMP elements of one function (autocast scopes, scaler calls, clipping,
// zero_grad, the model and the optimizers) grouped into training steps. Checks report from it and
// the migration planner plans edits from it; both only read it.
#pragma once

#include "ampmigrate/Rules.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ampmigrate {

class CalleeFacts;

/// One call to a function of the autocast API (resolved by declaration).
struct AutocastCall {
  const clang::CallExpr *Call = nullptr;
  const AutocastFunctionRule *Rule = nullptr;
  /// Enable role only. Forwarded: sets a value its caller passes in (a binding's setter), which
  /// opens no scope of its own.
  enum class State { On, Off, Restore, Unknown, Forwarded } Turns = State::Unknown;
  std::string Device; ///< "cuda", "cpu" or "" (unknown / variable)
  /// The statement that exists only for this call (`f();`, `if (c) f();`), or nullptr when the
  /// call is part of a larger statement and cannot be removed alone.
  const clang::Stmt *Removable = nullptr;
  const clang::Expr *GuardCondition = nullptr; ///< `if (use_amp) f();`
  clang::SourceLocation MacroUse;              ///< valid when the call comes from a macro
  bool InLambda = false;
};

/// A region of code that runs with autocast on (or, for a disabling guard, off).
struct AutocastScope {
  enum class Kind { CallPair, Guard, MacroPair, Unclosed } Shape = Kind::CallPair;
  clang::SourceLocation ReportLoc; ///< the enabling call, the guard declaration, or the macro use
  const AutocastCall *Enable = nullptr;
  const AutocastCall *Disable = nullptr; ///< null for Guard (ends with its block) and Unclosed
  const clang::VarDecl *GuardVar = nullptr;
  const clang::Stmt *GuardDeclStmt = nullptr;
  llvm::SmallVector<const clang::CXXMemberCallExpr *, 1> GuardEnds; ///< guard.End()-style calls
  clang::SourceLocation GuardBlockEnd; ///< the closing brace of the guard's block
  bool DisablesAutocast = false; ///< a guard or pair that turns autocast off for a nested region
  /// A guard turning gradient recording off (torch::NoGradGuard) declared before the scope in its
  /// block or an enclosing one: the scope is inference code.
  const clang::VarDecl *NoGradGuard = nullptr;
  /// Dtype, cache and nesting calls that belong to this scope.
  llvm::SmallVector<const AutocastCall *, 4> Auxiliary;
  /// Set when autocast stays on past this point on some path (no disable; or a return first).
  clang::SourceLocation LeaksAt;
  std::string LeakReason;
  std::string LeakNote; ///< said at LeaksAt when a disable exists (the path that skips it)
  unsigned Begin = 0, End = 0; ///< file offsets of the scope (enable .. disable or block end)
  /// A hole: a disable and the re-enable after it, both inside a loop that the scope's enable
  /// precedes and its disable follows (`on; for (...) { fwd; off; loss; backward; on; } off;`).
  /// Each iteration's forward runs with autocast on; what lies between the two runs with it off.
  struct Hole {
    const AutocastCall *Off = nullptr;
    const AutocastCall *On = nullptr;
  };
  llvm::SmallVector<Hole, 1> Holes;
  /// Where what the scope computes leaves its function (found over the translation unit): handed
  /// to a function of it that runs a backward or an optimizer step, directly or through its
  /// callees (`optimize(loss)`), with that backward; or, when it is a loss (a loss function
  /// computes it, or the function's name says "loss"), returned by a function that nothing in the
  /// translation unit calls (its caller, and the backward, are elsewhere).
  const clang::CallExpr *HandedTo = nullptr;
  const clang::CallExpr *HandedToBackward = nullptr;
  const clang::ReturnStmt *ReturnedUncalled = nullptr;
  /// A call in the scope or after it of a function whose body this translation unit does not
  /// have (defined in another file, not a system header's), handed an optimizer or a scaler: it
  /// may train there (`runner.advance(opt)`), so the scope is never called inference code.
  const clang::CallExpr *HandedToUnseen = nullptr;
  /// A return of what the scope computes from a function that a function of another file calls
  /// and trains with (a backward there; CallSummaries.h): never inference code. TrainerName and
  /// TrainerBackward (`file:line`) say which.
  const clang::ReturnStmt *ReturnedToTrainer = nullptr;
  std::string TrainerName, TrainerBackward;
};

/// Which object a scaler (or optimizer, or model) expression refers to.
struct ObjectRef {
  const clang::ValueDecl *Decl = nullptr; ///< VarDecl, ParmVarDecl or FieldDecl; null for `this`
  bool IsThis = false;
  bool ThroughPointer = false; ///< reached with `->` (raw or smart pointer, optional)
  /// A data member of another object (`state->scaler`, `trainer.opt`): the variable it is reached
  /// from (`state`), so that two objects' members are two objects; null for `this`'s members.
  const clang::ValueDecl *Base = nullptr;
  explicit operator bool() const { return Decl || IsThis; }
  bool operator==(const ObjectRef &O) const {
    return Decl == O.Decl && IsThis == O.IsThis && Base == O.Base;
  }
};

/// A call of a loss scaler. In a step without a scaler (TrainingStep::Unscaled) the optimizer's
/// own `optimizer.step()` is recorded the same way: Kind Step, an empty Scaler, the optimizer as
/// its OptimizerArg (the receiver as written), so the planner treats both steps alike.
struct ScalerCall {
  enum class Method { Scale, Unscale, Step, Update, GetScale, IsEnabled } Kind = Method::Scale;
  const clang::CXXMemberCallExpr *Call = nullptr;
  ObjectRef Scaler;
  const clang::CXXRecordDecl *ScalerClass = nullptr;
  ObjectRef Optimizer;                        ///< Unscale / Step
  const clang::Expr *OptimizerArg = nullptr;  ///< as written (`opt`, `*opt`)
  bool HasExplicitGrads = false;              ///< already migrated (`unscale_(opt, grads)`)
  /// The call's answer is used (`bool finite = scaler.unscale_and_check(opt);`): a checked unscale.
  bool ResultUsed = false;
};

/// `scaler.scale(x).backward()`, or `auto s = scaler.scale(x); s.backward();`; in a step without a
/// scaler, the plain `loss.backward()` (Scale null, Loss the tensor it is called on).
struct ImplicitBackward {
  const clang::CXXMemberCallExpr *Backward = nullptr;
  const ScalerCall *Scale = nullptr;
  /// plain form: `loss` of `loss.backward()`, or the whole `(loss / k)` of `(loss / k).backward()`
  const clang::Expr *Loss = nullptr;
  /// the loss variable: of the plain backward, or of scale()'s argument (`scale(loss)`,
  /// `scale(loss / accum)`) when scale() is not split from the backward
  const clang::VarDecl *LossVar = nullptr;
  const clang::Stmt *BackwardStmt = nullptr; ///< the statement holding backward()
  const clang::Stmt *ScaleStmt = nullptr;    ///< split form: the statement holding scale()
  const clang::VarDecl *SplitVar = nullptr;  ///< split form: the variable holding the scaled loss
  bool SplitAssignsArgument = false;         ///< `loss = scaler.scale(loss); loss.backward();`
};

struct ClipCall {
  const clang::CallExpr *Call = nullptr;
  const ClipFunctionRule *Rule = nullptr;
  const clang::Stmt *Statement = nullptr; ///< the statement holding the call
  bool ResultUsed = false;
  bool NormIsL2 = true;
  std::string NormText; ///< the norm type as written when it is not 2
  /// The error-if-nonfinite argument as written when it is not the constant false (the clip
  /// throws on a non-finite norm); empty otherwise.
  std::string ErrorIfNonfinite;
  /// Whose `parameters()` are clipped (`model->parameters()`, `opt.parameters()`); empty when the
  /// parameter list is something else (a variable, a helper's result).
  ObjectRef ParamsOwner;
};

struct ZeroGradCall {
  const clang::CXXMemberCallExpr *Call = nullptr;
  const clang::Stmt *Statement = nullptr; ///< null when not a statement of its own
  ObjectRef Owner;
};

/// A call of the model's forward inside an autocast scope.
struct ForwardCall {
  const clang::Expr *Call = nullptr; ///< CXXMemberCallExpr (forward) or CXXOperatorCallExpr (())
  ObjectRef Model;
  const clang::Expr *Receiver = nullptr; ///< the expression naming the model, null for implicit this
  bool ReturnsTensors = false;           ///< what amp::cast_to_adapter_tensor casts (returnsTensors)
  bool UncastTensors = false;            ///< a class result whose tensors the cast cannot reach
};

/// A statement inside a step's gradient window (first scaled backward .. last step()) that reads
/// or writes the parameters' `.grad`, or hands the parameters, a model or an optimizer of the step
/// to code that may. Implicit gradients live in `.grad`; explicit ones never reach it, so each such
/// statement must be rewritten onto the grads or the step reported.
struct GradAccess {
  const clang::Stmt *Statement = nullptr; ///< the statement of the step's block that holds it
  const clang::Expr *Access = nullptr;    ///< the `.grad()` call, or the call given the parameters
  /// The statement that holds Access most closely (inside an `if` or loop of the step's block it
  /// differs from Statement): what a report names. Null when the call is not a statement's own.
  const clang::Stmt *Holder = nullptr;
  /// Elsewhere: a call of a project function whose body is in another file of the run, which
  /// touches .grad there (Callee and Where say which and where); Unknown: one whose body is in no
  /// file of the run (Callee names it), so what it does is not known; Indirect: a call through a
  /// function pointer or a std::function (Callee as written; with Where, a function Callee runs
  /// makes one there); RunsBackward: a backward outside the step's own, or a function that runs
  /// one (Callee, Where), whose gradients add to .grad; ChangesObject: a library method that
  /// changes the step's model or optimizer (Callee names the method).
  enum class Kind { GradAccessor, ParametersPassed, Elsewhere, Unknown, Indirect, RunsBackward, ChangesObject } How =
      Kind::GradAccessor;
  std::string Callee, Where;
};

/// The plain (unscaled, fp32) path of a mixed step, chosen by a run-time condition beside the
/// scaled one: `if (use_amp) { scaler.scale(loss).backward(); ... scaler.step(opt); ... } else {
/// loss.backward(); ...; opt.step(); }`, or the same split over several ifs
/// (`if (scaler) scaler->scale(loss).backward(); else loss.backward(); ... if (scaler) {
/// scaler->step(opt); scaler->update(); } else opt.step();`). Its backward and steps are members
/// of the step like the scaled path's; Condition is empty for a step that is not mixed.
struct PlainBranch {
  const clang::Expr *Condition = nullptr; ///< the condition of the if holding both backwards
  bool ScaledWhenTrue = true;             ///< the scaled backward is in that if's then-branch
  /// The ifs that choose between the paths, in source order: the one holding both backwards,
  /// then each later if of its block that holds a scaler call of the step. PlainSides[i] is the
  /// branch of Ifs[i] away from the scaled elements (null when it has no else).
  llvm::SmallVector<const clang::IfStmt *, 2> Ifs;
  llvm::SmallVector<const clang::Stmt *, 2> PlainSides;
  llvm::SmallVector<const ImplicitBackward *, 1> Backwards; ///< `loss.backward()`
  llvm::SmallVector<const ScalerCall *, 4> Steps; ///< `optimizer.step()` (see ScalerCall)
  /// File offsets [begin, end] of each plain side.
  llvm::SmallVector<std::pair<unsigned, unsigned>, 2> Ranges;
  bool contains(unsigned Offset) const {
    return llvm::any_of(Ranges, [&](const auto &R) { return Offset >= R.first && Offset <= R.second; });
  }
};

/// One training step: forward under autocast, scaled backward, unscale/clip/step/update.
///
/// Membership is decided here, once, by one rule (StepFinder's groupSteps): the scope before the
/// first scaled backward; the scaler calls on the step's scaler; every clip inside the gradient
/// window [first backward (or first unscale_), last step()]; every zero_grad() of the step's
/// optimizers and models in the function; every other statement in the window that touches
/// `.grad` (GradAccesses); for a mixed step, the plain path's backward and steps (Plain), which
/// widen the window. Checks and the planner read this membership and never recompute it.
struct TrainingStep {
  const AutocastScope *Scope = nullptr;
  llvm::SmallVector<const ImplicitBackward *, 2> Backwards;
  llvm::SmallVector<const ScalerCall *, 4> Unscales, Steps, Updates, Others;
  llvm::SmallVector<const ClipCall *, 2> Clips;
  llvm::SmallVector<const ZeroGradCall *, 2> ZeroGrads;
  llvm::SmallVector<const ForwardCall *, 2> Forwards;
  llvm::SmallVector<GradAccess, 2> GradAccesses;
  /// `.grad()` calls after the last step(), in what is left of its loop's iteration (or block)
  /// before the next backward: implicit grads are still in `.grad` there, explicit ones never.
  llvm::SmallVector<const clang::CallExpr *, 1> GradReadsAfter;
  /// Calls in the same stretch after the step of functions defined in this translation unit that
  /// read `.grad` (a logging helper, `log(grad_norm(model))`), a few calls deep: the call made
  /// here and the `.grad()` read it leads to.
  llvm::SmallVector<std::pair<const clang::CallExpr *, const clang::CallExpr *>, 1> GradHelpersAfter;
  /// The same for functions whose bodies are in other files of the run (the call, and the
  /// function and `file:line` of the read, CallSummaries.h), or in none while the call is handed
  /// the step's model, optimizer or parameters (an empty `file:line`).
  struct ElsewhereHelper {
    const clang::CallExpr *Call;
    std::string Function, Where;
  };
  llvm::SmallVector<ElsewhereHelper, 1> GradHelpersElsewhere;
  /// `.grad()` calls before the first backward, from the start of the loop iteration holding the
  /// step (or of the function) or the end of an earlier step: the original finds the last step's
  /// gradients, or zero_grad()'s zeros, there; explicit grads never reach `.grad`. Calls that only
  /// clear `.grad` (a hand-written zero_grad) are not listed.
  llvm::SmallVector<const clang::CallExpr *, 1> GradReadsBefore;
  /// The same reached through a function: one of this translation unit that reads `.grad` a few
  /// calls deep (Where: the read's `file:line`), or one whose summary in another file says so.
  llvm::SmallVector<ElsewhereHelper, 1> GradHelpersBefore;
  /// Other autocast scopes before `Scope` whose values the step's forward region reads (a
  /// feature extractor in one scope, the head and loss in another), with no backward between:
  /// they feed the same loss, and the rewrite hands one scope's region to value_and_grad.
  llvm::SmallVector<const AutocastScope *, 1> FeedingScopes;
  ObjectRef Scaler;
  const clang::CXXRecordDecl *ScalerClass = nullptr;
  /// A step without a loss scaler (bf16 or fp32 autocast): a plain `loss.backward()` of a loss
  /// computed in the scope, then `optimizer.step()` (in Steps, see ScalerCall). No Unscales,
  /// Updates or Others; Scaler is empty.
  bool Unscaled = false;
  /// A mixed step: the plain path beside the scaled one (Plain.Condition set).
  PlainBranch Plain;
  bool mixed() const { return Plain.Condition != nullptr; }
  unsigned Begin = 0; ///< file offset of the first element (orders steps, names them)
  /// The gradient window: file offsets of the first scaled backward (or first unscale_) and of
  /// the last step(). Empty (Begin > End) when the step has neither.
  unsigned GradientBegin = ~0u, GradientEnd = 0;
  bool inGradientWindow(unsigned Offset) const {
    return Offset >= GradientBegin && Offset <= GradientEnd;
  }
  /// True when an unscale_() of the optimizer `Of` (or, for an empty `Of`, of any optimizer)
  /// comes before the offset: gradients clipped there are unscaled.
  bool unscaledBefore(unsigned Offset, const ObjectRef &Of,
                      const clang::SourceManager &SM) const;
  bool stepsOptimizer(const ObjectRef &O) const {
    return llvm::any_of(Steps, [&](const ScalerCall *S) { return S->Optimizer == O; });
  }
  bool forwardsModel(const ObjectRef &M) const {
    return llvm::any_of(Forwards, [&](const ForwardCall *F) { return F->Model == M; });
  }
};

/// Everything the analysis found in one function body (lambdas are analysed with their parent).
struct FunctionAnalysis {
  const clang::FunctionDecl *Function = nullptr;
  std::vector<AutocastCall> AutocastCalls;
  /// The rules of the thin setters this function calls (forwardingSetterRule), which its
  /// AutocastCalls point to (shared, so that a copy of the analysis keeps them valid).
  std::vector<std::shared_ptr<const AutocastFunctionRule>> SetterRules;
  /// Local variables that hold an autocast guard through a std::optional or a smart pointer
  /// (`std::optional<Guard> g; g.emplace();`, `auto g = std::make_unique<Guard>(); g.reset();`):
  /// scopes whose extent is the holder's calls, not a block, which are not rewritten yet.
  std::vector<const clang::VarDecl *> HeldGuards;
  std::vector<AutocastScope> Scopes;
  std::vector<ScalerCall> ScalerCalls;
  std::vector<ImplicitBackward> Backwards;
  /// `loss.backward()` on a tensor no scaler scaled, and `optimizer.step()`: the elements of
  /// steps without a scaler.
  std::vector<ImplicitBackward> PlainBackwards;
  std::vector<ScalerCall> OptimizerSteps;
  /// Every `Tensor::backward()` call of the function (lambdas included), in source order: what
  /// the reasons of scopes without a step name.
  std::vector<const clang::CXXMemberCallExpr *> BackwardCalls;
  std::vector<ClipCall> Clips;
  std::vector<ZeroGradCall> ZeroGrads;
  std::vector<ForwardCall> Forwards;
  std::vector<TrainingStep> Steps;
  /// scale() calls on a class that looks like a loss scaler port the tool does not know
  /// (isUnknownScalerPort): a loss-scaling step nothing else here names.
  std::vector<const clang::CXXMemberCallExpr *> UnknownScalerScales;
  /// Inactive preprocessor regions inside the function that mention AMP names.
  std::vector<clang::SourceRange> InactiveAmpCode;
  /// No backward() (Tensor::backward, torch::autograd::backward/grad) in this function, nor in any
  /// function of the analysed code that calls it, directly or through others: its autocast
  /// scopes are inference, not a training step's forward.
  bool InferenceOnly = false;
  /// A template (function template, member of a class template) instantiated several times in
  /// this translation unit: each instantiation is analysed (its calls on template parameters
  /// resolved), and this is how many there are; `Pattern` is the template's own definition, which
  /// the steps of every instantiation edit together (planMigrations requires their plans to be the
  /// same). 0 and null otherwise (a template instantiated once is analysed through that
  /// instantiation alone; one never instantiated, through its pattern).
  unsigned Instantiations = 0;
  const clang::FunctionDecl *Pattern = nullptr;
  /// Code read in its own definition because this translation unit instantiates it nowhere (the
  /// whole function, a template's definition; or a generic lambda in it that nothing calls): the
  /// calls there whose callee or arguments depend on a template parameter (`model->forward(x)` of
  /// a `Model &model` or an `auto &model`, `scaler.scale(loss)` of an `auto loss` computed from
  /// one), in walk order. Clang resolves them only in an instantiation, so what they call, and so
  /// what the steps and scopes there hold, is not known (unresolvedAt, StepFinder.h).
  std::vector<const clang::CallExpr *> UnresolvedCalls;
  /// The generic lambdas (outermost) that hold UnresolvedCalls in a function that is not a
  /// template's definition.
  std::vector<const clang::LambdaExpr *> UncalledLambdas;
};

/// The analysis of a translation unit.
struct TranslationUnitAnalysis {
  std::vector<FunctionAnalysis> Functions;
  /// What the run knows of project functions whose bodies are in other files; null: nothing.
  const CalleeFacts *Callees = nullptr;
  /// Whether a location lies in a file this run may edit (the main file, the headers matched by
  /// --header-filter). Unset: the main file only.
  std::function<bool(clang::SourceLocation)> Editable;
};

} // namespace ampmigrate
