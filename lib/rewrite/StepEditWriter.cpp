// The emission of one feasible step: the edit writers in the order feasibility checked their concerns
// (the edits keep the order the planner has always produced them in).
#include "StepEditWriter.h"

namespace ampmigrate {

void EditSink::write(const PlannedEdits &P) {
  for (const Edit &E : P.InFile)
    InFile.push_back(E);
  for (const auto &[At, Text] : P.Joined)
    insertJoined(At, Text);
  for (const clang::tooling::Replacement &R : P.Elsewhere)
    Elsewhere.push_back(R);
}

void StepEditWriter::write() const {
  writeAccumulationSplit();
  Out.write(D.Callee);
  writeRegion();
  writeCalls(D.Calls);
  writeCalls(D.PlainSteps);
  writeMixedBackwards();
  writeClips();
  writeGradAccesses();
  writeZeroGrads();
  Out.write(D.ScalerType);
  if (D.Include)
    Out.replace(D.Include->Offset, D.Include->Length, D.Include->Text);
  Out.write(D.SplitMember);
  writeAccumulatedGradsDecl();
}

} // namespace ampmigrate
