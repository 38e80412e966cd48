// The compilation database and the resolution of one file's entries, before any parse: no clang
// AST here, so the sanitizer build fuzzes it (test/fuzz/fuzz_compile_db.cpp).
#include "ampmigrate/CompileDatabase.h"
#include "ampmigrate/InputFiles.h"

#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/Support/VirtualFileSystem.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

namespace ampmigrate {

namespace {

/// The mark put in place of a response file (`@file`) that must not be read: a FIFO or a device
/// (read until memory runs out, or forever), or one over ResponseFileLimit bytes. inputProblem
/// reports a command holding it.
constexpr llvm::StringLiteral UnreadResponseFile = "-amp-migrate-unread-response-file=";
constexpr uint64_t ResponseFileLimit = 16u << 20;

/// Clang's JSON database expands every `@file` argument by reading the file whole; this one hands
/// it only regular files of a sane size (then clang's expansion runs on top of it).
class ResponseFileGuard : public clang::tooling::CompilationDatabase {
public:
  explicit ResponseFileGuard(std::unique_ptr<clang::tooling::CompilationDatabase> Inner) : Inner(std::move(Inner)) {}
  std::vector<clang::tooling::CompileCommand> getCompileCommands(llvm::StringRef File) const override {
    return guard(Inner->getCompileCommands(File));
  }
  std::vector<std::string> getAllFiles() const override { return Inner->getAllFiles(); }
  std::vector<clang::tooling::CompileCommand> getAllCompileCommands() const override {
    return guard(Inner->getAllCompileCommands());
  }

private:
  std::unique_ptr<clang::tooling::CompilationDatabase> Inner;

