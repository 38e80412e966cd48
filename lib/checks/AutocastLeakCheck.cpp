// amp-autocast-leak: autocast enabled and left on (no disable, or a return before it).
#include "ampmigrate/Engine.h"

using namespace clang;
namespace ampmigrate {

void checkAutocastLeak(const CheckInput &In, FindingSink &Out) {
  for (const AutocastScope &S : In.Function.Scopes) {
    if (S.LeaksAt.isInvalid() || S.DisablesAutocast)
      continue;
    Finding *F = Out.report("amp-autocast-leak", S.ReportLoc, S.LeakReason);
    if (F && S.Disable)
      Out.note(F, S.LeaksAt, S.LeakNote);
  }
}

} // namespace ampmigrate
