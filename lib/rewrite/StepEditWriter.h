// The edit writers of one training step: small functions, one per concern, that read the descriptor
// feasibility filled and write edits into an EditSink. Neither has any way to add a blocker, so
// no edit writer can re-decide whether the step is rewritten (docs/architecture.md, "planning").
#pragma once

#include "StepDescriptor.h"
#include "ampmigrate/Rules.h"
#include <map>

namespace ampmigrate {

/// Where the edit writers write: edits of the step's file (in order), insertions joined with the
/// others at their offset, and edits of other files. It can only add edits.
class EditSink {
public:
  EditSink(std::vector<Edit> &InFile, std::map<unsigned, std::string> &Joined,
           std::vector<clang::tooling::Replacement> &Elsewhere)
      : InFile(InFile), Joined(Joined), Elsewhere(Elsewhere) {}

  void replace(unsigned Offset, unsigned Length, std::string Text) {
    InFile.push_back({Offset, Length, std::move(Text)});
  }
  void insert(unsigned Offset, std::string Text) { replace(Offset, 0, std::move(Text)); }
  void remove(unsigned Begin, unsigned End) { replace(Begin, End - Begin, ""); }
  /// Several insertions at one offset join, in the order they are made.
  void insertJoined(unsigned Offset, const std::string &Text) { Joined[Offset] += Text; }
  /// Edits feasibility computed, as they are.
  void write(const PlannedEdits &P);

private:
  std::vector<Edit> &InFile;
  std::map<unsigned, std::string> &Joined;
  std::vector<clang::tooling::Replacement> &Elsewhere;
};

/// Writes out the descriptor of a feasible step: the concerns in the order the feasibility stage
/// checked them. A concern the step does not have holds nothing and writes nothing.
class StepEditWriter {
public:
  StepEditWriter(const StepDescriptor &D, const TargetApi &Tgt, EditSink &Out) : D(D), Tgt(Tgt), Out(Out) {}

  void write() const;

private:
  const StepDescriptor &D;
  const TargetApi &Tgt;
  EditSink &Out;

  void writeAccumulationSplit() const;
  void writeRegion() const;
  void writeCalls(const std::vector<CallEdit> &Calls) const;
  void writeMixedBackwards() const;
  void writeClips() const;
  void writeGradAccesses() const;
  void writeZeroGrads() const;
  void writeAccumulatedGradsDecl() const;
};

} // namespace ampmigrate
