// What the engine reports: findings with their notes and fixes, grouped into a report.
#pragma once

#include "clang/Tooling/Core/Replacement.h"
#include <map>
#include <string>
#include <vector>

namespace ampmigrate {

enum class Severity { Warning, Error };

/// A position in a file: 1-based line and column (column counts bytes, like clang), and the
/// 0-based byte offset.
struct SourcePos {
  std::string File;
  unsigned Line = 0;
  unsigned Column = 0;
  unsigned Offset = 0;
};

struct Note {
  SourcePos Pos;
  std::string Message;
};

struct Finding {
  std::string Check; ///< stable id, e.g. "amp-autocast-scope"
  SourcePos Pos;
  Severity Level = Severity::Warning;
  std::string Message;
  std::vector<Note> Notes;
  /// True when the tool can rewrite this finding. The edits themselves travel on one finding of
  /// the training step (the step's lead finding, see `Fixes`), so that a step is applied whole.
  bool Fixable = false;
  /// Edits that migrate the whole training step this finding belongs to. Empty on every finding
  /// of the step but its lead. Offsets are into the file as read from disk (or the editor buffer).
  std::vector<clang::tooling::Replacement> Fixes;
  /// Identifies the training step (file:offset of its first element); empty when not in a step.
  std::string StepId;
};

/// One file's outcome, as the driver saw it.
struct FileOutcome {
  std::string File;
  enum class State { Scanned, Skipped, Failed } Status = State::Scanned;
  std::string Error; ///< when Failed: "file:line:col: error: ..." lines from the compiler
};

struct Report {
  std::vector<Finding> Findings; ///< de-duplicated, sorted by file, offset, check
  std::vector<FileOutcome> Files;
  std::string BuildDirectory;
  /// For every file the fixes edit: a digest (digestOf) of the bytes the parser read, which the
  /// fixes' offsets index. "" when two translation units read different bytes of one file.
  /// --fix writes a file only while it still holds exactly these bytes.
  std::map<std::string, std::string> ParsedDigests;
};

/// Contents of the files a report refers to, as the findings saw them (disk or editor buffers).
class SourceTexts {
public:
  virtual ~SourceTexts() = default;
  /// The text of `File`, or nullptr when it cannot be read.
  virtual const std::string *get(const std::string &File) = 0;
};

} // namespace ampmigrate
