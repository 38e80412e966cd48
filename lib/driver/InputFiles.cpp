// Which files the tool reads and writes: directory arguments walked without leaving them, one
// identity per file, and the one reader of source files.
#include "ampmigrate/InputFiles.h"
#include "ampmigrate/InputLimits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace fs = llvm::sys::fs;
using llvm::StringRef;

namespace ampmigrate {

std::string fileIdentity(StringRef Path, StringRef Base) {
  llvm::SmallString<256> P(Path);
  if (!llvm::sys::path::is_absolute(P) && !Base.empty()) {
    P = Base;
    llvm::sys::path::append(P, Path);
  }
  fs::make_absolute(P);
  llvm::SmallString<256> Real;
  if (!fs::real_path(P, Real))
    return std::string(Real);
  llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
  return std::string(P);
}

bool isWithinDirectory(StringRef Path, StringRef Dir) {
  Dir = Dir.rtrim('/');
  if (Dir.empty())
    return Path.starts_with("/"); // the root directory
  return Path == Dir || (Path.starts_with(Dir) && Path[Dir.size()] == '/');
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readSourceFile(StringRef Path) {
  return readBoundedRegularFile(Path, "the source file", MaxSourceFileBytes);
}

bool InputSet::mayWrite(StringRef File) const {
  if (Roots.empty())
    return true;
  std::string Id = fileIdentity(File);
  return NamedFiles.count(Id) ||
         llvm::any_of(Roots, [&](const std::string &R) { return isWithinDirectory(Id, R); });
}

namespace {

bool isSourceName(StringRef Name) {
  StringRef Ext = llvm::sys::path::extension(Name);
  return Ext == ".cpp" || Ext == ".cc" || Ext == ".cxx" || Ext == ".c++" || Ext == ".C";
}

/// The sources under `Dir`, which lies under the directory argument whose identity is `Root`.
/// Symlinks are looked at, never walked through: a symlinked directory inside `Root` is reached by
/// the walk itself (a `loop -> .` would otherwise repeat the tree), one outside is not analysed.
std::error_code walk(StringRef Dir, StringRef Root, unsigned Depth, std::vector<std::string> &Found,
                     std::vector<std::string> &Notes) {
  if (Depth > 256)
    return std::error_code(); // deeper than any source tree; a bound, not a loop (none are followed)
  std::error_code EC;
  for (fs::directory_iterator I(Dir, EC, /*follow_symlinks=*/false), E; I != E && !EC; I.increment(EC)) {
    std::string Path = I->path();
    StringRef Name = llvm::sys::path::filename(Path);
    fs::file_status St;
    if (fs::status(Path, St, /*Follow=*/false))
      continue; // gone since it was listed
    if (St.type() == fs::file_type::symlink_file) {
      fs::file_status Target;
      if (fs::status(Path, Target))
        continue; // a dangling link names no file
      bool IsDir = Target.type() == fs::file_type::directory_file;
      if (!IsDir && !isSourceName(Name))
        continue;
      std::string Id = fileIdentity(Path);
      if (!isWithinDirectory(Id, Root))
        Notes.push_back(Path + ": note: a symlink to " + Id + ", outside " + Root.str() +
                        "; not followed (neither analysed nor rewritten)");
      else if (!IsDir)
        Found.push_back(Path);
      continue;
    }
    if (St.type() == fs::file_type::directory_file) {
      if (Name.starts_with(".") || Name == "CMakeFiles")
        continue;
      if (std::error_code Sub = walk(Path, Root, Depth + 1, Found, Notes))
        return Sub;
      continue;
    }
    // Not only regular files: a FIFO or device named like a source is refused by readSourceFile,
    // with its reason, rather than skipped silently.
    if (isSourceName(Name))
      Found.push_back(Path);
  }
  return EC;
}

} // namespace

llvm::Expected<InputSet> expandInputs(const std::vector<std::string> &Args) {
  InputSet Out;
  std::set<std::string> Seen; // identities
  auto Take = [&](const std::string &F) {
    if (Seen.insert(fileIdentity(F)).second)
      Out.Files.push_back(F);
  };
  for (const std::string &F : Args) {
    fs::file_status St;
    if (fs::status(F, St))
      return llvm::createStringError(std::make_error_code(std::errc::no_such_file_or_directory),
                                     "%s: no such file or directory", F.c_str());
    if (St.type() != fs::file_type::directory_file) {
      Out.NamedFiles.insert(fileIdentity(F));
      Take(F);
      continue;
    }
    std::string Root = fileIdentity(F);
    Out.Roots.push_back(Root);
    std::vector<std::string> Found;
    if (std::error_code EC = walk(F, Root, 0, Found, Out.Notes))
      return llvm::createStringError(EC, "%s: cannot list the directory: %s", F.c_str(),
                                     EC.message().c_str());
    llvm::sort(Found);
    for (const std::string &Path : Found)
      Take(Path);
  }
  return Out;
}

} // namespace ampmigrate
