// A mixed step: a plain (fp32) path beside the scaled one, chosen by one condition
// (MixedSteps.cpp).
//
// `if (COND) { scaled backward, unscale_, clip, step, update } else { loss.backward(); clip;
// optimizer.step(); }` (or the same split over ifs on COND). The forward region before the if
// becomes the function handed to value_and_grad, returning `COND ? scaler.scale(loss) : loss`:
// the grads are those of whichever backward ran. Inside the branches the backwards go, the
// scaled path takes the grads as any scaled step, the plain path as a step without a scaler.
#pragma once

#include "StepContext.h"
#include "StepFacts.h"

namespace ampmigrate {

/// Feasibility of a mixed step's two paths, with its shape: false, with the blockers, when it
/// cannot be rewritten with the same meaning.
bool checkMixedPaths(const StepContext &C, const StepFacts &Shape, std::vector<Blocker> &Blockers);

/// The backwards leaving the branches (a branch left empty goes; the whole if when both do).
ConcernPlan<std::vector<BranchEdit>> planMixedBackwards(const StepContext &C, const StepFacts &F);

/// Whether `E` lies in one of the backward statements the branches lose (their operands move
/// into the function's return).
bool inMixedBackward(const StepContext &C, const clang::Stmt *E);

/// `COND ? <scaled> : <plain>` (or the other way round when the scaled path is the else).
std::string mixedReturn(const StepContext &C, const std::string &Scaled);

} // namespace ampmigrate
