// amp-clip-before-unscale: clipping still-scaled gradients, an existing bug.
#include "StepRange.h"
#include "ampmigrate/Engine.h"

using namespace clang;
namespace ampmigrate {

void checkClipBeforeUnscale(const CheckInput &In, FindingSink &Out) {
  const SourceManager &SM = In.Ctx.getSourceManager();
  for (const TrainingStep &T : In.Function.Steps) {
    if (T.Backwards.empty() || T.Steps.empty())
      continue;
    StepRange R = gradientRange(SM, T);
    for (const ClipCall *C : T.Clips) {
      unsigned O = offsetOf(SM, C->Call->getBeginLoc());
      if (!R.contains(O))
        continue;
      bool Unscaled = llvm::any_of(T.Unscales, [&](const ScalerCall *U) {
        return offsetOf(SM, U->Call->getBeginLoc()) < O;
      });
      if (Unscaled)
        continue;
      Finding *F = Out.report("amp-clip-before-unscale", C->Call->getBeginLoc(),
                              "clipping still-scaled gradients: no unscale_() before this clip, so "
                              "max_norm is compared with the scaled norm (call unscale_ first)");
      if (F && !T.Unscales.empty())
        Out.note(F, T.Unscales.front()->Call->getBeginLoc(), "gradients are unscaled only here");
    }
  }
}

} // namespace ampmigrate
