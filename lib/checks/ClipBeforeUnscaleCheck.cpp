// amp-clip-before-unscale: clipping still-scaled gradients, an existing bug.
#include "ampmigrate/Engine.h"
#include "clang/Basic/SourceManager.h"

using namespace clang;
namespace ampmigrate {

void checkClipBeforeUnscale(const CheckInput &In, FindingSink &Out) {
  const SourceManager &SM = In.Ctx.getSourceManager();
  for (const TrainingStep &T : In.Function.Steps) {
    if (T.Backwards.empty() || T.Steps.empty() || T.Unscaled) // no scaler: nothing is scaled
      continue;
    for (const ClipCall *C : T.Clips) {
      // Clipping an optimizer's parameters needs that optimizer's unscale_(); a model's, any.
      ObjectRef Of = T.stepsOptimizer(C->ParamsOwner) ? C->ParamsOwner : ObjectRef();
      unsigned O = SM.getFileOffset(SM.getExpansionLoc(C->Call->getBeginLoc()));
      if (T.unscaledBefore(O, Of, SM) || T.Plain.contains(O)) // the plain path scales nothing
        continue;
      Finding *F = Out.report("amp-clip-before-unscale", C->Call->getBeginLoc(),
                              C->Rule->byValue()
                                  ? "clipping still-scaled gradients: no unscale_() before this "
                                    "clip, so the clip value is compared with scaled values (call "
                                    "unscale_ first)"
                                  : "clipping still-scaled gradients: no unscale_() before this "
                                    "clip, so max_norm is compared with the scaled norm (call "
                                    "unscale_ first)");
      if (F && !T.Unscales.empty())
        Out.note(F, T.Unscales.front()->Call->getBeginLoc(), "gradients are unscaled only here");
    }
  }
}

} // namespace ampmigrate
