// Where a training step's gradient work happens: from its first backward to its last step().
#pragma once
#include "ampmigrate/TrainingStep.h"
#include "clang/Basic/SourceManager.h"

namespace ampmigrate {
struct StepRange {
  unsigned Begin = ~0u, End = 0;
  bool contains(unsigned O) const { return O >= Begin && O <= End; }
};
inline StepRange gradientRange(const clang::SourceManager &SM, const TrainingStep &T) {
  StepRange R;
  auto Off = [&](clang::SourceLocation L) { return SM.getFileOffset(SM.getExpansionLoc(L)); };
  for (const ImplicitBackward *B : T.Backwards)
    R.Begin = std::min(R.Begin, Off(B->Backward->getBeginLoc()));
  for (const ScalerCall *C : T.Unscales)
    R.Begin = std::min(R.Begin, Off(C->Call->getBeginLoc()));
  for (const ScalerCall *C : T.Steps)
    R.End = std::max(R.End, Off(C->Call->getBeginLoc()));
  return R;
}
inline unsigned offsetOf(const clang::SourceManager &SM, clang::SourceLocation L) {
  return SM.getFileOffset(SM.getExpansionLoc(L));
}
} // namespace ampmigrate
