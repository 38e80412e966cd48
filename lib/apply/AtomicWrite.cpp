// Writes a migrated file so that readers see the old or the new contents, never a torn mix,
// and the file keeps its permissions (and stays where a symlink points).
#include "ampmigrate/FixApplier.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#ifndef _WIN32
#include <unistd.h>
#endif

namespace ampmigrate {
namespace {

llvm::Error failure(llvm::StringRef Path, llvm::StringRef What, std::error_code EC) {
  return llvm::createStringError(EC, "%s: %s: %s", Path.str().c_str(), What.str().c_str(),
                                 EC.message().c_str());
}

} // namespace

llvm::Error writeFileAtomically(llvm::StringRef Path, llvm::StringRef Contents) {
  // Replacing a symlink with a regular file would cut it loose from its target.
  llvm::SmallString<256> Target(Path);
  if (llvm::sys::fs::is_symlink_file(Path)) {
    if (std::error_code EC = llvm::sys::fs::real_path(Path, Target))
      return failure(Path, "cannot resolve symlink", EC);
  }

  llvm::sys::fs::file_status Old;
  bool Existed = !llvm::sys::fs::status(Target, Old);

  // The temporary lives next to the target so the rename stays within one file system.
  llvm::SmallString<256> Model(llvm::sys::path::parent_path(Target));
  llvm::sys::path::append(Model, "." + llvm::sys::path::filename(Target) + ".amp-migrate-%%%%%%%%");
  int FD = -1;
  llvm::SmallString<256> Temp;
  if (std::error_code EC = llvm::sys::fs::createUniqueFile(Model, FD, Temp))
    return failure(Path, "cannot create a temporary file", EC);

  auto Abandon = [&](llvm::StringRef What, std::error_code EC) {
    llvm::sys::fs::remove(Temp);
    return failure(Path, What, EC);
  };

  // Before any byte is written, so a private file's new contents are never readable by others.
  if (Existed) {
    if (std::error_code EC = llvm::sys::fs::setPermissions(FD, Old.permissions())) {
      llvm::sys::fs::closeFile(FD);
      return Abandon("cannot copy permissions", EC);
    }
  }

  {
    llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Contents;
    OS.flush();
    std::error_code SyncEC;
#ifndef _WIN32
    // Data on disk before the rename, so a crash cannot leave an empty file behind the new name.
    if (!OS.has_error() && ::fsync(FD) != 0)
      SyncEC = std::error_code(errno, std::generic_category());
#endif
    OS.close();
    if (OS.has_error()) {
      std::error_code EC = OS.error();
      OS.clear_error();
      return Abandon("cannot write the temporary file", EC);
    }
    if (SyncEC)
      return Abandon("cannot flush the temporary file", SyncEC);
  }

  if (std::error_code EC = llvm::sys::fs::rename(Temp, Target))
    return Abandon("cannot replace the file", EC);
  return llvm::Error::success();
}

} // namespace ampmigrate
