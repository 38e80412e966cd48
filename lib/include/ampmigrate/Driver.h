// Runs the engine over files: compile commands, lexical prefilter, skipped bodies, traversal
// scope, parallel translation units, NOLINT, one consistent report.
#pragma once

#include "ampmigrate/Engine.h"
#include "ampmigrate/Finding.h"
#include "ampmigrate/Rules.h"
#include "clang/Tooling/CompilationDatabase.h"
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ampmigrate {

struct DriverOptions {
  std::vector<std::string> Files;
  std::string HeaderFilter;   ///< regex; headers matching it are analysed and fixed
  unsigned Jobs = 1;
  bool Prefilter = true;      ///< skip TUs whose sources hold no AMP token, without parsing
  bool SkipBodies = true;     ///< skip bodies of functions in headers with no AMP token
  bool Progress = false;      ///< progress lines on stderr
  /// Re-parse each fixed translation unit in memory before offering its fixes; a step whose
  /// rewrite does not compile is withdrawn and reported (amp-manual-migration).
  bool VerifyFixes = true;
  /// Before a TU's fixes are reported as applicable, parse it again with every body if the fast
  /// path skipped some (--fix, --diff, --export-fixes): errors there make the TU Failed.
  bool VerifyBeforeFix = false;
  /// Unsaved editor buffers: path -> contents (the language server).
  std::map<std::string, std::string> Overlays;
  EngineOptions Engine;
};

/// Compile commands: `-p` directory, or the arguments after `--`, or compile_commands.json
/// found upward from the first file, or none (a warning, and plain `-std=c++17`).
std::unique_ptr<clang::tooling::CompilationDatabase>
makeCompilationDatabase(const std::string &BuildPath, const std::vector<std::string> &ExtraArgs,
                        const std::vector<std::string> &Files, std::string &Error);

Report runDriver(const DriverOptions &Opts, const RuleSet &Rules,
                 const clang::tooling::CompilationDatabase &DB);

/// Adds the findings and files of `Part` to `Into`, keeping one consistent report (sorted; a
/// header finding seen from several runs appears once).
void mergeReport(Report &Into, Report &&Part);

/// Drops findings suppressed by NOLINT, NOLINT(id), NOLINTNEXTLINE(id), NOLINTBEGIN/END(id).
/// Fixes are attached afterwards (attachFixes), so NOLINT on one finding of a step silences that
/// diagnostic without vetoing the step's rewrite.
void applyNoLint(std::vector<Finding> &Findings, SourceTexts &Texts);

/// True when the text mentions none of the tokens (the lexical prefilter's test of one file).
bool mentionsAnyToken(llvm::StringRef Text, const std::vector<std::string> &Tokens);

/// Matches a check id against clang-tidy style globs ("-*,amp-*,-amp-zero-grad").
bool checkEnabledByGlobs(llvm::StringRef Globs, llvm::StringRef Check);

/// Reads files from disk (or overlays) once and keeps them.
class FileTexts : public SourceTexts {
public:
  explicit FileTexts(std::map<std::string, std::string> Overlays = {}) : Cache(std::move(Overlays)) {}
  const std::string *get(const std::string &File) override;

private:
  std::map<std::string, std::string> Cache;
  std::map<std::string, bool> Missing;
};

} // namespace ampmigrate
