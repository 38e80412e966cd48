// A training step split over two methods of one class (issue #12 item 6): the scope and the scaled
// backward in one (`Trainer::forward_backward`), unscale_/clip/step/update on the same scaler in
// another (`Trainer::optimizer_step`), typically both called from a third. The analysis sees two
// half steps; this pairs them, so that the planner migrates them as one (the grads in a new
// member of the class) and what is reported names both methods.
#pragma once

#include "ampmigrate/TrainingStep.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace ampmigrate {

struct SplitStep {
  const FunctionAnalysis *Scaling = nullptr; ///< the method with the scaled backward
  const TrainingStep *ScalingHalf = nullptr;
  const FunctionAnalysis *Stepping = nullptr; ///< the method with step()
  const TrainingStep *SteppingHalf = nullptr;
  /// A method of the class whose body calls both (null when none in this TU does).
  const clang::FunctionDecl *Caller = nullptr;
  /// With no such method: one half's call of the other (`forward_backward() { ...; optimizer_step(); }`).
  const clang::CallExpr *Chained = nullptr;
  const FunctionAnalysis *ChainedFrom = nullptr; ///< the half that holds that call
};

/// The other half of `Half` (a step with a scaled backward and no step(), or the reverse), in a
/// method of the same class of this TU, on the same scaler; none when there is no such method or
/// more than one.
std::optional<SplitStep> findSplitStep(const TranslationUnitAnalysis &TU, const FunctionAnalysis &FA,
                                       const TrainingStep &Half);

/// Why the split step is not rewritten (`WhyNot`), said at the half `AtScaling` (or the other),
/// naming both methods with their locations.
std::string splitStepReason(const SplitStep &S, bool AtScaling, const clang::SourceManager &SM,
                            llvm::StringRef WhyNot,
                            llvm::StringRef Advice = "move both halves into one method or migrate by hand");

} // namespace ampmigrate
