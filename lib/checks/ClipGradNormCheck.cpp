// amp-clip-grad-norm: clipping the parameters' .grad inside a scaled step.
#include "ampmigrate/Engine.h"
#include "clang/Basic/SourceManager.h"

using namespace clang;
namespace ampmigrate {

/// The explicit-grad clip as the fix writes it.
static std::string clipForm(const TargetApi &T, const ClipFunctionRule &R) {
  if (R.byValue())
    return T.ClipValueInPlace.empty() ? "clamp each of the grads"
                                      : T.ClipValueInPlace + "(grads, clip_value)";
  return T.ClipInPlace.empty() ? "grads = " + T.Clip + "(grads, max_norm)"
                               : T.ClipInPlace + "(grads, max_norm)";
}

void checkClipGradNorm(const CheckInput &In, FindingSink &Out) {
  const SourceManager &SM = In.Ctx.getSourceManager();
  for (const TrainingStep &T : In.Function.Steps)
    for (const ClipCall *C : T.Clips) {
      unsigned O = SM.getFileOffset(SM.getExpansionLoc(C->Call->getBeginLoc()));
      std::string Where = T.Unscaled          ? "in a step whose loss was computed under autocast"
                          : T.Plain.contains(O) ? "on the plain path (no scaler) of a mixed step"
                                                : "inside a scaled step";
      Finding *F = Out.report("amp-clip-grad-norm", C->Call->getBeginLoc(),
                              "clipping the parameters' .grad " + Where + "; clip the "
                              "explicit grads instead: " + clipForm(In.Rules.Target, *C->Rule));
      markStep(F, In, &T);
    }
}

} // namespace ampmigrate
