// Precompiled preambles shared by the command line (lib/driver) and the language server
// (lib/lsp): the compiler invocation of one parse, the body-skipping preamble build, and the
// process-wide store that lets translation units with the same leading includes share one.
#pragma once

#include "ampmigrate/ResultCache.h"
#include "ampmigrate/Rules.h"

#include "clang/Frontend/PrecompiledPreamble.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace clang {
class CompilerInvocation;
class DiagnosticConsumer;
} // namespace clang

namespace ampmigrate {

/// The file system of a parse (`Base`, with `Buffers` over it: the file's text and the editor's
/// overlays) and the compiler invocation a ClangTool run would make; the driver reports to `Diags`.
struct PreparedParse {
  llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> FS;
  std::shared_ptr<clang::CompilerInvocation> Inv;
};
std::optional<PreparedParse> prepareParse(const clang::tooling::CompileCommand &Cmd,
                                          const std::vector<std::string> &Args,
                                          const std::map<std::string, std::string> &Buffers,
                                          llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> Base,
                                          clang::DiagnosticConsumer &Diags);

/// A built preamble and what its build saw of the main file and the headers, which a parse that
/// reuses it would otherwise not see: the inactive `#if` regions of the main file's include block
/// (offsets), and how many header bodies the body-skipping rule skipped.
struct BuiltPreamble {
  clang::PrecompiledPreamble PCH;
  std::vector<std::pair<unsigned, unsigned>> InactiveOffsets;
  unsigned SkippedBodies = 0;
  /// The guard and scaler classes the build's body-skipping rule learned (HeaderBodySkipper):
  /// where the preamble covers only the first lines of the include block, the parse of the rest
  /// starts from them.
  std::vector<std::string> LearnedClasses;
  /// What the build read (a driver run with --cache-dir): each TU that reuses the preamble
  /// depends on it as if it had read it itself.
  std::map<std::string, DependencyLog::Entry> Deps;
};

/// Builds the preamble of `Main` (its first `Bounds.Size` bytes) under `P`: with `SkipBodies`,
/// header bodies are skipped by the driver's rule (HeaderBodySkipper, learning the same classes
/// from the same top-level declarations as a whole parse); `SkipAll` skips every body (the
/// language server's verification); `Instantiate` (no body skipped then) also instantiates the
/// templates the headers use, as `-fpch-instantiate-templates` does, so that a parse reusing the
/// preamble checks the whole translation unit for errors at little more than the main file's
/// cost. None when the build fails or its headers have errors.
std::shared_ptr<const BuiltPreamble> buildPreamble(PreparedParse &P, const llvm::MemoryBuffer &Main,
                                                   const clang::PreambleBounds &Bounds, const RuleSet &Rules,
                                                   bool SkipBodies, bool SkipAll, bool Instantiate = false);

/// Runs `Action` on `Inv` over `VFS` (already configured: a preamble added, or the main file
/// remapped); reports to `Diags`. Returns false when the action did not run to its end.
bool runPreparedParse(std::shared_ptr<clang::CompilerInvocation> Inv,
                      llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> VFS,
                      clang::tooling::FrontendActionFactory &Action, clang::DiagnosticConsumer &Diags);

/// Preambles of this process by key (the command without its file name, the directory, the
/// include block's text, the settings): the translation units of one database that start with
/// the same includes under the same flags parse those includes once, across -j workers. A key
/// being built is waited for, not built twice.
class PreambleStore {
public:
  static PreambleStore &process();
  std::shared_ptr<const BuiltPreamble> get(const std::vector<std::string> &Key,
                                           const std::function<std::shared_ptr<const BuiltPreamble>()> &Build);

private:
  struct Slot {
    bool Ready = false;
    std::shared_ptr<const BuiltPreamble> Value;
    unsigned long Used = 0; ///< the store's clock when last asked for
  };
  /// The most preambles kept (each a few dozen MB for <torch/torch.h>); the least recently used
  /// goes first (parses still using it keep it alive).
  static constexpr size_t MaxKept = 4;
  unsigned long Clock = 0;
  std::mutex M;
  std::condition_variable Done;
  std::map<std::vector<std::string>, std::shared_ptr<Slot>> Slots;
};

} // namespace ampmigrate
