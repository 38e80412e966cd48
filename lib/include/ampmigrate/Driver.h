// Runs the engine over files: compile commands, lexical prefilter, skipped bodies, traversal
// scope, parallel translation units, NOLINT, one consistent report.
#pragma once

#include "ampmigrate/CompileDatabase.h" // makeCompilationDatabase
#include "ampmigrate/Engine.h"
#include "ampmigrate/Finding.h"
#include "ampmigrate/HeaderBodySkipper.h"
#include "ampmigrate/Rules.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CompilationDatabase.h"
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace clang {
class CXXRecordDecl;
class Decl;
class DeclGroupRef;
class DiagnosticConsumer;
class FileID;
class SourceManager;
namespace tooling {
class FrontendActionFactory;
}
} // namespace clang

namespace ampmigrate {

/// Parses one translation unit (its compile commands, the file) with the driver's action,
/// reporting to the driver's diagnostic consumer; false when the parse failed. The default is a
/// clang::tooling::ClangTool run; the language server passes one that reuses a precompiled
/// preamble (lib/lsp/PreambleParser.cpp).
using TUParser = std::function<bool(const std::vector<clang::tooling::CompileCommand> &Cmds, const std::string &File,
                                    clang::tooling::FrontendActionFactory &Action, clang::DiagnosticConsumer &Diags)>;

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
  /// A plain lint run that shows no fix (the command line decides, docs/performance.md): the
  /// fixes are not verified (VerifyFixes is off with it) and their steps are listed in
  /// Report::UnverifiedSteps. The result cache keys such a run as a verifying one: it takes a
  /// verifying run's entries, and the entries it stores are marked (CachedTU::FixesDeferred) so
  /// that a verifying run never takes them.
  bool DeferVerification = false;
  /// Before a TU's fixes are reported as applicable, parse it again with every body if the fast
  /// path skipped some (--fix, --diff, --export-fixes): errors there make the TU Failed.
  bool VerifyBeforeFix = false;
  /// Unsaved editor buffers: path -> contents (the language server).
  std::map<std::string, std::string> Overlays;
  EngineOptions Engine;
  /// The result cache (--cache-dir, docs/performance.md): empty for none.
  std::string CacheDir;
  uint64_t CacheMaxSize = 0; ///< bytes; 0: unbounded
  /// How each TU is parsed (empty: a ClangTool run).
  TUParser Parser;
  /// How the verification parses a rewritten translation unit whose fixes edit the main file
  /// alone, given that file's rewritten text (empty: a ClangTool run, as for fixes that edit
  /// headers). The language server passes one that reuses a precompiled preamble of the rewritten
  /// file's includes, <amp/torch.h> among them (lib/lsp/PreambleParser.cpp).
  std::function<TUParser(const std::string &RewrittenMain)> VerifyParser;
  /// Set by another thread when the result is no longer wanted (a newer editor version): the
  /// parse skips the remaining function bodies and the checks do not run.
  const std::atomic<bool> *Cancelled = nullptr;
  /// runDriver returns the analysis as it came (sorted, de-duplicated): fixes not verified
  /// (VerifyFixes is not applied), NOLINT not applied, fixes not attached to findings. The
  /// language server publishes such a report's diagnostics at once (finishReport) and verifies
  /// its fixes later (verifyReportFixes, then finishReport): together the same as runDriver's.
  bool Unfinished = false;
};

/// The adjustments the driver makes to every compile command (resource directory, no warnings,
/// syntax only, no precompiled headers, no outputs or dependency files).
clang::tooling::ArgumentsAdjuster parseArgumentsAdjuster();

/// What a run did besides its report (--stats).
struct DriverStats {
  unsigned CacheHits = 0;   ///< TUs answered by the result cache
  unsigned CacheMisses = 0; ///< TUs parsed, with a cache, and stored in it
};

Report runDriver(const DriverOptions &Opts, const RuleSet &Rules,
                 const clang::tooling::CompilationDatabase &DB, DriverStats *Stats = nullptr);

/// Verifies the fixes of an unfinished report (DriverOptions::Unfinished) of one translation
/// unit (`Opts.Files` holds one file) as runDriver does with VerifyFixes: a step whose rewrite
/// does not compile loses its fix and is reported as amp-manual-migration. Stops early, leaving
/// the report unusable, when `Opts.Cancelled` is set.
void verifyReportFixes(Report &R, const DriverOptions &Opts, const clang::tooling::CompilationDatabase &DB);

/// What runDriver does last to a report: NOLINT, then each step's fixes attached to its lead.
void finishReport(Report &R, const DriverOptions &Opts);

/// Adds the findings and files of `Part` to `Into`, keeping one consistent report (sorted; a
/// header finding seen from several runs appears once).
void mergeReport(Report &Into, Report &&Part);

/// Drops findings suppressed by NOLINT, NOLINT(id), NOLINTNEXTLINE(id), NOLINTBEGIN/END(id).
/// Fixes are attached afterwards (attachFixes), after withdrawNoLintFixes.
void applyNoLint(std::vector<Finding> &Findings, SourceTexts &Texts);

/// NOLINT over the edits of fixes, for every front end (run before applyNoLint): a step with any
/// edit on a line that a NOLINT, NOLINTNEXTLINE or NOLINTBEGIN/END of an amp check (or of every
/// check) covers, by the rules applyNoLint uses for findings, loses its fix whole (the marker's
/// own lines count, so a fix never moves a marker). Its findings become unfixable, and an
/// amp-manual-migration finding (when enabled; else a note) names the edit and the marker, on the
/// step's first finding that a NOLINT of amp-manual-migration does not hide.
void withdrawNoLintFixes(std::vector<Finding> &Findings, std::vector<StepFix> &Fixes, SourceTexts &Texts,
                         const std::function<bool(llvm::StringRef)> &CheckEnabled);

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
