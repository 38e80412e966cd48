// amp-scaler-step: step(optimizer) without explicit grads.
#include "ampmigrate/Engine.h"

using namespace clang;
namespace ampmigrate {

void checkScalerStep(const CheckInput &In, FindingSink &Out) {
  for (const TrainingStep &T : In.Function.Steps)
    for (const ScalerCall *C : T.Steps) {
      if (C->HasExplicitGrads || T.Unscaled) // Unscaled: the optimizer's own step()
        continue;
      Finding *F = Out.report("amp-scaler-step", C->Call->getBeginLoc(),
                              "step() without explicit grads; with explicit gradients it takes "
                              "them: step(optimizer, grads)");
      markStep(F, In, &T);
    }
}

} // namespace ampmigrate
