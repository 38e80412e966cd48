// amp-zero-grad: zero_grad() of a step's optimizer or model: redundant with explicit grads, or,
// in a gradient accumulation, the clearing of the summed grads.
#include "ampmigrate/Engine.h"

using namespace clang;
namespace ampmigrate {

void checkZeroGrad(const CheckInput &In, FindingSink &Out) {
  for (const TrainingStep &T : In.Function.Steps)
    for (const ZeroGradCall *Z : T.ZeroGrads) {
      const MigrationPlan *P = In.planOf(&T);
      const std::string &VG = In.Rules.Target.ValueAndGrad;
      const bool Accumulates = P && P->Accumulates;
      std::string Message;
      if (P && !P->Blockers.empty())
        // The step stays as it is until it is migrated by hand: its backward still fills .grad,
        // so the call is needed now; "redundant" would invite deleting it.
        Message = Accumulates
                      ? "zero_grad() ends a gradient accumulation; keep it while this step is "
                        "migrated by hand (see amp-manual-migration): with explicit gradients "
                        "from " + VG + " it becomes grads.clear()"
                      : "zero_grad() clears the .grad that this step's backward fills; keep it "
                        "while the step is migrated by hand (see amp-manual-migration): with "
                        "explicit gradients from " + VG + " it is redundant";
      else
        Message = Accumulates
                      ? "zero_grad() ends a gradient accumulation: with explicit gradients it "
                        "clears the summed grads list instead (grads.clear())"
                      : "zero_grad() is redundant: explicit gradients from " + VG +
                            " never accumulate in .grad";
      Finding *F = Out.report("amp-zero-grad", Z->Call->getBeginLoc(), Message);
      markStep(F, In, &T);
    }
}

} // namespace ampmigrate
