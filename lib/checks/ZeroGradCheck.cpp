// amp-zero-grad: zero_grad() of a step's optimizer or model: redundant with explicit grads, or,
// in a gradient accumulation, the clearing of the summed grads.
#include "ampmigrate/Engine.h"

using namespace clang;
namespace ampmigrate {

void checkZeroGrad(const CheckInput &In, FindingSink &Out) {
  for (const TrainingStep &T : In.Function.Steps)
    for (const ZeroGradCall *Z : T.ZeroGrads) {
      const MigrationPlan *P = In.planOf(&T);
      Finding *F = Out.report(
          "amp-zero-grad", Z->Call->getBeginLoc(),
          P && P->Accumulates
              ? "zero_grad() ends a gradient accumulation: with explicit gradients it clears the "
                "summed grads list instead (grads.clear())"
              : "zero_grad() is redundant: explicit gradients from " + In.Rules.Target.ValueAndGrad +
                    " never accumulate in .grad");
      markStep(F, In, &T);
    }
}

} // namespace ampmigrate
