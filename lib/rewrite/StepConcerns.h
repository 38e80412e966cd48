// The concern planners of one step, in the order planStep runs them: each a free function of the
// step's context and the facts decided before it, returning its slice of the descriptor and its
// blockers (ConcernPlan). One file each; docs/architecture.md, "planning".
#pragma once

#include "MixedSteps.h"
#include "RegionPlanner.h"
#include "ScalerTypePlanner.h"
#include "StepContext.h"
#include "StepFacts.h"
#include "StepShape.h"
#include "VersionBranches.h"
#include "llvm/ADT/StringSet.h"
#include <optional>

namespace ampmigrate {

/// unscale_/step/update/get_scale of the scaler: renamed, given the grads (ScalerCallEdits.cpp).
ConcernPlan<std::vector<CallEdit>> planScalerCalls(const StepContext &C, const StepFacts &F);

/// A step without a scaler (or a mixed step's plain path): `optimizer.step()` becomes the
/// target's step on the grads (ScalerCallEdits.cpp).
ConcernPlan<std::vector<CallEdit>> planOptimizerSteps(const StepContext &C, const StepFacts &F,
                                                      llvm::ArrayRef<const ScalerCall *> Steps);

/// Each clip: refused, or its form and names (ClipEdits.cpp).
ConcernPlan<std::vector<ClipEdit>> planClips(const StepContext &C, const StepFacts &F, llvm::StringSet<> &Names);

/// Statements between the backward and step() that touch `.grad`: refused, or carried over onto
/// the grads (GradAccesses.cpp).
ConcernPlan<std::vector<GradAccessEdit>> planGradAccesses(const StepContext &C, const StepFacts &F,
                                                          llvm::StringSet<> &Names);

/// The step's zero_grad()s outside the region: removed, or clearing the summed grads
/// (ZeroGradEdits.cpp).
ConcernPlan<std::vector<ZeroGradEdit>> planZeroGrads(const StepContext &C, const StepFacts &F);

/// Where the target's include goes in the step's file, if it is missing (TargetSpelling.cpp).
std::optional<Edit> planInclude(const StepContext &C);

} // namespace ampmigrate
