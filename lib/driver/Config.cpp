// .amp-migrate.yaml: lookup and parsing, shared by the command line and the language server.
#include "ampmigrate/Config.h"
#include "ampmigrate/InputLimits.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
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
    size_t ParentSize = llvm::sys::path::parent_path(Dir).size();
    if (ParentSize == Dir.size())
      break;
    // The parent is a prefix of Dir: shrink in place (assigning Dir a view of itself is UB).
    Dir.resize(ParentSize);
  }
  return "";
}

llvm::Expected<ProjectConfig> readConfig(const std::string &Path) {
  auto Buf = readBoundedRegularFile(Path, "the configuration file");
  if (!Buf)
    return Buf.takeError();
  return parseConfig(Path, (*Buf)->getBuffer());
}

llvm::Expected<ProjectConfig> parseConfig(const std::string &Path, llvm::StringRef Text) {
  auto Fail = [&](const llvm::Twine &Msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg.str());
  };
  if (std::string Deep = checkYamlDepth(Path, Text); !Deep.empty())
    return Fail(Deep);
  FirstYamlError First{Path, ""};
  const std::string &Err = First.Message;
  ProjectConfig Cfg;
  llvm::yaml::Input In(llvm::MemoryBufferRef(Text, Path), nullptr, FirstYamlError::handle, &First);
  In >> Cfg;
  if (!Err.empty() || In.error())
    return Fail(Err.empty() ? Path + ": error: invalid configuration" : Err);
  // A second document would be ignored silently: a settings file holds exactly one.
  if (hasSeveralYamlDocuments(Text))
    return Fail(Path + ": error: more than one YAML document ('---'); a configuration file holds one");
  Cfg.Path = Path;
  for (std::string &Rule : Cfg.Rules) {
    if (Rule.empty())
      return Fail(Path + ": error: an empty path in 'Rules'");
    if (!llvm::sys::path::is_absolute(Rule)) {
      llvm::SmallString<256> P(llvm::sys::path::parent_path(Path));
      llvm::sys::path::append(P, Rule);
      Rule = std::string(P);
    }
  }
  if (!Cfg.Level.empty()) {
    AmpLevel L;
    if (!parseLevel(Cfg.Level, L))
      return Fail(Path + ": error: unknown level '" + Cfg.Level + "' (valid: O0, O1, O2, O3)");
  }
  if (!Cfg.HeaderFilter.empty()) {
    std::string RegexError;
    if (!llvm::Regex(Cfg.HeaderFilter).isValid(RegexError))
      return Fail(Path + ": error: 'HeaderFilter' is not a valid regular expression: " + RegexError);
  }
  return Cfg;
}

} // namespace ampmigrate
