// amp-scaler-unscale: unscale_(optimizer) without explicit grads.
#include "ampmigrate/Engine.h"

using namespace clang;
namespace ampmigrate {

void checkScalerUnscale(const CheckInput &In, FindingSink &Out) {
  for (const TrainingStep &T : In.Function.Steps)
    for (const ScalerCall *C : T.Unscales) {
      if (C->HasExplicitGrads)
        continue;
      Finding *F = Out.report(
          "amp-scaler-unscale", C->Call->getBeginLoc(),
          C->ResultUsed
              ? "checked unscale without explicit grads; with explicit gradients it takes them "
                "and answers whether every grad is finite: " +
                    In.Rules.Target.CheckedUnscale + "(optimizer, grads)"
              : "unscale_() without explicit grads; with explicit gradients it takes them: "
                "unscale_(optimizer, grads)");
      markStep(F, In, &T);
    }
}

} // namespace ampmigrate
