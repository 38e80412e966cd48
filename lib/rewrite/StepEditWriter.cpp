// The emission of one feasible step: the emitters in the order feasibility checked their concerns
// (the edits keep the order the planner has always produced them in).
#include "StepEmitter.h"

namespace ampmigrate {

void EditSink::write(const PlannedEdits &P) {
  for (const Edit &E : P.InFile)
    InFile.push_back(E);
  for (const auto &[At, Text] : P.Joined)
    insertJoined(At, Text);
  for (const clang::tooling::Replacement &R : P.Elsewhere)
    Elsewhere.push_back(R);
}

void StepEmitter::emit() const {
  emitAccumulationSplit();
  Out.write(D.Callee);
  emitRegion();
  emitCalls(D.Calls);
  emitCalls(D.PlainSteps);
  emitMixedBackwards();
  emitClips();
  emitGradAccesses();
  emitZeroGrads();
  Out.write(D.ScalerType);
  if (D.Include)
    Out.replace(D.Include->Offset, D.Include->Length, D.Include->Text);
  Out.write(D.SplitMember);
  emitAccumulatedGradsDecl();
}

} // namespace ampmigrate
