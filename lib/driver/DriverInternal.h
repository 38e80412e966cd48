// Declarations shared by the driver's files (lib/driver): not part of the public API.
#pragma once

#include "ampmigrate/CompileDatabase.h"
#include "ampmigrate/Driver.h"
#include "ampmigrate/Finding.h"
#include "ampmigrate/Rules.h"

#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <memory>
#include <optional>
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

private:
  const RuleSet &Rules;
  const DriverOptions &Opts;
  TUResult &Out;
};

// -- Fix verification (VerifyFixes.cpp)

/// Keeps the fixes whose rewritten translation unit compiles: all together when they do, else
/// each step alone, and then the survivors together once more.
void verifyFixes(TUResult &Res, const clang::tooling::CompilationDatabase &DB, const std::string &File,
                 const DriverOptions &Opts, const llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> &FS);

// -- Several analyses of one source (Configurations.cpp)

/// One analysis: a compile command of a file, or a translation unit of the run, named for messages.
struct Analysis {
  std::string Label;
  TUResult Result;
};

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
