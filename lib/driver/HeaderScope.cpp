// Which headers a translation unit's findings may come from (ampmigrate/HeaderScope.h).
#include "ampmigrate/HeaderScope.h"

#include "clang/Basic/FileManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace ampmigrate {

HeaderScope::HeaderScope(const clang::SourceManager &SM, const std::string &Filter, Name Match)
    : SM(SM), Filter(Filter.empty() ? nullptr : std::make_shared<llvm::Regex>(Filter)), Match(Match) {}

bool HeaderScope::isLibtorchIncludeRoot(llvm::StringRef Dir) {
  llvm::SmallString<256> A(Dir), B(Dir);
  llvm::sys::path::append(A, "ATen", "ATen.h");
  llvm::sys::path::append(B, "c10", "macros", "Macros.h");
  return llvm::sys::fs::exists(A) && llvm::sys::fs::exists(B);
}

bool HeaderScope::underLibtorch(llvm::StringRef AbsolutePath) const {
  for (llvm::StringRef Dir = llvm::sys::path::parent_path(AbsolutePath); !Dir.empty();
       Dir = llvm::sys::path::parent_path(Dir)) {
    auto [It, New] = Roots.try_emplace(Dir, false);
    if (New)
      It->second = isLibtorchIncludeRoot(Dir);
    if (It->second)
      return true;
    if (Dir == llvm::sys::path::root_path(Dir))
      break;
  }
  return false;
}

bool HeaderScope::headerInScope(clang::FileID ID) const {
  auto FE = SM.getFileEntryRefForID(ID);
  if (!FE)
    return false;
  // The path reports print: the name as opened, absolute against the compile command's
  // directory, dots removed (anchorToParsedFiles); libtorch's roots are looked for on it too.
  llvm::SmallString<256> Abs(FE->getName());
  SM.getFileManager().makeAbsolutePath(Abs);
  llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
  if (!Filter->match(Match == Name::Absolute ? llvm::StringRef(Abs) : FE->getName()))
    return false;
  // libtorch's own headers (ATen/, c10/, torch/csrc/, ...) enable autocast and call backward:
  // they are not the user's to migrate, on -I as on -isystem.
  return !underLibtorch(Abs);
}

bool HeaderScope::inScope(clang::SourceLocation L) const {
  if (L.isInvalid())
    return false;
  L = SM.getExpansionLoc(L);
  if (SM.isInMainFile(L))
    return true;
  if (!Filter || SM.isInSystemHeader(L))
    return false;
  clang::FileID ID = SM.getFileID(L);
  auto [It, New] = Headers.try_emplace(ID, false);
  if (New)
    It->second = headerInScope(ID);
  return It->second;
}

} // namespace ampmigrate