  static std::vector<clang::tooling::CompileCommand> guard(std::vector<clang::tooling::CompileCommand> Cmds) {
    for (clang::tooling::CompileCommand &C : Cmds)
      for (std::string &A : C.CommandLine) {
        if (A.size() < 2 || A.front() != '@')
          continue;
        llvm::SmallString<256> P(llvm::StringRef(A).drop_front());
        if (!llvm::sys::path::is_absolute(P))
          llvm::sys::fs::make_absolute(C.Directory, P);
        llvm::sys::fs::file_status St;
        if (llvm::sys::fs::status(P, St))
          continue; // missing: left as it is, as clang does
        if (St.type() != llvm::sys::fs::file_type::regular_file || St.getSize() > ResponseFileLimit)
          A = (UnreadResponseFile + llvm::StringRef(A).drop_front()).str();
      }
    return Cmds;
  }
};

} // namespace

std::unique_ptr<clang::tooling::CompilationDatabase>
makeCompilationDatabase(const std::string &BuildPath, const std::vector<std::string> &ExtraArgs,
                        const std::vector<std::string> &Files, std::string &Error) {
  namespace tooling = clang::tooling;
  if (!BuildPath.empty()) {
    // Clang's loaders open what they find without looking: a FIFO named compile_commands.json
    // would block the run, a link to /dev/zero would be read until memory ran out.
    for (const char *Name : {"compile_commands.json", "compile_flags.txt"}) {
      llvm::SmallString<256> P(BuildPath);
      llvm::sys::path::append(P, Name);
      llvm::sys::fs::file_status St;
      if (llvm::sys::fs::status(P, St) || St.type() == llvm::sys::fs::file_type::regular_file)
        continue; // absent (the next loader is tried), or a file to read
      Error = BuildPath + ": error: " + Name + " is not a regular file (a directory, FIFO or device); not read";
      return nullptr;
    }
    llvm::SmallString<256> Json(BuildPath);
    llvm::sys::path::append(Json, "compile_commands.json");
    if (llvm::sys::fs::is_regular_file(Json)) {
      // Loaded without clang's expansion of response files, which runs on the guarded commands.
      std::unique_ptr<tooling::CompilationDatabase> Raw = tooling::JSONCompilationDatabase::loadFromFile(
          Json, Error, tooling::JSONCommandLineSyntax::AutoDetect);
      if (!Raw) {
        Error = BuildPath + ": error: no compilation database (compile_commands.json): " + Error;
        return nullptr;
      }
      // (As clang's JSON loader composes them: headers' commands interpolated, targets inferred.)
      return tooling::inferTargetAndDriverMode(tooling::inferMissingCompileCommands(tooling::expandResponseFiles(
          std::make_unique<ResponseFileGuard>(std::move(Raw)), llvm::vfs::getRealFileSystem())));
    }
    auto DB = tooling::CompilationDatabase::autoDetectFromDirectory(BuildPath, Error);
    if (!DB)
      Error = BuildPath + ": error: no compilation database (compile_commands.json): " + Error;
    return DB;
  }
  if (!ExtraArgs.empty() || Files.empty())
    return std::make_unique<tooling::FixedCompilationDatabase>(".", ExtraArgs);
  std::string Ignored;
  if (auto DB = tooling::CompilationDatabase::autoDetectFromSource(Files.front(), Ignored))
    return DB;
  llvm::errs() << "amp-migrate: warning: no compile_commands.json found for " << Files.front()
               << " and no '--' arguments; parsing with -std=c++17 only\n";
  return std::make_unique<tooling::FixedCompilationDatabase>(".", std::vector<std::string>{"-std=c++17"});
}

namespace driver {

std::string absolutePath(llvm::StringRef P) {
  llvm::SmallString<256> S(P);
  llvm::sys::fs::make_absolute(S);
  llvm::sys::path::remove_dots(S, /*remove_dot_dot=*/true);
  return std::string(S);
}

/// UTF-16 and UTF-32 text reaches the lexer as NUL-interleaved bytes that mention no AMP name, so
/// the file would pass silently: name the encoding instead. (Clang reads UTF-8 only.)
std::optional<llvm::StringRef> encodingProblem(llvm::StringRef Text) {
  using llvm::StringRef;
  if (Text.starts_with(StringRef("\xFF\xFE\0\0", 4)) || Text.starts_with(StringRef("\0\0\xFE\xFF", 4)))
    return StringRef("UTF-32");
  if (Text.starts_with("\xFF\xFE") || Text.starts_with("\xFE\xFF"))
    return StringRef("UTF-16");
  // No byte order mark: ASCII text in UTF-16 has a NUL in every other byte.
  StringRef Head = Text.take_front(512);
  if (Head.size() >= 8) {
    unsigned Even = 0, Odd = 0;
    for (size_t I = 0; I < Head.size(); ++I)
      if (Head[I] == '\0')
        ++(I % 2 ? Odd : Even);
    if (std::max(Even, Odd) * 8 >= Head.size() * 3 && std::min(Even, Odd) == 0)
      return StringRef("UTF-16");
  }
  return std::nullopt;
}

namespace {

/// Why a file is not parsed at all, or "": what clang's tooling would misread (a '\\' in the
/// name), what could not be named in a report (a name that is not UTF-8), what would abort the
/// process (an entry whose directory does not exist: ClangTool's fatal "Cannot chdir"), and what
/// is not a source file (readSourceFile) or not in UTF-8.
std::string inputProblem(const std::string &File, const std::vector<clang::tooling::CompileCommand> &Cmds,
                         const std::map<std::string, std::string> &Overlays) {
  if (Cmds.empty())
    return File + ": error: no compile command for this file in the compilation database";
  // ClangTool makes paths "native", which on POSIX turns '\' into '/': it would parse, and --fix
  // would write, another file.
  if (llvm::StringRef(File).contains('\\'))
    return File + ": error: a file name containing '\\' is not supported (clang's tooling reads it "
                  "as '/', another file)";
  // JSON, SARIF and the exported fixes hold Unicode text: the name would become U+FFFD there, a
  // file that does not exist.
  if (!llvm::json::isUTF8(File))
    return File + ": error: the file name is not valid UTF-8, which reports and exported fixes cannot "
           "name; rename the file";
  for (const clang::tooling::CompileCommand &C : Cmds)
    for (const std::string &A : C.CommandLine)
      if (llvm::StringRef(A).starts_with(UnreadResponseFile))
        return File + ": error: its compile command names the response file '@" +
               A.substr(UnreadResponseFile.size()) + "', which is not a regular file (a FIFO, a "
               "device or a directory) or is larger than 16 MiB; it is not read, and the file is not analysed";
  for (const clang::tooling::CompileCommand &C : Cmds)
    if (!llvm::sys::fs::is_directory(C.Directory))
      return File + ": error: its compilation database entry names the directory \"" + C.Directory +
             "\", which does not exist or is not a directory";
  std::unique_ptr<llvm::MemoryBuffer> Disk;
  llvm::StringRef Text;
  if (auto It = Overlays.find(File); It != Overlays.end()) {
    Text = It->second;
  } else {
    llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> Buf = readSourceFile(File);
    if (!Buf)
      return llvm::toString(Buf.takeError());
    Disk = std::move(*Buf);
    Text = Disk->getBuffer();
  }
  if (std::optional<llvm::StringRef> Enc = encodingProblem(Text))
    return File + ": error: the file is " + Enc->str() + " encoded; amp-migrate reads UTF-8 (or ASCII) sources only";
  return "";
}

/// One compile command as a database, so that a parse runs under that configuration alone
/// (ClangTool runs every command the database has for a file).
class OneCommandDatabase : public clang::tooling::CompilationDatabase {
public:
  explicit OneCommandDatabase(clang::tooling::CompileCommand Cmd) : Cmd(std::move(Cmd)) {}
  std::vector<clang::tooling::CompileCommand> getCompileCommands(llvm::StringRef) const override { return {Cmd}; }
  std::vector<std::string> getAllFiles() const override { return {Cmd.Filename}; }
  std::vector<clang::tooling::CompileCommand> getAllCompileCommands() const override { return {Cmd}; }

private:
  clang::tooling::CompileCommand Cmd;
};

} // namespace

FileCommands resolveFileCommands(const clang::tooling::CompilationDatabase &DB, llvm::StringRef RawFile,
                                 const std::map<std::string, std::string> &Overlays) {
  FileCommands Out;
  Out.File = absolutePath(RawFile);
  Out.Commands = DB.getCompileCommands(Out.File);
  if (Out.Commands.empty())
    Out.Commands = DB.getCompileCommands(RawFile);
  Out.Problem = inputProblem(Out.File, Out.Commands, Overlays);
  return Out;
}

std::unique_ptr<clang::tooling::CompilationDatabase> databaseOf(const clang::tooling::CompileCommand &Cmd) {
  return std::make_unique<OneCommandDatabase>(Cmd);
}

std::vector<std::string> configurationLabels(const std::vector<clang::tooling::CompileCommand> &Cmds) {
  std::vector<std::string> Labels;
  for (size_t I = 0; I < Cmds.size(); ++I) {
    // The arguments that tell this command from the others: its own, else those it lacks.
    std::vector<std::string> Own, Lacks;
    for (size_t J = 0; J < Cmds.size(); ++J) {
      if (J == I)
        continue;
      for (const std::string &A : Cmds[I].CommandLine)
        if (!llvm::is_contained(Cmds[J].CommandLine, A) && !llvm::is_contained(Own, A))
          Own.push_back(A);
      for (const std::string &A : Cmds[J].CommandLine)
        if (!llvm::is_contained(Cmds[I].CommandLine, A) && !llvm::is_contained(Lacks, A))
          Lacks.push_back(A);
    }
    std::string L = "the compile command #" + std::to_string(I + 1);
    if (!Own.empty())
      L += " with '" + llvm::join(Own, " ") + "'";
    else if (!Lacks.empty())
      L += " without '" + llvm::join(Lacks, " ") + "'";
    if (Cmds[I].Directory != Cmds.front().Directory || (Own.empty() && Lacks.empty()))
      L += " (in " + Cmds[I].Directory + ")";
    Labels.push_back(std::move(L));
  }
  return Labels;
}

} // namespace driver
} // namespace ampmigrate
