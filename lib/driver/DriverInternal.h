// Declarations shared by the driver's files (lib/driver): not part of the public API.
#pragma once

#include "ampmigrate/CompileDatabase.h"
#include "ampmigrate/Driver.h"
#include "ampmigrate/Finding.h"
#include "ampmigrate/Preamble.h"
#include "ampmigrate/ResultCache.h"
#include "ampmigrate/Rules.h"

#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ampmigrate {
namespace driver {

/// What the driver keeps of one translation unit: the engine's findings and, beside them, the
/// fixes of each step; what each edited file held when parsed; how many header bodies were skipped.
struct TUResult {
  std::vector<Finding> Findings;
  std::vector<StepFix> Fixes;
  std::map<std::string, std::string> Digests; ///< Report::ParsedDigests of this TU
  unsigned SkippedBodies = 0;
  /// The fixes were not verified (DriverOptions::DeferVerification, or a cache entry of such a run).
  bool FixesDeferred = false;
  /// The main file's function summaries, and the callees the analysis asked about that no
  /// summary had (CallSummaries.h; RunSummaries.cpp answers them from the run's other files).
  SummaryIndex Summaries;
  std::map<std::string, UnknownCallee> UnknownCallees;
  bool hasFixes() const { return !Fixes.empty(); }
};

/// Whether the result is no longer wanted (DriverOptions::Cancelled).
bool cancelled(const DriverOptions &Opts);

// -- Compile commands (CompileCommands.cpp)

/// Where the verification parse finds the runtime's headers (<amp/torch.h>): `-idirafter` pairs.
std::vector<std::string> runtimeIncludeArgs();

/// Collects error diagnostics as clang prints them ("file:line:col: error: ...").
struct ErrorCollector : clang::DiagnosticConsumer {
  std::string Text;
  llvm::raw_string_ostream OS{Text};
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> DiagOpts = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  clang::TextDiagnosticPrinter Printer{OS, DiagOpts.get()};
  void BeginSourceFile(const clang::LangOptions &LO, const clang::Preprocessor *PP) override {
    Printer.BeginSourceFile(LO, PP);
  }
  void EndSourceFile() override { Printer.EndSourceFile(); }
  void HandleDiagnostic(clang::DiagnosticsEngine::Level L, const clang::Diagnostic &Info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(L, Info);
    if (L >= clang::DiagnosticsEngine::Error)
      Printer.HandleDiagnostic(L, Info);
  }
};

/// Parses `File` as the driver does (its compile command, syntax only, the editor's overlays and
/// `Extra` files mapped over `FS`). Returns false when the parse had errors.
bool parseTU(const clang::tooling::CompilationDatabase &DB, const std::string &File,
             const std::map<std::string, std::string> &Overlays,
             const std::map<std::string, std::string> &Extra, clang::tooling::FrontendActionFactory &Factory,
             ErrorCollector &Errors, llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS,
             const std::vector<std::string> &ExtraArgs = {});

// -- Before a parse (Prefilter.cpp)

/// The lexical prefilter: does the main file or a project header mention an AMP token?
bool mayHoldFindings(const clang::tooling::CompileCommand &Cmd, const std::string &File,
                     const std::vector<std::string> &Tokens, const std::map<std::string, std::string> &Overlays);


// -- The frontend action of one translation unit (FrontendAction.cpp)

class AmpActionFactory : public clang::tooling::FrontendActionFactory {
public:
  AmpActionFactory(const RuleSet &Rules, const DriverOptions &Opts, TUResult &Out)
      : Rules(Rules), Opts(Opts), Out(Out) {}
  std::unique_ptr<clang::FrontendAction> create() override;
  /// The inactive `#if` regions of the main file's include block, as a preamble's build saw them
  /// (offsets): a parse that reuses the preamble does not see them itself.
  void setPreambleInactive(const std::vector<std::pair<unsigned, unsigned>> *Offsets) { PreambleInactive = Offsets; }
  /// The guard and scaler classes a preamble's build learned (BuiltPreamble::LearnedClasses): the
  /// headers after a preamble that ends inside the include block are skipped knowing them.
  void setPreambleLearned(const std::vector<std::string> *Names) { PreambleLearned = Names; }

private:
  const RuleSet &Rules;
  const DriverOptions &Opts;
  TUResult &Out;
  const std::vector<std::pair<unsigned, unsigned>> *PreambleInactive = nullptr;
  const std::vector<std::string> *PreambleLearned = nullptr;
};

// -- Parses against a precompiled preamble (PreambleTU.cpp, Preamble.cpp)

/// Whether the command line's parses go through PreambleTU: not with AMP_MIGRATE_PREAMBLE=off
/// (the whole-parse path, which the comparison test runs), nor with --header-filter (headers'
/// declarations are visited only in a whole parse), nor for the language server.
bool preamblePathEnabled(const DriverOptions &Opts);

/// The files of the run (absolute) that share the first lines of their include block with another
/// file of the run, under the same compile command but for the file's name, and how many bytes
/// they share: whole `#include` lines, outside any `#if`. A preamble of those lines is shared
/// (PreambleStore), and the rest of each file's includes is parsed with the file.
/// AMP_MIGRATE_SHARED_PREFIX=off (the baseline of bench/fix_codebase.sh): a preamble is shared
/// only by files whose whole include blocks are the same, and the check before a fix is a whole
/// parse.
bool sharedPrefixesEnabled();
std::map<std::string, unsigned> sharedIncludePrefixes(const clang::tooling::CompilationDatabase &DB,
                                                      const DriverOptions &Opts);

/// One translation unit's analysis and fix verification against one precompiled preamble of its
/// leading includes (shared with the TUs of the run that start with the same includes under the
/// same flags: PreambleStore): the includes are parsed once, and the verification re-parses only
/// the main file with the edits applied.
class PreambleTU {
public:
  /// None when there is no include block, or its preamble cannot be built without errors: the
  /// whole-parse path then.
  /// `SharedPrefix` (sharedIncludePrefixes): the preamble covers only that many bytes.
  static std::unique_ptr<PreambleTU> open(const clang::tooling::CompileCommand &Cmd, const std::string &File,
                                          const RuleSet &Rules, const DriverOptions &Opts,
                                          llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS, DependencyLog *Deps,
                                          unsigned SharedPrefix = 0);
  /// The analysis parse (its header bodies skipped while precompiling: skippedBodies()).
  bool analyse(AmpActionFactory &Action, ErrorCollector &Errors);
  unsigned skippedBodies() const;
  /// The main file to verify for these edits of it, with an inserted `#include` of the include
  /// block moved to the block's end (nothing but comments lie between); none when the edits
  /// change the include block otherwise (the whole-parse verification then).
  std::optional<std::string> verificationText(const clang::tooling::Replacements &MainEdits) const;
  /// Parses `MainText` (verificationText) as the verification does, against the preamble.
  bool verify(const std::string &MainText, clang::tooling::FrontendActionFactory &Action, ErrorCollector &Errors);
  /// The check before a fix that the whole translation unit compiles (header bodies and template
  /// instantiations included), against a second preamble of the same lines built with every body
  /// and the headers' instantiations (shared like the first): whether it compiles; none when that
  /// preamble cannot be built (the whole parse then, which reports the headers' errors).
  std::optional<bool> checkInFull(ErrorCollector &Errors);
  const std::string &file() const { return File; }

private:
  PreambleTU() = default;
  /// Builds a preamble of the block's first `Bounds.Size` bytes (`Record`: what it reads goes to
  /// its BuiltPreamble::Deps).
  std::shared_ptr<const BuiltPreamble> build(bool SkipBodies, bool Instantiate, bool Record) const;
  /// Parses `MainText` against `With` (the analysis's preamble, or checkInFull's).
  bool parse(const std::string &MainText, const std::vector<std::string> &ExtraArgs,
             clang::tooling::FrontendActionFactory &Action, ErrorCollector &Errors, const BuiltPreamble &With);
  clang::tooling::CompileCommand Cmd;
  std::vector<std::string> Args;
  std::string File, Text;
  std::map<std::string, std::string> Overlays;
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS;
  clang::LangOptions LangOpts;
  clang::PreambleBounds Bounds{0, false};
  const RuleSet *Rules = nullptr;
  std::vector<std::string> Key; ///< the preamble's key in the store
  std::shared_ptr<const BuiltPreamble> Pre;
};

// -- Fix verification (VerifyFixes.cpp)

/// Keeps the fixes whose rewritten translation unit compiles: all together when they do, else
/// each step alone, and then the survivors together once more.
/// `Fast`: the TU's parses against its preamble (the main file alone re-parsed where the edits
/// allow it: PreambleTU::verificationText).
void verifyFixes(TUResult &Res, const clang::tooling::CompilationDatabase &DB, const std::string &File,
                 const DriverOptions &Opts, const llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> &FS,
                 PreambleTU *Fast = nullptr);

// -- Several analyses of one source (Configurations.cpp)

/// One analysis: a compile command of a file, or a translation unit of the run, named for messages.
struct Analysis {
  std::string Label;
  TUResult Result;
  std::string File; ///< the translation unit's main file, where the label is about one
};

/// Callees across files (RunSummaries.cpp): merges the parts' summaries into `Index`, summarises
/// the files of the run and of the database (up to 16, chosen by their text) that may define a
/// callee some part asked about and no summary had, and replaces each part that asked about one
/// the index now has by `Reanalyse(file, index)` (when it gives a result).
void answerCallees(std::vector<Analysis> &Parts, const clang::tooling::CompilationDatabase &DB,
                   const RuleSet &Rules, const DriverOptions &Opts,
                   const std::function<std::optional<TUResult>(const std::string &, const SummaryIndex &)> &Reanalyse,
                   SummaryIndex &Index);

/// Several analyses as one result: every finding, and a step's fix only when every analysis that
/// saw the step (a finding or a fix of it) has a fix with the same edits. A step one analysis does
/// not fix, or that two fix differently, is not fixed: its findings become unfixable and an
/// amp-manual-migration finding names the analyses. Digests merged (mergeDigests).
TUResult agreeOnFixes(std::vector<Analysis> Parts, const DriverOptions &Opts);

// -- Report assembly (Report.cpp)

/// Adds one TU's digests; a file two TUs read differently gets "" (it is never written).
void mergeDigests(std::map<std::string, std::string> &Into, const std::map<std::string, std::string> &From);

/// One consistent report: a header finding seen from several TUs appears once.
void sortAndDeduplicate(Report &R);

} // namespace driver
} // namespace ampmigrate
