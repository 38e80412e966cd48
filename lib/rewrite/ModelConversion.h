// Where and how a model is converted (amp::convert): the level (with a run-time flag), the dtype,
// the place (before the outermost loop that the model's declaration precedes). Used by the forward
// region's planner and the scope in a called function.
#pragma once

#include "StepContext.h"
#include "StepFacts.h"

namespace ampmigrate {

/// The run-time flag that switched autocast on for this scope, if any: the condition of
/// `if (use_amp) set_enabled(true);`, or the argument a guard constructor takes for its
/// `bool` parameter (`AmpGuard g(cfg.use_amp);`). Null for a scope that is always on.
const clang::Expr *runTimeFlag(const StepContext &C, const AutocastScope &S, bool *OnWhenFalse = nullptr);

/// What goes when an autocast call's statement goes: the statement, or the whole
/// `if (use_amp) { ... }` around it when that block holds nothing but this scope's calls (an
/// empty `if` would be left otherwise).
const clang::Stmt *removalUnit(const StepContext &C, const AutocastScope &S, const clang::Stmt *St);

/// The conversion of the models a scope runs: each answer, or a blocker.
class ModelConversion : public StepConcern {
public:
  ModelConversion(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers)
      : StepConcern(C, F, Blockers) {}

  /// The level expression of a conversion inserted at `At`: the chosen level, or, when autocast
  /// was switched by a run-time flag, that flag choosing between it and O0 (so the fp32 mode
  /// stays fp32). False (and a blocker) when the flag cannot be evaluated at `At`.
  bool levelExpr(const AutocastScope &S, unsigned At, std::string &Out);
  /// The conversion's arguments after the level: `, dtype` when the scope sets one, then the
  /// device type of a CUDA scope (`, torch::kCUDA`). False (and a blocker) when the dtype cannot
  /// be carried to the conversion at `At`.
  bool conversionArgs(const AutocastScope &S, unsigned At, std::string &Out);
  /// Where the model is converted: before the outermost loop around the step that the model's
  /// declaration precedes (converted once, not per iteration); otherwise at the start of the step.
  bool conversionBeforeLoop(const ObjectRef &M, const clang::Stmt *Anchor, unsigned &InsertAt) const;
  /// Before the outermost loop around `Anchor` that the model's declaration precedes, or before
  /// `Anchor` itself (a statement holding the lambda of the step).
  bool conversionBefore(const ObjectRef &M, const clang::Stmt *Anchor, unsigned &InsertAt) const;
  /// The outermost loop around `S` that starts after offset `After` (a declaration it must not
  /// precede), with only blocks and loops between; null if none. A loop holding one of `Writes`
  /// (offsets where the object is assigned anew, a fold's `model = Net();`) is not left either:
  /// what is converted before it would be the old object.
  const clang::Stmt *outermostLoop(const clang::Stmt *S, unsigned After,
                                   llvm::ArrayRef<unsigned> Writes = {}) const;

private:
  /// The device an autocast call names ("cuda", "cpu"; "" when not known).
  std::string deviceOf(const clang::CallExpr *CE, const AutocastFunctionRule &R) const;
  /// The low-precision dtype the scope sets for the device it enables, as the conversion's third
  /// argument (`", at::kBFloat16"`); "" when the scope sets none.
  bool dtypeArg(const AutocastScope &S, unsigned At, std::string &Out, std::string &EnableDevice);
  /// Where the function assigns the object `M` anew after its declaration (`m = Net()`,
  /// `m.reset(...)`, `m.emplace(...)`, `std::swap(m, o)`): file offsets, in no order.
  std::vector<unsigned> writesOf(const ObjectRef &M) const;
};

} // namespace ampmigrate
