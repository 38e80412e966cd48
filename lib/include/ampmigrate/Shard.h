// Sharding (--shard=K/N) and merging the shards' outputs (--merge-fixes, --merge-sarif): one
// large codebase analysed by N parallel CI jobs, their results combined into one consistent set.
#pragma once

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <string>
#include <vector>

namespace ampmigrate {

/// Parses "K/N" (1 <= K <= N): the K-th of N shards.
llvm::Error parseShard(llvm::StringRef Text, unsigned &K, unsigned &N);

/// The files of shard K of N. Every file is in exactly one shard, whatever order the files come
/// in: files are taken largest first (ties by path) and each goes to the shard with the fewest
/// bytes so far (ties to the lowest index). A file that cannot be read counts as empty.
std::vector<std::string> selectShard(const std::vector<std::string> &Files, unsigned K, unsigned N);

/// What a merge did, for its report.
struct MergeOutcome {
  unsigned Inputs = 0, Diagnostics = 0, Edits = 0, DuplicateDiagnostics = 0, DuplicateEdits = 0;
  /// One line per refused fix: "file:offset: conflict: ...".
  std::vector<std::string> Conflicts;
};

/// Merges --export-fixes YAML files into one that clang-apply-replacements applies: a file
/// reached through a symlink or a relative path is one file; an edit several shards propose is
/// kept once; fixes whose edits overlap different edits are refused (both sides) and reported, and
/// so are the fixes of a file the inputs were computed from different contents of, or that exists
/// here with other contents (each input records a digest per edited file; the output too).
llvm::Expected<MergeOutcome> mergeExportedFixes(const std::vector<std::string> &Inputs, llvm::raw_ostream &OS);

/// What --apply-fixes did: the files it rewrote, and one line per file it left alone.
struct ApplyOutcome {
  unsigned Changed = 0;
  std::vector<std::string> Errors;
};

/// Applies exported fixes files (--export-fixes, --merge-fixes) in place, as --fix writes: each
/// file only while it holds the bytes the fixes record they were computed from (a file they
/// record no digest of is refused), under its lock, atomically.
ApplyOutcome applyExportedFixes(const std::vector<std::string> &Inputs);

/// Merges SARIF logs into one log with one run: the results of every input, each once.
llvm::Expected<unsigned> mergeSarif(const std::vector<std::string> &Inputs, llvm::raw_ostream &OS);

} // namespace ampmigrate
