// What the engine reports: findings with their notes and fixes, grouped into a report.
#pragma once

#include "clang/Tooling/Core/Replacement.h"
#include <map>
#include <set>
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
  /// True when the tool can rewrite this finding. The edits themselves travel beside the findings
  /// (Report::StepFixes) and are given to one surviving finding of the step, its lead, by
  /// attachFixes() after NOLINT, so that a step is applied whole.
  bool Fixable = false;
  /// Edits that migrate the whole training step this finding belongs to, set by attachFixes() on
  /// the step's lead only. Offsets are into the file as read from disk (or the editor buffer).
  std::vector<clang::tooling::Replacement> Fixes;
  /// Identifies the training step (file:offset of its first element); empty when not in a step.
  std::string StepId;
  /// The template definition the finding lies in (file:offset of the function's body), for a
  /// function template or a member function of a class template; empty otherwise.
  std::string Template;
  /// Found in that definition itself, which the translation unit never instantiates, with its
  /// calls on dependent types unresolved (FunctionAnalysis::UnresolvedCalls). A translation unit
  /// that instantiates the template speaks for it instead (agreeOnFixes).
  bool Uninstantiated = false;
};

/// One file's outcome, as the driver saw it.
struct FileOutcome {
  std::string File;
  enum class State { Scanned, Skipped, Failed } Status = State::Scanned;
  std::string Error; ///< when Failed: "file:line:col: error: ..." lines from the compiler
};

/// The edits that migrate one training step, applied whole or not at all.
struct StepFix {
  std::string StepId;
  std::vector<clang::tooling::Replacement> Edits;
};

/// Gives each step's edits to its lead: the first finding (in file order) of that step that is
/// fixable and survived NOLINT. With `EachEditOnce` an edit several steps share (the include) goes
/// to the first lead only, for consumers that apply each finding's fix on its own (clang-tidy).
void attachFixes(std::vector<Finding> &Findings, const std::vector<StepFix> &Fixes,
                 bool EachEditOnce = false);

struct Report {
  std::vector<Finding> Findings; ///< de-duplicated, sorted by file, offset, check
  /// The verified edits of every fixable step, before they are attached to findings.
  std::vector<StepFix> StepFixes;
  /// The steps of StepFixes whose edits were not verified: a plain lint run deferred their
  /// verification (DriverOptions::DeferVerification). Their findings have a rewrite available,
  /// but are not reported as fixable (docs/performance.md: the modes).
  std::set<std::string> UnverifiedSteps;
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
