// The project configuration file, .amp-migrate.yaml: found upward from each file (or named with
// --config-file); the command line (or the editor's settings) wins over it.
#pragma once

#include "ampmigrate/AmpLevel.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace ampmigrate {

struct ProjectConfig {
  std::string Path;         ///< the file it was read from; empty: no configuration
  std::string Checks;       ///< check globs; empty: not set
  std::string HeaderFilter; ///< empty: not set
  std::string Level;        ///< "O0".."O3"; empty: not set
  std::vector<std::string> Rules; ///< absolute (relative paths are resolved against the file's directory)
  bool WarningsAsErrors = false;
};

/// The .amp-migrate.yaml in the file's directory or the nearest one above it; empty if none.
std::string findConfigUpward(llvm::StringRef File);

/// Reads a configuration file. Errors say "<file>:<line>:<col>: error: <reason>" (an unknown key, a
/// value of the wrong type) or "<file>: cannot read the configuration file".
/// Only regular files of bounded size and nesting are read (docs/reliability.md).
llvm::Expected<ProjectConfig> readConfig(const std::string &Path);
/// The same, from text already read (`Path` names it in messages and anchors relative rule paths).
llvm::Expected<ProjectConfig> parseConfig(const std::string &Path, llvm::StringRef Text);


} // namespace ampmigrate
