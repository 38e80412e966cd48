// amp-scaler-implicit-grad: scale(loss).backward(), also split over two statements.
#include "ampmigrate/Engine.h"

using namespace clang;
namespace ampmigrate {

void checkScalerImplicitGrad(const CheckInput &In, FindingSink &Out) {
  for (const TrainingStep &T : In.Function.Steps)
    for (const ImplicitBackward *B : T.Backwards) {
      if (T.Unscaled)
        continue; // a plain loss.backward(): reported with its scope (amp-autocast-scope)
      Finding *F = Out.report("amp-scaler-implicit-grad", B->Backward->getBeginLoc(),
                              "backward() of a scaled loss puts the gradients in .grad implicitly; "
                              "use " + In.Rules.Target.ValueAndGrad +
                                  " to get the loss and the grads explicitly");
      markStep(F, In, &T);
      if (F && B->ScaleStmt)
        Out.note(F, B->Scale->Call->getBeginLoc(), "the loss is scaled here");
    }
}

} // namespace ampmigrate
