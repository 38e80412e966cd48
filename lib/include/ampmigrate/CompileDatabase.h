// The compilation database: where a run's compile commands come from, and how one file's entries
// are resolved before anything is parsed (the AST-free part of the driver; fuzz-compile_db).
#pragma once

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringRef.h"
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ampmigrate {

/// Compile commands: `-p` directory, or the arguments after `--`, or compile_commands.json
/// found upward from the first file, or none (a warning, and plain `-std=c++17`).
std::unique_ptr<clang::tooling::CompilationDatabase>
makeCompilationDatabase(const std::string &BuildPath, const std::vector<std::string> &ExtraArgs,
                        const std::vector<std::string> &Files, std::string &Error);

namespace driver {

/// `P` absolute, with `.` and `..` removed (symlinks kept: the name the user knows).
std::string absolutePath(llvm::StringRef P);

/// The encoding of a main file's text when it is one clang cannot read (UTF-16, UTF-32).
std::optional<llvm::StringRef> encodingProblem(llvm::StringRef Text);

/// One file as the driver is about to analyse it: its absolute name, its compile commands (every
/// entry the database has for it), and why it must not be parsed at all, or "".
struct FileCommands {
  std::string File;
  std::vector<clang::tooling::CompileCommand> Commands;
  std::string Problem; ///< "FILE: error: ..." naming the entry's fault, or ""
};

/// Looks `RawFile` up in `DB` (by its absolute name, then as given) and checks what would make a
/// parse misread it or end the process: no entry, a '\\' or non-UTF-8 byte in the name, an entry
/// whose "directory" does not exist (clang's tooling would abort on "Cannot chdir"), a file that
/// is not a bounded regular file (readSourceFile) or not UTF-8 text. `Overlays` are the editor's
/// unsaved texts, read instead of the disk. Never changes the working directory.
FileCommands resolveFileCommands(const clang::tooling::CompilationDatabase &DB, llvm::StringRef RawFile,
                                 const std::map<std::string, std::string> &Overlays);

/// A database of one compile command: a parse under that configuration alone.
std::unique_ptr<clang::tooling::CompilationDatabase> databaseOf(const clang::tooling::CompileCommand &Cmd);

/// How messages name each of a file's compile commands: by the arguments that tell it from the
/// others ("the compile command #2 with '-DUSE_GRAD'").
std::vector<std::string> configurationLabels(const std::vector<clang::tooling::CompileCommand> &Cmds);

} // namespace driver
} // namespace ampmigrate
