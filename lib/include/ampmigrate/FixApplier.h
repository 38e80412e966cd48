// Turns the fixes of a report into per-file edits and applies them safely: all-or-nothing per
// training step, conflicts refused, identical edits from several TUs merged once, atomic writes
// that keep permissions, line endings and a UTF-8 BOM.
#pragma once

#include "ampmigrate/Finding.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/ADT/STLFunctionalExtras.h"
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

/// Why a file that access(W_OK) refused cannot be written, from its errno: a read-only file
/// system (EROFS), this user's permissions (EACCES, EPERM), or the system's message.
std::string writeAccessProblem(int Errno);

/// Writes `Contents` to `Path` through a temporary file in the same directory and a rename,
/// keeping the original file's permissions and owner, writing through a symlink. An existing file
/// that is read-only, not writable by this user, or hard-linked is refused ("...; not rewritten").
/// The temporary is removed on failure and on a fatal signal.
llvm::Error writeFileAtomically(llvm::StringRef Path, llvm::StringRef Contents);

/// A digest (SHA-256, raw bytes) of a file's text, as Report::ParsedDigests holds it.
std::string digestOf(llvm::StringRef Text);

/// Replaces `Path` with `Rewrite(current contents)`, holding an advisory lock (flock) on it from
/// the read to the rename, and only if the current contents still have `ParsedDigest`: the edits
/// are offsets into the bytes that were parsed, and spliced into other bytes they corrupt code.
/// Returns whether the file was written (false: the rewrite changed nothing).
llvm::Expected<bool>
rewriteFileIfUnchanged(llvm::StringRef Path, llvm::StringRef ParsedDigest,
                       llvm::function_ref<llvm::Expected<std::string>(llvm::StringRef)> Rewrite);

/// What an exported fixes file (--export-fixes, --merge-fixes) records of each file its edits
/// apply to: the SHA-256 of the bytes they were computed from, as YAML comment lines before the
/// document ("# amp-migrate-parsed: sha256=<hex> <path>", or "different" in place of the digest
/// when two translation units read different bytes), which clang-apply-replacements skips.
/// `Digests` maps a path to a raw digest (digestOf) or "".
std::string fixFileDigestLines(const std::map<std::string, std::string> &Digests);

/// The digests an exported fixes file records, by path as written: hex, or "different".
std::map<std::string, std::string> readFixFileDigests(llvm::StringRef Text);

/// Whether a text's lines end in "\r\n" (by majority; a tie goes to the first line ending).
bool usesCrlf(llvm::StringRef Text);

/// A replacement as it must be applied to `FileText`: inserted "\n" become "\r\n" in a CRLF
/// file, and an edit at the very start of a file with a UTF-8 BOM goes after the BOM.
clang::tooling::Replacement adaptToFile(const clang::tooling::Replacement &R, llvm::StringRef FileText);

/// A unified diff (3 lines of context) from `Old` to `New`, headers "--- a/<Path>" / "+++ b/<Path>".
/// Empty when the texts are equal.
std::string unifiedDiff(llvm::StringRef Path, llvm::StringRef Old, llvm::StringRef New);

} // namespace ampmigrate
