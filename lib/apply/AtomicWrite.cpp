// Writes a migrated file so that readers see the old or the new contents, never a torn mix: only
// while it still holds the bytes that were analysed (under an advisory lock), keeping its
// permissions, owner, hard links and symlink, and never a read-only file.
#include "ampmigrate/FixApplier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include <cerrno>
#ifndef _WIN32
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace ampmigrate {
namespace {

llvm::Error failure(llvm::StringRef Path, llvm::StringRef What, std::error_code EC) {
  return llvm::createStringError(EC, "%s: %s: %s", Path.str().c_str(), What.str().c_str(),
                                 EC.message().c_str());
}

llvm::Error refusal(llvm::StringRef Path, const llvm::Twine &Why) {
  return llvm::createStringError(std::make_error_code(std::errc::operation_not_permitted),
                                 Path + ": error: " + Why + "; not rewritten");
}

} // namespace

std::string writeAccessProblem(int Errno) {
  if (Errno == EROFS)
    return "the file is on a read-only file system";
  if (Errno == EACCES || Errno == EPERM)
    return "the file is not writable by this user";
  return "the file cannot be written: " + std::error_code(Errno, std::generic_category()).message();
}

namespace {

/// Why an existing file must not be replaced by a new one, or success.
llvm::Error checkReplaceable(llvm::StringRef Path, llvm::StringRef Target,
                             const llvm::sys::fs::file_status &Old) {
  namespace fs = llvm::sys::fs;
  if (Old.type() != fs::file_type::regular_file)
    return refusal(Path, "not a regular file");
  // Root may write anything: the mode bits say what the owner meant.
  if (!(Old.permissions() & fs::owner_write))
    return refusal(Path, "the file is read-only");
#ifndef _WIN32
  if (::access(Target.str().c_str(), W_OK) != 0)
    return refusal(Path, writeAccessProblem(errno));
#endif
  // A rename gives the name a new inode: the other names of a hard-linked file would keep the old
  // contents, silently out of step.
  if (Old.getLinkCount() > 1)
    return refusal(Path, "the file has " + llvm::Twine(Old.getLinkCount()) +
                             " hard links, which a rewrite would split");
  return llvm::Error::success();
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
  if (Existed)
    if (llvm::Error E = checkReplaceable(Path, Target, Old))
      return E;

  // The temporary lives next to the target so the rename stays within one file system.
  llvm::SmallString<256> Model(llvm::sys::path::parent_path(Target));
  llvm::sys::path::append(Model, "." + llvm::sys::path::filename(Target) + ".amp-migrate-%%%%%%%%");
  int FD = -1;
  llvm::SmallString<256> Temp;
  if (std::error_code EC = llvm::sys::fs::createUniqueFile(Model, FD, Temp))
    return failure(Path, "cannot create a temporary file", EC);

  // An interrupt (Ctrl-C, SIGTERM from CI) must not leave the temporary beside the source.
  llvm::sys::RemoveFileOnSignal(Temp);
  auto Abandon = [&](llvm::StringRef What, std::error_code EC) {
    llvm::sys::fs::remove(Temp);
    llvm::sys::DontRemoveFileOnSignal(Temp);
    return failure(Path, What, EC);
  };

  // Before any byte is written, so a private file's new contents are never readable by others.
  if (Existed) {
    if (std::error_code EC = llvm::sys::fs::setPermissions(FD, Old.permissions())) {
      llvm::sys::fs::closeFile(FD);
      return Abandon("cannot copy permissions", EC);
    }
#ifndef _WIN32
    // The new inode is the tool user's; the file stays its owner's (or is not written at all).
    struct stat TempSt;
    if (::fstat(FD, &TempSt) == 0 && (TempSt.st_uid != Old.getUser() || TempSt.st_gid != Old.getGroup()) &&
        ::fchown(FD, Old.getUser(), Old.getGroup()) != 0) {
      std::error_code EC(errno, std::generic_category());
      llvm::sys::fs::closeFile(FD);
      return Abandon("cannot keep the file's owner and group (not rewritten)", EC);
    }
    // fchown clears set-user/group-ID bits: put the mode back.
    if (std::error_code EC = llvm::sys::fs::setPermissions(FD, Old.permissions())) {
      llvm::sys::fs::closeFile(FD);
      return Abandon("cannot copy permissions", EC);
    }
#endif
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
  llvm::sys::DontRemoveFileOnSignal(Temp);
  return llvm::Error::success();
}

std::string digestOf(llvm::StringRef Text) {
  std::array<uint8_t, 32> H = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(Text.data()), Text.size()));
  return std::string(H.begin(), H.end());
}

llvm::Expected<bool>
rewriteFileIfUnchanged(llvm::StringRef Path, llvm::StringRef ParsedDigest,
                       llvm::function_ref<llvm::Expected<std::string>(llvm::StringRef)> Rewrite) {
  llvm::SmallString<256> Target(Path);
  if (llvm::sys::fs::is_symlink_file(Path))
    if (std::error_code EC = llvm::sys::fs::real_path(Path, Target))
      return failure(Path, "cannot resolve symlink", EC);

  // Lock the file we are about to read; if the name was replaced meanwhile (another writer's
  // rename), the lock guards a dead inode: take the new one.
  for (unsigned Attempt = 0;; ++Attempt) {
    llvm::Expected<llvm::sys::fs::file_t> FD = llvm::sys::fs::openNativeFileForRead(Target);
    if (!FD)
      return failure(Path, "cannot open the file to fix", llvm::errorToErrorCode(FD.takeError()));
    auto Close = llvm::make_scope_exit([&] { llvm::sys::fs::closeFile(*FD); });
#ifndef _WIN32
    if (::flock(*FD, LOCK_EX) != 0)
      return failure(Path, "cannot lock the file", std::error_code(errno, std::generic_category()));
    struct stat Locked, Named;
    if (::fstat(*FD, &Locked) != 0 || ::stat(Target.c_str(), &Named) != 0)
      return failure(Path, "cannot stat the file", std::error_code(errno, std::generic_category()));
    if (Locked.st_ino != Named.st_ino || Locked.st_dev != Named.st_dev) {
      if (Attempt < 16)
        continue;
      return refusal(Path, "the file keeps being replaced by another program");
    }
#endif
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Current =
        llvm::MemoryBuffer::getOpenFile(*FD, Target, /*FileSize=*/-1,
                                        /*RequiresNullTerminator=*/false);
    if (!Current)
      return failure(Path, "cannot read the file to fix", Current.getError());
    llvm::StringRef Old = (*Current)->getBuffer();
    if (digestOf(Old) != ParsedDigest)
      return refusal(Path, "the file changed since it was analysed (another run, an editor or a "
                           "checkout wrote it); run amp-migrate on it again");
    llvm::Expected<std::string> New = Rewrite(Old);
    if (!New)
      return New.takeError();
    if (*New == Old)
      return false;
    if (llvm::Error E = writeFileAtomically(Path, *New))
      return E;
    return true; // the lock goes with the closed descriptor
  }
}

} // namespace ampmigrate
