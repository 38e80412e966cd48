// Turns the fixes of a report into per-file edits and applies them safely: all-or-nothing per
// training step, conflicts refused, identical edits from several TUs merged once, atomic writes
// that keep permissions, line endings and a UTF-8 BOM.
#pragma once

#include "ampmigrate/Finding.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/Error.h"
#include <map>
#include <string>
#include <vector>

namespace ampmigrate {

struct EditSet {
  std::map<std::string, clang::tooling::Replacements> ByFile;
  /// One line per refused step: "file:line:col: conflicting edits: <reason>; step not migrated".
  std::vector<std::string> Refused;
};

/// Collects the Fixes of every finding. The fixes of one finding are a unit: if any of them
/// overlaps an edit already accepted (and is not identical to it), the whole unit is refused.
EditSet collectEdits(const Report &R, SourceTexts &Texts);

/// Applies `Reps` to `Original`. Inserted text uses "\n"; in a file whose lines end in "\r\n" it
/// is converted so the file stays CRLF. Fails (file named in the message) if an edit is out of range.
llvm::Expected<std::string> applyEdits(llvm::StringRef File, llvm::StringRef Original,
                                       const clang::tooling::Replacements &Reps);

/// Writes `Contents` to `Path` through a temporary file in the same directory and a rename,
/// keeping the original file's permissions.
llvm::Error writeFileAtomically(llvm::StringRef Path, llvm::StringRef Contents);

/// A unified diff (3 lines of context) from `Old` to `New`, headers "--- a/<Path>" / "+++ b/<Path>".
/// Empty when the texts are equal.
std::string unifiedDiff(llvm::StringRef Path, llvm::StringRef Old, llvm::StringRef New);

} // namespace ampmigrate
