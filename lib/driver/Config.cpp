// .amp-migrate.yaml: lookup and parsing, shared by the command line and the language server.
#include "ampmigrate/Config.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"

namespace llvm::yaml {
template <> struct MappingTraits<ampmigrate::ProjectConfig> {
  static void mapping(IO &Io, ampmigrate::ProjectConfig &C) {
    Io.mapOptional("Checks", C.Checks);
    Io.mapOptional("HeaderFilter", C.HeaderFilter);
    Io.mapOptional("Level", C.Level);
    Io.mapOptional("Rules", C.Rules);
    Io.mapOptional("WarningsAsErrors", C.WarningsAsErrors);
  }
};
} // namespace llvm::yaml

namespace ampmigrate {

std::string findConfigUpward(llvm::StringRef File) {
  llvm::SmallString<256> Dir(File);
  llvm::sys::fs::make_absolute(Dir);
  llvm::sys::path::remove_filename(Dir);
  while (!Dir.empty()) {
    llvm::SmallString<256> P(Dir);
    llvm::sys::path::append(P, ".amp-migrate.yaml");
    if (llvm::sys::fs::exists(P))
      return std::string(P);
    llvm::StringRef Parent = llvm::sys::path::parent_path(Dir);
    if (Parent == Dir)
      break;
    Dir = Parent;
  }
  return "";
}

llvm::Expected<ProjectConfig> readConfig(const std::string &Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path);
  if (!Buf)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   Path + ": cannot read the configuration file");
  std::string Err;
  auto Handler = [](const llvm::SMDiagnostic &D, void *Ctx) {
    auto &E = *static_cast<std::string *>(Ctx);
    if (E.empty())
      E = (D.getFilename() + ":" + llvm::Twine(D.getLineNo()) + ":" + llvm::Twine(D.getColumnNo() + 1) +
           ": error: " + D.getMessage())
              .str();
  };
  ProjectConfig Cfg;
  llvm::yaml::Input In(llvm::MemoryBufferRef((*Buf)->getBuffer(), Path), nullptr, Handler, &Err);
  In >> Cfg;
  if (!Err.empty() || In.error())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   Err.empty() ? Path + ": error: invalid configuration" : Err);
  Cfg.Path = Path;
  for (std::string &Rule : Cfg.Rules)
    if (!llvm::sys::path::is_absolute(Rule)) {
      llvm::SmallString<256> P(llvm::sys::path::parent_path(Path));
      llvm::sys::path::append(P, Rule);
      Rule = std::string(P);
    }
  if (!Cfg.Level.empty()) {
    AmpLevel L;
    if (!parseLevel(Cfg.Level, L))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     Path + ": error: unknown level '" + Cfg.Level +
                                         "' (valid: O0, O1, O2, O3)");
  }
  return Cfg;
}

} // namespace ampmigrate
