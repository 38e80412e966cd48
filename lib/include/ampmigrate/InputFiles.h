// Which files the tool reads and writes: the inputs a command line names (a directory stands for
// the sources under it), one identity per file however it is reached, and the one reader of
// source files (regular files of bounded size only).
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ampmigrate {

/// A source file above this is not one a person wrote (nor one clang's 32-bit offsets would hold).
constexpr uint64_t MaxSourceFileBytes = 256u << 20;

/// One name for one file: its real path (symlinks and `..` resolved) when it exists, else the
/// absolute path with `.` and `..` removed. Relative paths are taken against `Base` when given,
/// else the current directory.
std::string fileIdentity(llvm::StringRef Path, llvm::StringRef Base = "");

/// Whether `Path` is `Dir` or lies under it (both identities, as fileIdentity gives them).
bool isWithinDirectory(llvm::StringRef Path, llvm::StringRef Dir);

/// Reads a source file: a regular file of at most MaxSourceFileBytes, looked at before it is
/// opened (a FIFO would block, /dev/zero never ends). "<path>: error: cannot read the source
/// file: <why>".
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readSourceFile(llvm::StringRef Path);

/// The files of a command line, and where a rewrite may go.
struct InputSet {
  std::vector<std::string> Files;
  /// The identities of the directory arguments, and of the file arguments.
  std::vector<std::string> Roots;
  std::set<std::string> NamedFiles;
  /// Symlinks under a directory argument that lead outside it, not followed ("<path>: note: ...").
  std::vector<std::string> Notes;

  /// Whether `File` may be rewritten: with a directory argument, only a file under one (by its
  /// real path) or a file named on the command line; without one, any file.
  bool mayWrite(llvm::StringRef File) const;
};

/// The inputs as files: a file argument as given; a directory argument as the C++ sources under
/// it (sorted; hidden folders and CMake's own left out), walked without following a symlink to a
/// directory (the directory's own walk reaches what lies inside it; what lies outside is not
/// analysed), a symlinked file taken only when its target lies inside. Each file appears once, by
/// identity. A path that does not exist is an error naming it.
llvm::Expected<InputSet> expandInputs(const std::vector<std::string> &Args);

} // namespace ampmigrate
