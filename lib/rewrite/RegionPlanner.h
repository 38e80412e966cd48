// The forward region of a step as the function handed to value_and_grad (planRegion): whether it
// can be, and, as that is found by building it, its new text and the scope's removals. The
// planner's steps (RegionLambda.cpp) each hand a value of ForwardRegion.h to the next; where the
// region may start and end is RegionBounds.cpp, the micro-steps' sum Accumulation.cpp, the scope
// in a called function CalleeScope.cpp, the models' conversion ModelConversion.h.
#pragma once

#include "ForwardRegion.h"
#include "ModelConversion.h"
#include "Naming.h"
#include "StepContext.h"
#include "StepFacts.h"
#include <map>
#include <optional>

namespace ampmigrate {

/// The region's slice of the descriptor, and the facts it decides for the concerns after it.
struct RegionPlan {
  /// Gradient accumulation (a split step's, from StepFacts, or the one found here).
  AccumulationPlan Accumulation;
  /// The scope in a called function: its calls gone, the model converted there.
  PlannedEdits Callee;
  /// Around the region: the scope's calls outside it removed, the models converted before a
  /// loop, the captures of the lambdas around the step.
  PlannedEdits Region;
  /// The region itself, as the function handed to value_and_grad (none: blocked, or no region).
  std::optional<RegionLambda> Lambda;
  /// The region's text in the file.
  RegionExtent Extent;
  /// The conversions this step inserts before a loop (offset, line), for planMigrations to join
  /// with those of the function's other steps at the same offset.
  std::vector<std::pair<unsigned, std::string>> LoopConversions;
};

/// Plans the forward region of backward `B`: its slice, or the blockers. Takes fresh names from,
/// and records the models converted before a loop in, the function's `Shared` planning.
ConcernPlan<RegionPlan> planRegion(const StepContext &C, const StepFacts &F, FunctionPlanning &Shared,
                                   const ImplicitBackward &B);

/// The planner behind planRegion (one object per call).
class RegionPlanner : public StepConcern {
public:
  RegionPlanner(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers,
                FunctionPlanning &Shared, RegionPlan &Plan)
      : StepConcern(C, F, Blockers), Shared(Shared), Names(Shared.UsedNames), Plan(Plan),
        Conversion(C, F, Blockers) {}

  /// The region's steps in order; each returns nothing (nullopt) when it blocked.
  void checkRegion(const ImplicitBackward &B);

private:
  FunctionPlanning &Shared;
  llvm::StringSet<> &Names;
  RegionPlan &Plan;
  ModelConversion Conversion;
  /// The converted model's name per model.
  std::map<const clang::ValueDecl *, std::string> ModelNames;

  // ---- RegionLambda.cpp: the steps of checkRegion ---------------------------------------------
  /// The region's statements, from the scope's start (or the scope around the loop) to the
  /// scaled backward, in its block (runs checkAccumulation).
  std::optional<ForwardRegion> forwardRegion(const ImplicitBackward &B);
  /// Where the region's pieces lie (sets Plan.Extent), when each starts its line and no graph
  /// crosses another step's region.
  std::optional<RegionOffsets> regionOffsets(const ImplicitBackward &B, const ForwardRegion &R);
  /// The scope's calls removed: those in the region's text as its edits, the others into
  /// Plan.Region (or the scope in a called function, checkCalleeScope).
  RegionTextEdits removeScope(const ForwardRegion &R, const RegionOffsets &O);
  /// The models the region's forwards run, converted (before a loop into Plan.Region, or at the
  /// region's start: the lines returned) and their forwards rewritten into `Body`.
  std::optional<std::vector<std::string>> convertModels(const ForwardRegion &R, const RegionOffsets &O,
                                                        std::vector<Edit> &Body);
  /// The step's zero_grad()s inside the region go (or clear the summed grads), into `Body`.
  void clearRegionZeroGrads(const RegionOffsets &O, std::vector<Edit> &Body);
  /// The lines declaring, before the lambda, the region's declarations that the code after it
  /// still names; their edits inside the region into `Body`.
  std::optional<std::string> hoistedDeclarations(const ForwardRegion &R, const RegionOffsets &O,
                                                 std::vector<Edit> &Body);
  /// The lambda's body: the region's text with `Edits`, re-indented.
  std::optional<std::string> lambdaBody(const ForwardRegion &R, const RegionOffsets &O, std::vector<Edit> Edits);
  /// What the lambda returns: the scaled loss (the sum of them, with several backwards).
  std::optional<std::string> scaledReturn();
  /// The guard tail's text, less the scope's calls in it (`TailEdits`).
  std::optional<std::string> guardText(const RegionOffsets &O, std::vector<Edit> TailEdits);
  /// The text that stays around the call: comments after the statements it replaces, the
  /// statements between the scale statement and backward, comments between several backwards.
  void keepTextAroundCall(const ImplicitBackward &B, const ForwardRegion &R, RegionLambda &L) const;

