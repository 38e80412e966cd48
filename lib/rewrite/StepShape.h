// The first stage of a step's feasibility: its shape (StepShape), decided before any concern is
// planned. A step whose shape is refused is not planned further.
#pragma once

#include "SplitSteps.h"
#include "StepContext.h"
#include "StepFacts.h"
#include "llvm/ADT/StringSet.h"

namespace ampmigrate {

/// The shape of a step in one function (StepFeasibility.cpp): its backwards, steps, scope (here
/// or in a called function), optimizers, a mixed step's paths, and the names the rewrite declares
/// (fresh in `Names`). `Refused`: an earlier stage blocked the step already (then a missing
/// scope is not reported again).
ConcernPlan<StepShape> planStepShape(const StepContext &C, bool Refused, llvm::StringSet<> &Names);

/// The shape of one half of a step split over two methods of a class (SplitStepEdits.cpp): the
/// member that carries the grads, the zero_grad()s that clear it, the names.
ConcernPlan<StepShape> planSplitShape(const StepContext &C, const SplitStep &S, llvm::StringSet<> &Names);

/// The base of the two shape planners (ShapePlanner, SplitPlanner): a concern that also declares
/// fresh names and decides the step's shape.
class ShapeConcern : public StepConcern {
public:
  ShapeConcern(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers,
               llvm::StringSet<> &Names, StepShape &Out)
      : StepConcern(C, F, Blockers), Names(Names), Out(Out) {}

protected:
  llvm::StringSet<> &Names;
  StepShape &Out;
};

/// Runs a shape planner over the facts it decides (the shape is read while it is decided: a mixed
/// step's checks), starting from `Building`.
template <class Planner>
ConcernPlan<StepShape> planShapeWith(const StepContext &C, StepFacts Building, llvm::StringSet<> &Names) {
  ConcernPlan<StepShape> P;
  Planner(C, Building, P.Blockers, Names, Building).plan();
  P.Plan = Building;
  return P;
}

/// The scaling half's new member holding the grads, after the scaler's declaration (decided after
/// the half's concerns, whose reasons come first).
ConcernPlan<PlannedEdits> planSplitMember(const StepContext &C, const StepFacts &F);

} // namespace ampmigrate
