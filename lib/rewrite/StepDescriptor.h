// The plan of one training step as a value: what the feasibility stage decided (StepDescriptor),
// read by the edit writers (StepEditWriter.h), which only write it out. Decisions live here so that no
// edit writer has to, or can, decide whether the step is rewritten (docs/architecture.md, "planning").
#pragma once

#include "RegionDeclarations.h"
#include "SplitSteps.h"
#include "ampmigrate/MigrationPlan.h"
#include "clang/Tooling/Core/Replacement.h"
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ampmigrate {

/// Edits whose values the feasibility stage computes while checking them, because finding out
/// whether an edit can be made is computing it (the forward region's new text, the scaler's type
/// wherever it flows, the scope in a called function). The edit writer writes them out as they are,
/// in the order they were planned.
struct PlannedEdits {
  std::vector<Edit> InFile;                              ///< edits of the step's file
  std::vector<std::pair<unsigned, std::string>> Joined;  ///< insertions joined with the others at their offset
  std::vector<clang::tooling::Replacement> Elsewhere;    ///< edits of other files (headers)

  void replace(Edit E) { InFile.push_back(std::move(E)); }
  void insertJoined(unsigned At, std::string Text) { Joined.emplace_back(At, std::move(Text)); }
};

/// One edit of a call of the scaler or of an optimizer's step() (ScalerCallEdits.cpp), in the order
/// the calls were checked.
struct CallEdit {
  enum class Kind {
    Rename,        ///< the method's name at [Begin, End) becomes `Name`
    GradsArgument, ///< `, <Grads>` inserted at Begin (the call's `)`)
    Negate,        ///< `!` inserted at Begin: a checked unscale whose answer meant "inf found"
    OptimizerStep, ///< the call at [Begin, End) becomes `<target.step>(<Name>, <Grads>)`
  };
  Kind What;
  unsigned Begin = 0, End = 0;
  std::string Name, Grads;
};

/// A clip of the grads (ScalerCallEdits.cpp): which form replaces the clip_grad_norm_ call,
/// decided from how its result is used.
struct ClipEdit {
  enum class Form {
    Statement,         ///< the result is unused: the statement becomes the clip
    NormInDeclaration, ///< `auto n = clip(...);`: the call becomes the norm (and the clip, unless in place)
    NormBefore,        ///< the result is used elsewhere: a `const double <NormVar>` holds it first
    ByValue,           ///< a clip by value (its result unused): the statement becomes
                       ///< `<target.clip-value-in-place>(<Grads>, <MaxNorm: the value>);`
  };
  Form How = Form::Statement;
  unsigned StmtBegin = 0, StmtEnd = 0, CallBegin = 0, CallEnd = 0;
  std::string Grads, MaxNorm, Indent, NormVar;
  /// `<target.check-holds>(<optimizer>, <params>);`, written before the clip's statement where
  /// the optimizer is not seen built (empty otherwise).
  std::string HoldsCheck;
};

/// A statement between the backward and step() that touches `.grad` and carries over to the
/// explicit grads (GradAccesses.cpp).
struct GradAccessEdit {
  enum class Kind {
    AllReduce, ///< the loop at [Begin, End) becomes `<target.all-reduce-grads>(<Grads>, <Group>)`
    Loop,      ///< the loop's header [Begin, End) iterates the grads as `LoopVar`; each accessor is it
  };
  Kind What = Kind::Loop;
  unsigned Begin = 0, End = 0;
  std::string Grads, Group, LoopVar;
  bool Average = true;
  std::vector<std::pair<unsigned, unsigned>> Accessors; ///< `p.grad()` ranges, each replaced by LoopVar
};

/// A zero_grad() of the step (ZeroGradEdits.cpp) at [Begin, End): removed, or clearing the summed
/// grads of an accumulation.
struct ZeroGradEdit {
  bool Clears = false;
  unsigned Begin = 0, End = 0;
};

/// A backward leaving a branch of a mixed step (MixedSteps.cpp): the statement at [Begin, End) goes,
/// or becomes `{}` when it is the branch itself (`if (c) loss.backward(); else ...`).
struct BranchEdit {
  unsigned Begin = 0, End = 0;
  bool LeavesEmptyBlock = false;
};

/// Gradient accumulation (Accumulation.cpp): the grads of several micro-steps are summed into
/// `StepDescriptor::GradsName`, declared by `GradsDecl` at GradsDeclAt (before the loop that runs
/// the micro-steps).
struct AccumulationPlan {
  bool On = false;
  unsigned GradsDeclAt = 0;
  std::string GradsDecl;
  /// Several optimizers: the summed grads are split per optimizer at SplitAt (the line of the
  /// first unscale_/step), indented by SplitIndent.
  std::optional<unsigned> SplitAt;
  std::string SplitIndent;
};

/// The forward region [Begin, End) as the function handed to value_and_grad (RegionLambda.cpp):
/// the pieces checkRegion found while checking the region, which the edit writer puts together with
/// the step's names.
struct RegionLambda {
  unsigned Begin = 0, End = 0;
  std::string Indent;     ///< the region's first line's
  std::string Before;     ///< the models' conversions and the hoisted declarations, whole lines
  std::string Body;       ///< the region's statements, edited and re-indented as the lambda's body
  std::string Returns;    ///< what the lambda returns: the scaled loss (their sum, with several)
  std::string ValueName;  ///< the name the call's value gets
  std::string MicroName;  ///< an accumulation's micro-step grads
  std::string Trailing;   ///< comments of the replaced lines, kept on the call's line
  std::string AssignBackTo; ///< a variable of the split form assigned the value after the call
  std::string After;      ///< what stays after the call: statements and comments between the scaled backwards
  /// Statements between the forward and the backward that leave the iteration (`if (!finite)
  /// continue;`), after the scope: right after the call, before any accumulation or step.
  std::string Guard;
};

/// The step's shape as feasibility decided it (planStepShape, or planSplitHalf for a step split
/// over two methods): the names the rewrite declares and the step's parts. A fact every concern
/// planner reads (StepFacts), and part of the descriptor the edit writers read.
struct StepShape {
  /// The names the rewrite declares: the grads list (a new member for a split step), the
  /// function handed to value_and_grad; and what value_and_grad differentiates.
  std::string GradsName, GradFnName, OptParams;
  /// Several optimizers: each one's list of grads (split from GradsName), and the optimizers as
  /// written, comma-separated.
  std::vector<std::pair<ObjectRef, std::string>> PerOptimizer;
  std::string OptimizerArgs;
  /// The step's scaled backwards in source order (several: consecutive statements of one block,
  /// whose scaled losses the function returns summed).
  std::vector<const ImplicitBackward *> AllBackwards;
  /// The scope in another function: `auto loss = forward_loss(batch);` before the scaled
  /// backward, where forward_loss() (defined in this file) holds the autocast scope and the
  /// forward. The loss statement becomes the function handed to value_and_grad; in
  /// forward_loss() the scope goes and the model is converted where the scope began.
  const FunctionAnalysis *CalleeFA = nullptr;
  const AutocastScope *CalleeScope = nullptr;
  const clang::Stmt *CalleeCallStmt = nullptr; ///< the statement in this function that calls it
  const clang::CallExpr *CalleeCall = nullptr;
  /// No autocast scope, here or in a called function (issue #38, "Shape 2"): the forward runs in
  /// fp32 and a loss scaler scales it. The forward region is chosen by what the loss reads
  /// (UnscopedRegion.cpp), and no model is converted: the rewrite is O0 whatever --level says.
  bool Unscoped = false;
  /// A step split over two methods of one class: both halves, and the zero_grad()s (in either
  /// method) that clear the member holding the grads.
  std::optional<SplitStep> Split;
  std::vector<const ZeroGradCall *> SplitZeroGrads;

  /// The grads list an optimizer's unscale_/step/clip takes (its own with several optimizers).
  const std::string &gradsFor(const ObjectRef &Optimizer) const {
    for (const auto &[O, Name] : PerOptimizer)
      if (O == Optimizer)
        return Name;
    return GradsName;
  }
  /// A model of the callee's scope as this function names it: a member or global is itself; a
  /// parameter of the callee is the argument the call passes.
  const clang::ValueDecl *callerModel(const ObjectRef &M) const;
  /// The zero_grad()s of step `T`: with a split step, those that clear the member.
  llvm::ArrayRef<const ZeroGradCall *> stepZeroGrads(const TrainingStep &T) const {
    if (Split)
      return SplitZeroGrads;
    return T.ZeroGrads;
  }
};

/// The plan descriptor: the step's shape and what each concern planner decided before any edit
/// is made, everything the edit writers read. Only a step without blockers is emitted.
struct StepDescriptor : StepShape {
  // ---- what each edit writer writes, one concern each, in the order they run -------------------

  AccumulationPlan Accumulation;
  /// The scope in a called function: its calls gone, the model converted there (CalleeScope.cpp).
  PlannedEdits Callee;
  /// Around the forward region: the scope's calls outside it removed, the models converted
  /// before a loop, the captures of the lambdas around the step (RegionLambda.cpp); then the
  /// region itself, turned into the function handed to value_and_grad.
  PlannedEdits Region;
  std::optional<RegionLambda> Lambda;
  /// unscale_/step/update/get_scale of the scaler, or a step without one (ScalerCallEdits.cpp).
  std::vector<CallEdit> Calls;
  /// A mixed step's plain path: its optimizer steps, and the backwards leaving the branches.
  std::vector<CallEdit> PlainSteps;
  std::vector<BranchEdit> MixedBackwards;
  std::vector<ClipEdit> Clips;
  std::vector<GradAccessEdit> GradAccesses;
  std::vector<ZeroGradEdit> ZeroGrads;
  /// The scaler's type where it is declared and wherever it flows, with its constructions'
  /// options and the target's include in the headers changed (ScalerDeclaration.cpp, ScalerFlow.cpp).
  PlannedEdits ScalerType;
  /// The target's include in the step's file.
  std::optional<Edit> Include;
  /// A split step's scaling half: the member holding the grads, after the scaler member.
  PlannedEdits SplitMember;
};

/// Feasibility alone for one step: the reasons it is not rewritten (in the order the planner
/// reports them), or, with none, the descriptor the edit writers would read.
struct StepAssessment {
  std::vector<Blocker> Blockers;
  StepDescriptor Descriptor;
};

} // namespace ampmigrate
