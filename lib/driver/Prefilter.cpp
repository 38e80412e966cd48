// Before the driver parses a file: its encoding, and the lexical prefilter over its headers.
#include "DriverInternal.h"
#include "ampmigrate/InputFiles.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <set>

using namespace clang;
namespace ampmigrate {
namespace driver {
namespace {

/// Quoted and angled includes of a file that resolve inside the project (not system dirs).
void collectProjectHeaders(const std::string &File, const std::vector<std::string> &IncludeDirs,
                           std::set<std::string> &Seen, std::vector<std::string> &Out, int Depth) {
  if (Depth > 32 || !Seen.insert(File).second)
    return;
  auto Buf = readSourceFile(File);
  if (!Buf) {
    llvm::consumeError(Buf.takeError()); // not a regular file, or too large: the parser says why
    return;
  }
  Out.push_back(File);
  StringRef Text = (*Buf)->getBuffer();
  llvm::SmallString<256> Dir(llvm::sys::path::parent_path(File));
  while (!Text.empty()) {
    auto [Line, Rest] = Text.split('\n');
    Text = Rest;
    StringRef L = Line.ltrim();
    if (!L.consume_front("#"))
      continue;
    L = L.ltrim();
    if (!L.consume_front("include"))
      continue;
    L = L.ltrim();
    if (L.size() < 2 || (L[0] != '"' && L[0] != '<'))
      continue;
    char Close = L[0] == '"' ? '"' : '>';
    StringRef Name = L.drop_front().split(Close).first;
    std::vector<std::string> Candidates;
    if (Close == '"') {
      llvm::SmallString<256> P(Dir);
      llvm::sys::path::append(P, Name);
      Candidates.push_back(std::string(P));
    }
    for (const std::string &I : IncludeDirs) {
      llvm::SmallString<256> P(I);
      llvm::sys::path::append(P, Name);
      Candidates.push_back(std::string(P));
    }
    for (const std::string &C : Candidates)
      if (llvm::sys::fs::is_regular_file(C)) {
        collectProjectHeaders(C, IncludeDirs, Seen, Out, Depth + 1);
        break;
      }
  }
}

/// Include directories of installed frameworks (libtorch mentions every AMP name itself) are not
/// project code, even when a build passes them with -I rather than -isystem.
bool isFrameworkIncludeDir(StringRef Dir) {
  return Dir.starts_with("/usr/include") || Dir.starts_with("/usr/local/include") ||
         Dir.starts_with("/usr/lib") || Dir.contains("/site-packages/") ||
         Dir.contains("torch/csrc/api/include") || Dir.ends_with("/torch/include") ||
         Dir.contains("/torch/include/");
}

} // namespace

/// The lexical prefilter: does the main file or a project header mention an AMP token?
bool mayHoldFindings(const tooling::CompileCommand &Cmd, const std::string &File,
                     const std::vector<std::string> &Tokens, const std::map<std::string, std::string> &Overlays) {
  if (auto It = Overlays.find(File); It != Overlays.end() && mentionsAnyToken(It->second, Tokens))
    return true;
  std::vector<std::string> IncludeDirs;
  for (size_t I = 0; I < Cmd.CommandLine.size(); ++I) {
    StringRef A = Cmd.CommandLine[I];
    std::string Dir;
    if (A == "-I" && I + 1 < Cmd.CommandLine.size())
      Dir = Cmd.CommandLine[++I];
    else if (A.starts_with("-I"))
      Dir = A.drop_front(2).str();
    else if (A == "-iquote" && I + 1 < Cmd.CommandLine.size())
      Dir = Cmd.CommandLine[++I];
    else
      continue;
    llvm::SmallString<256> Abs(Dir);
    if (!llvm::sys::path::is_absolute(Abs)) {
      Abs = Cmd.Directory;
      llvm::sys::path::append(Abs, Dir);
    }
    if (!isFrameworkIncludeDir(Abs))
      IncludeDirs.push_back(std::string(Abs));
  }
  std::set<std::string> Seen;
  std::vector<std::string> Files;
  collectProjectHeaders(File, IncludeDirs, Seen, Files, 0);
  for (const std::string &F : Files) {
    auto Buf = readSourceFile(F);
    if (!Buf)
      llvm::consumeError(Buf.takeError());
    else if (mentionsAnyToken((*Buf)->getBuffer(), Tokens))
      return true;
  }
  return Files.empty(); // unreadable: let the parser say why
}

} // namespace driver
} // namespace ampmigrate