  // ---- RegionBounds.cpp --------------------------------------------------------------------------
  /// The index of the guard tail in the region (its size when none), when no other statement
  /// leaves the region.
  std::optional<size_t> tailStart(const ForwardRegion &R);
  /// The region's statements from the first one that leaves the iteration (return, break,
  /// continue, goto) to the backward, when they can run after the value_and_grad call instead:
  /// after the scope, no forward, scaler, zero_grad or autocast call, no write of a variable the
  /// scaled loss reads. TailAt: their first index (Region.size() if none); returns the statement
  /// that prevents it, if any, with the reason in Why.
  const clang::Stmt *guardTail(const AutocastScope *S, llvm::ArrayRef<const clang::Stmt *> Region,
                               bool Enclosing, size_t &TailAt, std::string &Why);
  /// At O2/O3: whether the forward region [RB, BodyEnd) reads a tensor another step's scope
  /// computed (a GAN's generator output), or another step's scope reads one this region computes;
  /// blocks the step if so (the graph would cross two value_and_grad calls).
  bool checkCrossStepGraph(unsigned RB, unsigned BodyEnd);
  /// A scope opened before the loop that holds the step and closed after it: autocast is on for
  /// every iteration's forward, so the step's forward region is its block's statements from the
  /// first one that runs the model up to the scaled backward, and the scope's calls go where they
  /// are. Sets R0; false (blocked, with the reason) otherwise.
  bool enclosingScopeRegion(const AutocastScope &S, const clang::Stmt *ScopeStart,
                            const clang::CompoundStmt *Block, const clang::Stmt *EndStmt,
                            const clang::Stmt *&R0);

  // ---- UnscopedRegion.cpp (a scaled step with no autocast scope: an fp32 forward) ----------------
  /// The region's first statement in `Block`: the earliest statement before `EndStmt`, and after
  /// the last one that holds a backward or a call of the step (step, update, zero_grad, unscale_),
  /// that gives a value to what the loss reads, directly or through other such statements. Null
  /// (blocked, with the reason) when no statement there computes the loss.
  const clang::Stmt *unscopedRegionStart(const ImplicitBackward &B, const clang::CompoundStmt *Block,
                                         const clang::Stmt *EndStmt);
  /// Whether the region's calls are known to compute without autocast: every function of the
  /// project it reaches (a model's forward included) has its body in the translation unit, and
  /// none turns autocast on (a call of the rules' enable functions, an enabling guard). Blocks
  /// with the reason otherwise.
  bool checkUnscopedForward(const ForwardRegion &R);

  // ---- Accumulation.cpp --------------------------------------------------------------------------
  /// Gradient accumulation: the scaled backward runs several times (in a nested loop, or every
  /// iteration of a loop whose step() runs under a condition) before one unscale_/step/update.
  /// The explicit grads of each micro-step are then summed into a list declared before the loop
  /// (`.grad` accumulates the same way), and each zero_grad() of the step clears that list.
  bool checkAccumulation(const ImplicitBackward &B, const clang::CompoundStmt *Block);
  /// Several optimizers after an accumulation: the summed grads are split per optimizer just
  /// before the first unscale_/step, which must stand in a block holding all of them.
  bool checkSplitAfterAccumulation();

  // ---- CalleeScope.cpp ---------------------------------------------------------------------------
  /// The edits in the callee, computed while checking them into Plan.Callee: the scope's calls
  /// go, its forward calls use the converted model, and the model is converted in place of the
  /// scope's first statement.
  void checkCalleeScope();
  /// Deletes a statement of a scope (its line when alone on it) into `Out`; false (and a blocker)
  /// when it sits in a macro body with other code.
  bool removeInto(const clang::Stmt *St, clang::SourceLocation Why, std::vector<Edit> &Out);
  /// A forward call through the converted model `Conv`, its tensors back to ordinary ones
  /// (`model->forward(x)` -> `amp::cast_to_adapter_tensor(amp_model->forward(x))`), into `Out`.
  bool rewriteForward(const ForwardCall &Fwd, const std::string &Conv, std::vector<Edit> &Out);
};

} // namespace ampmigrate
