// The result cache (--cache-dir): a translation unit's findings and verified fixes, stored under a
// key of everything that decides them, so that an unchanged TU is answered without parsing it.
#pragma once

#include "ampmigrate/Finding.h"
#include "ampmigrate/Rules.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/IntrusiveRefCntPtr.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ampmigrate {

/// What a parse read from the file system: each path it probed, and for each file it read, a
/// hash of the bytes it got. The cache answers a TU only when every probe answers the same today.
class DependencyLog {
public:
  enum class Kind { Missing, Exists, Content };
  struct Entry {
    Kind K = Kind::Missing;
    std::string Hash; ///< Content: hex BLAKE3 of the bytes the parser read
  };
  void probed(const std::string &Path, bool Exists);
  void read(const std::string &Path, llvm::StringRef Bytes);
  std::map<std::string, Entry> take();
  /// What another parse read on this one's behalf (a shared preamble's build).
  void add(const std::map<std::string, Entry> &From);

private:
  std::mutex M;
  std::map<std::string, Entry> Entries;
};

/// A file system that forwards to the real one and writes every probe and read into a log.
llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> makeRecordingFileSystem(DependencyLog &Log);

/// What the driver keeps of one translation unit once its fixes are verified: the findings (fixes
/// not attached yet), the edits of each step that survived verification, and what each edited
/// file held when parsed (Report::ParsedDigests: --fix writes only over those bytes).
struct CachedTU {
  std::vector<Finding> Findings;
  std::vector<StepFix> Fixes;
  std::map<std::string, std::string> Digests;
  /// The parse skipped header bodies, the TU has fixes, and no parse with every body checked them
  /// (a run that does not fix): a run that fixes (DriverOptions::VerifyBeforeFix) treats the
  /// entry as a miss, parses again and replaces it.
  bool BodiesUnchecked = false;
  /// The fixes were not verified: a plain lint run deferred their verification
  /// (DriverOptions::DeferVerification). Such a run and a verifying run share a key; a verifying
  /// run treats this entry as a miss, verifies and replaces it, so no unverified fix is ever
  /// offered as verified. A deferring run takes either kind.
  bool FixesDeferred = false;
  /// The main file's function summaries and the callees no summary had (CallSummaries.h): a run
  /// answers the second from the first of its other files, as after a parse.
  SummaryIndex Summaries;
  std::map<std::string, UnknownCallee> UnknownCallees;
};

class ResultCache {
public:
  /// `MaxSize` in bytes; 0 means unbounded.
  ResultCache(std::string Dir, uint64_t MaxSize) : Dir(std::move(Dir)), MaxSize(MaxSize) {}

  /// The key of everything but the files a parse reads: the tool (its version, its executable,
  /// the clang library), the rules (the contents of every rule file), the configuration (as text
  /// the caller composes), the compile commands and the editor buffers.
  std::string commandKey(const RuleSet &Rules, llvm::StringRef Configuration,
                         const std::vector<clang::tooling::CompileCommand> &Cmds,
                         const std::map<std::string, std::string> &Overlays) const;

  /// The result stored under `Key` when every file the stored parses probed or read is today as
  /// it was then; nullopt otherwise (a miss).
  std::optional<CachedTU> lookup(llvm::StringRef Key);

  /// Stores a TU's findings and verified step fixes with the dependency log of its parses
  /// (written atomically: a concurrent reader sees the old entry, the new one, or none).
  void store(llvm::StringRef Key, const std::map<std::string, DependencyLog::Entry> &Deps,
             const CachedTU &Result);

  /// Removes the least recently used entries until the cache is within its size bound.
  void trim();

  const std::string &directory() const { return Dir; }

private:
  std::string entryPath(llvm::StringRef Key) const;
  /// Hash of a file's current bytes (memoised for one run); nullopt when it cannot be read.
  std::optional<std::string> currentHash(const std::string &Path);

  std::string Dir;
  uint64_t MaxSize;
  std::mutex M;
  std::map<std::string, std::optional<std::string>> Hashes;
};

/// Parses a size such as "500M", "2G", "4096" (bytes; K, M, G are powers of 1024).
std::optional<uint64_t> parseByteSize(llvm::StringRef Text);

/// Findings and step fixes to and from JSON (the cache's stored value). Fixes attached to a
/// finding are not stored: the driver attaches them after NOLINT, on a hit as on a miss.
llvm::json::Value findingsToJson(const std::vector<Finding> &Findings);
std::optional<std::vector<Finding>> findingsFromJson(const llvm::json::Value &V);
llvm::json::Value stepFixesToJson(const std::vector<StepFix> &Fixes);
std::optional<std::vector<StepFix>> stepFixesFromJson(const llvm::json::Value &V);

} // namespace ampmigrate
