// amp-migrate: the command line (lint, --fix, --diff, --export-fixes) over the engine in lib/.
#include "ampmigrate/Checks.h"
#include "ampmigrate/Config.h"
#include "ampmigrate/Driver.h"
#include "ampmigrate/Emitters.h"
#include "ampmigrate/FixApplier.h"
#include "ampmigrate/Formatting.h"
#include "ampmigrate/InputFiles.h"
#include "ampmigrate/LanguageServer.h"
#include "ampmigrate/ResultCache.h"
#include "ampmigrate/Rules.h"
#include "ampmigrate/Shard.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

using namespace ampmigrate;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory Cat("amp-migrate options");
cl::list<std::string> Files(cl::Positional, cl::desc("<files...>"), cl::cat(Cat));
cl::opt<std::string> BuildPath("p", cl::desc("Build directory holding compile_commands.json"), cl::cat(Cat));
cl::opt<std::string> Checks("checks", cl::desc("Check globs, e.g. '-*,amp-*,-amp-zero-grad'"), cl::init(""), cl::cat(Cat));
enum class OutputFormat { Text, Json, Sarif, Github, Fixits };
cl::opt<OutputFormat> Format("format", cl::desc("Output format"), cl::init(OutputFormat::Text),
                             cl::values(clEnumValN(OutputFormat::Text, "text", "clang-style diagnostics"),
                                        clEnumValN(OutputFormat::Json, "json", "one JSON document"),
                                        clEnumValN(OutputFormat::Sarif, "sarif", "SARIF 2.1.0 (code scanning)"),
                                        clEnumValN(OutputFormat::Github, "github", "GitHub Actions annotations"),
                                        clEnumValN(OutputFormat::Fixits, "fixits", "text plus clang's parseable fix-its")),
                             cl::cat(Cat));
cl::opt<std::string> Output("output", cl::desc("Write the report to this file"), cl::cat(Cat));
cl::opt<bool> WarningsAsErrors("warnings-as-errors", cl::desc("Exit 1 when there are findings"), cl::cat(Cat));
cl::opt<std::string> HeaderFilter("header-filter", cl::desc("Regex of headers to analyse and fix"), cl::init(""), cl::cat(Cat));
cl::opt<unsigned> Jobs("j", cl::desc("Translation units in parallel"), cl::init(1), cl::Prefix, cl::cat(Cat));
cl::list<std::string> RuleFiles("rules", cl::desc("Extra rule file (repeatable)"), cl::cat(Cat));
cl::opt<std::string> ConfigFile("config-file", cl::desc("Configuration file (else .amp-migrate.yaml found upward)"), cl::cat(Cat));
cl::opt<std::string> Level("level", cl::desc("AMP level of the rewrite: O0|O1|O2|O3"), cl::init(""), cl::cat(Cat));
cl::opt<bool> ListChecks("list-checks", cl::desc("List the checks and exit"), cl::cat(Cat));
cl::opt<std::string> Explain("explain", cl::desc("Explain a check and exit"), cl::cat(Cat));
// --stats is taken by LLVM's own option registry; main() reads it from argv itself.
bool Stats = false;
cl::opt<bool> Fix("fix", cl::desc("Apply the fixes in place"), cl::cat(Cat));
cl::opt<bool> Diff("diff", cl::desc("Print the fixes as a unified diff; write nothing"), cl::cat(Cat));
cl::opt<std::string> ExportFixes("export-fixes", cl::desc("Write the fixes as clang-apply-replacements YAML"), cl::cat(Cat));
cl::opt<std::string> FormatStyle("format-style", cl::desc("Format the changed lines: a clang-format style, file, or none"), cl::init("none"), cl::cat(Cat));
cl::opt<bool> ShowFixes("show-fixes", cl::desc("Text output: print the fixed lines"), cl::cat(Cat));
cl::opt<bool> NoPrefilter("no-prefilter", cl::desc("Parse every file, even those with no AMP token"), cl::Hidden, cl::cat(Cat));
cl::opt<bool> FullParse("full-parse", cl::desc("Parse every function body"), cl::Hidden, cl::cat(Cat));
cl::opt<bool> VerifyFixes("verify-fixes",
                          cl::desc("Re-parse each fixed file in memory before offering its fixes; a "
                                   "step whose rewrite would not compile is withdrawn (default on)"),
                          cl::init(true), cl::cat(Cat));
cl::opt<bool> Lsp("lsp", cl::desc("Serve the Language Server Protocol on stdin/stdout (docs/ide.md)"), cl::cat(Cat));
cl::opt<std::string> CacheDir("cache-dir", cl::desc("Reuse the results of unchanged translation units stored here (default: $AMP_MIGRATE_CACHE_DIR)"), cl::cat(Cat));
cl::opt<std::string> CacheMaxSize("cache-max-size", cl::desc("Bound of the cache's size, least recently used first (e.g. 500M, 2G; 0: none)"), cl::init("1G"), cl::cat(Cat));
cl::opt<std::string> Shard("shard", cl::desc("Analyse only shard K of N of the files (K/N, balanced by file size)"), cl::cat(Cat));
cl::opt<std::string> MergeFixes("merge-fixes", cl::desc("Merge the --export-fixes files given as inputs into this file"), cl::cat(Cat));
cl::opt<bool> ApplyFixes("apply-fixes", cl::desc("Apply the --export-fixes/--merge-fixes files given as inputs in place, each file only while it holds the bytes they were computed from"), cl::cat(Cat));
cl::opt<std::string> MergeSarif("merge-sarif", cl::desc("Merge the SARIF files given as inputs into this file"), cl::cat(Cat));
enum class ColorMode { Auto, Always, Never };
cl::opt<ColorMode> Color("use-color", cl::desc("Colours in text output"), cl::init(ColorMode::Auto),
                         cl::values(clEnumValN(ColorMode::Auto, "auto", "when writing to a terminal"),
                                    clEnumValN(ColorMode::Always, "always", "always"),
                                    clEnumValN(ColorMode::Never, "never", "never")),
                         cl::cat(Cat));

} // namespace

static int fail(int Code, const llvm::Twine &Msg) {
  llvm::errs() << "amp-migrate: error: " << Msg << "\n";
  return Code;
}

/// Writes a report or fixes file whole or not at all; "-", a terminal, a pipe or /dev/stdout is
/// written directly.
static llvm::Error writeOutputFile(llvm::StringRef Path, llvm::StringRef Text) {
  llvm::sys::fs::file_status St;
  bool Special = Path == "-" || (!llvm::sys::fs::status(Path, St) &&
                                 St.type() != llvm::sys::fs::file_type::regular_file);
  if (!Special)
    return writeFileAtomically(Path, Text);
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  if (EC)
    return llvm::createStringError(EC, "%s: %s", Path.str().c_str(), EC.message().c_str());
  OS << Text;
  OS.close();
  if (!OS.has_error())
    return llvm::Error::success();
  EC = OS.error();
  OS.clear_error();
  return llvm::createStringError(EC, "%s: %s", Path.str().c_str(), EC.message().c_str());
}

static int printStats(const Report &R, const DriverStats &DS, bool Cached, llvm::raw_ostream &OS) {
  unsigned Scanned = 0, Skipped = 0, Failed = 0;
  for (const FileOutcome &F : R.Files)
    (F.Status == FileOutcome::State::Scanned ? Scanned : F.Status == FileOutcome::State::Skipped ? Skipped : Failed)++;
  std::map<std::string, unsigned> ByCheck;
  unsigned Fixable = 0, Unverified = 0;
  for (const Finding &F : R.Findings) {
    ++ByCheck[F.Check];
    // A finding is fixable when its step's fix is verified; a lint run that deferred the
    // verification counts the others apart.
    bool Deferred = F.Fixable && R.UnverifiedSteps.count(F.StepId);
    Fixable += F.Fixable && !Deferred;
    Unverified += Deferred;
  }
  OS << "files: " << R.Files.size() << " (scanned " << Scanned << ", skipped by prefilter " << Skipped
     << ", failed " << Failed << ")\n";
  if (Cached)
    OS << "cache: " << DS.CacheHits << " hit" << (DS.CacheHits == 1 ? "" : "s") << ", " << DS.CacheMisses
       << " miss" << (DS.CacheMisses == 1 ? "" : "es") << "\n";
  OS << "findings: " << R.Findings.size() << " (fixable " << Fixable;
  if (Unverified)
    OS << ", a rewrite not verified in this lint run " << Unverified;
  OS << ")\n";
  for (const auto &[C, N] : ByCheck)
    OS << "  " << C << ": " << N << "\n";
  return 0;
}

/// --merge-fixes / --merge-sarif: the shards' outputs (the positional files) into one file.
static int runMerge() {
  if (Files.empty())
    return fail(2, "no files to merge (usage: amp-migrate --merge-fixes=OUT.yaml SHARD.yaml...)");
  if (!MergeFixes.empty() && !MergeSarif.empty())
    return fail(2, "--merge-fixes and --merge-sarif take different inputs; run them separately");
  std::vector<std::string> Inputs(Files.begin(), Files.end());
  std::string Out = !MergeFixes.empty() ? std::string(MergeFixes) : std::string(MergeSarif);
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  int Exit = 0;
  if (!MergeFixes.empty()) {
    llvm::Expected<MergeOutcome> M = mergeExportedFixes(Inputs, OS);
    if (!M) {
      llvm::errs() << llvm::toString(M.takeError()) << "\n";
      return 2;
    }
    for (const std::string &C : M->Conflicts)
      llvm::errs() << C << "\n";
    llvm::errs() << "amp-migrate: merged " << M->Inputs << " files: " << M->Diagnostics << " findings, "
                 << M->Edits << " edits; dropped as duplicates: " << M->DuplicateDiagnostics << " findings, "
                 << M->DuplicateEdits << " edits; " << M->Conflicts.size() << " fixes refused\n";
    Exit = M->Conflicts.empty() ? 0 : 3;
  } else {
    llvm::Expected<unsigned> N = mergeSarif(Inputs, OS);
    if (!N) {
      llvm::errs() << llvm::toString(N.takeError()) << "\n";
      return 2;
    }
    llvm::errs() << "amp-migrate: merged " << Inputs.size() << " SARIF logs: " << *N << " results\n";
  }
  if (llvm::Error E = writeOutputFile(Out, OS.str()))
    return fail(2, llvm::toString(std::move(E)));
  return Exit;
}

/// --apply-fixes: the exported fixes files (the positional files) applied in place.
static int runApply() {
  if (Files.empty())
    return fail(2, "no fixes files to apply (usage: amp-migrate --apply-fixes FIXES.yaml...)");
  ApplyOutcome A = applyExportedFixes(std::vector<std::string>(Files.begin(), Files.end()));
  for (const std::string &E : A.Errors)
    llvm::errs() << E << "\n";
  llvm::errs() << "amp-migrate: fixed " << A.Changed << " file" << (A.Changed == 1 ? "" : "s") << "\n";
  return A.Errors.empty() ? 0 : 3;
}

/// --list-checks and --explain.
static int describeChecks() {
  if (ListChecks) {
    for (const CheckInfo &C : allChecks())
      if (Checks.empty() || checkEnabledByGlobs(Checks, C.Id))
        llvm::outs() << llvm::left_justify(C.Id, 26) << (C.CanFix ? "[fix]  " : "       ") << C.Summary
                     << "\n";
    return 0;
  }
  const CheckInfo *C = findCheck(Explain);
  if (!C)
    return fail(2, "unknown check '" + Explain + "' (see --list-checks)");
  llvm::outs() << C->Id << ": " << C->Summary << "\n";
  for (const char *Base : {AMP_SOURCE_DOCS_DIR, AMP_INSTALLED_DOCS_DIR}) {
    llvm::SmallString<256> P(Base);
    llvm::sys::path::append(P, "checks", (C->Id + ".md").str());
    if (auto Buf = llvm::MemoryBuffer::getFile(P)) {
      llvm::outs() << "\n" << (*Buf)->getBuffer();
      return 0;
    }
  }
  llvm::outs() << "(documentation: " << checkDocPath(C->Id) << ")\n";
  return 0;
}

/// The cache directory (--cache-dir, else $AMP_MIGRATE_CACHE_DIR), created if missing; "" for
/// none. One that is not a directory, or cannot be created, is an error (exit 2): a cache that
/// silently caches nothing is a slow run nobody explains.
static llvm::Expected<std::string> cacheDirectory() {
  bool FromEnv = CacheDir.empty();
  std::string Dir = !FromEnv ? std::string(CacheDir) : llvm::sys::Process::GetEnv("AMP_MIGRATE_CACHE_DIR").value_or("");
  if (Dir.empty())
    return Dir;
  std::string Name = FromEnv ? "$AMP_MIGRATE_CACHE_DIR (" + Dir + ")" : "--cache-dir " + Dir;
  llvm::sys::fs::file_status St;
  if (!llvm::sys::fs::status(Dir, St) && St.type() != llvm::sys::fs::file_type::directory_file)
    return llvm::createStringError(std::make_error_code(std::errc::not_a_directory),
                                   "%s: not a directory; nothing could be cached there", Name.c_str());
  if (std::error_code EC = llvm::sys::fs::create_directories(Dir))
    return llvm::createStringError(EC, "%s: cannot create the cache directory: %s", Name.c_str(),
                                   EC.message().c_str());
  return Dir;
}

/// A plain lint run (findings only, in text or annotations, no fixes shown, written or exported)
/// leaves the fixes unverified: it claims no fix, and the runs that offer one (--fix, --diff,
/// --export-fixes, --show-fixes, the JSON, SARIF and fix-it formats) verify it. --verify-fixes
/// given explicitly verifies in a lint run too (docs/performance.md: the cost of each mode).
/// AMP_MIGRATE_LINT_VERIFY=always verifies in every run, as before the deferral.
static bool verificationDeferred() {
  const char *Env = std::getenv("AMP_MIGRATE_LINT_VERIFY");
  if (Env && llvm::StringRef(Env) == "always")
    return false;
  return VerifyFixes.getNumOccurrences() == 0 && !Fix && !Diff && ExportFixes.empty() && !ShowFixes &&
         (Format == OutputFormat::Text || Format == OutputFormat::Github);
}

/// Runs the driver over the inputs, one run per configuration. Without --config-file, each file
/// takes the .amp-migrate.yaml found upward from it; files that share a configuration run
/// together; the command line wins over the file. Returns an exit code on a settings error.
static std::optional<int> analyse(const std::vector<std::string> &Inputs, const std::string &Cache,
                                  uint64_t CacheBound, const clang::tooling::CompilationDatabase &DB,
                                  Report &R, DriverStats &DS, bool &AnyWarningsAsErrors) {
  std::vector<std::string> GroupOrder;
  std::map<std::string, std::vector<std::string>> FilesByConfig;
  for (const std::string &F : Inputs) {
    std::string P = ConfigFile.empty() ? findConfigUpward(F) : std::string(ConfigFile);
    if (!FilesByConfig.count(P))
      GroupOrder.push_back(P);
    FilesByConfig[P].push_back(F);
  }
  for (const std::string &CfgPath : GroupOrder) {
    ProjectConfig Cfg;
    if (!CfgPath.empty()) {
      auto Read = readConfig(CfgPath);
      if (!Read) {
        llvm::errs() << llvm::toString(Read.takeError()) << "\n";
        return 2;
      }
      Cfg = std::move(*Read);
    }
    std::string ChecksGlob = !Checks.empty() ? std::string(Checks) : (Cfg.Checks.empty() ? "amp-*" : Cfg.Checks);
    std::string LevelName = !Level.empty() ? std::string(Level) : (Cfg.Level.empty() ? "O2" : Cfg.Level);
    AmpLevel L;
    if (!parseLevel(LevelName, L))
      return fail(2, "unknown level '" + LevelName + "' (valid: O0, O1, O2, O3)");
    std::vector<std::string> AllRules = Cfg.Rules;
    AllRules.insert(AllRules.end(), RuleFiles.begin(), RuleFiles.end());
    auto Rules = loadRules(AllRules);
    if (!Rules) {
      llvm::errs() << llvm::toString(Rules.takeError()) << "\n";
      return 2;
    }

    DriverOptions Opts;
    Opts.Files = FilesByConfig[CfgPath];
    Opts.HeaderFilter = !HeaderFilter.empty() ? std::string(HeaderFilter) : Cfg.HeaderFilter;
    Opts.Jobs = Jobs;
    Opts.Prefilter = !NoPrefilter;
    Opts.SkipBodies = !FullParse;
    Opts.CacheDir = Cache;
    Opts.CacheMaxSize = CacheBound;
    Opts.DeferVerification = VerifyFixes && verificationDeferred();
    Opts.VerifyFixes = VerifyFixes && !Opts.DeferVerification;
    Opts.Progress = Inputs.size() > 1 && llvm::sys::Process::StandardErrIsDisplayed();
    Opts.VerifyBeforeFix = Fix || Diff || !ExportFixes.empty();
    Opts.Engine.Planner.Level = L;
    Opts.Engine.CheckEnabled = [ChecksGlob](llvm::StringRef Id) { return checkEnabledByGlobs(ChecksGlob, Id); };
    Report Part = runDriver(Opts, *Rules, DB, &DS);
    AnyWarningsAsErrors |= Cfg.WarningsAsErrors && !Part.Findings.empty();
    mergeReport(R, std::move(Part));
  }
  return std::nullopt;
}

/// The report in the chosen format, on stdout or (whole or not at all) in --output.
static std::optional<int> emitReport(const Report &R, FileTexts &Texts, llvm::raw_ostream *&OS,
                                     std::string &OutText) {
  llvm::raw_string_ostream OutBuf(OutText);
  OS = Output.empty() ? static_cast<llvm::raw_ostream *>(&llvm::outs()) : &OutBuf;
  EmitOptions EO;
  EO.ToolVersion = AMP_MIGRATE_VERSION;
  EO.ShowFixes = ShowFixes;
  EO.Color = Color == ColorMode::Always ||
             (Color == ColorMode::Auto && Output.empty() && llvm::sys::Process::StandardOutIsDisplayed());
  // With --diff the diff owns stdout; the findings go to stderr.
  llvm::raw_ostream &ReportOS = Diff && Output.empty() ? llvm::errs() : *OS;
  switch (Format) {
  case OutputFormat::Text: emitText(R, Texts, ReportOS, EO); break;
  case OutputFormat::Json: emitJson(R, Texts, ReportOS, EO); break;
  case OutputFormat::Sarif: emitSarif(R, Texts, ReportOS, EO); break;
  case OutputFormat::Github: emitGithub(R, ReportOS); break;
  case OutputFormat::Fixits: emitFixits(R, Texts, ReportOS, EO); break;
  }
  if (!Output.empty())
    if (llvm::Error E = writeOutputFile(Output, OutBuf.str()))
      return fail(2, "cannot write the report: " + llvm::toString(std::move(E)));
  if (!ExportFixes.empty()) {
    std::string Yaml;
    llvm::raw_string_ostream YOS(Yaml);
    emitExportFixes(R, Texts, YOS);
    if (llvm::Error E = writeOutputFile(ExportFixes, YOS.str()))
      return fail(2, "cannot write the fixes: " + llvm::toString(std::move(E)));
  }
  return std::nullopt;
}

/// --fix and --diff: each file's edits over the bytes that were parsed. Returns 3 when a file was
/// not rewritten (or diffed), else 0.
static int applyFixes(const Report &R, FileTexts &Texts, const InputSet &In) {
  int Exit = 0;
  EditSet Edits = collectEdits(R, Texts);
  for (const std::string &Refused : Edits.Refused)
    llvm::errs() << Refused << "\n";
  std::set<std::string> FailedFiles;
  for (const FileOutcome &F : R.Files)
    if (F.Status == FileOutcome::State::Failed)
      FailedFiles.insert(F.File);
  unsigned Changed = 0;
  for (const auto &[Path, Reps] : Edits.ByFile) {
    if (FailedFiles.count(Path))
      continue; // never rewrite a file that failed to parse
    if (!In.mayWrite(Path)) {
      llvm::errs() << Path << ": error: the file (" << fileIdentity(Path)
                   << ") lies outside the directories given; not rewritten\n";
      Exit = 3;
      continue;
    }
    auto Digest = R.ParsedDigests.find(Path);
    if (Digest == R.ParsedDigests.end() || Digest->second.empty()) {
      llvm::errs() << Path << ": error: the translation units that include this file read "
                   << "different contents of it (it changed during the run); not rewritten\n";
      Exit = 3;
      continue;
    }
    // The parsed bytes, edited and (optionally) formatted.
    auto Rewrite = [&, &Path = Path, &Reps = Reps](llvm::StringRef Old) -> llvm::Expected<std::string> {
      auto New = applyEdits(Path, Old, Reps);
      if (!New || FormatStyle == "none")
        return New;
      return formatChangedLines(Path, *New, Reps, FormatStyle);
    };
    if (Diff) {
      const std::string *Old = Texts.get(Path);
      if (!Old || digestOf(*Old) != Digest->second) {
        llvm::errs() << Path << ": error: the file changed since it was analysed; no diff\n";
        Exit = 3;
        continue;
      }
      auto New = Rewrite(*Old);
      if (!New) {
        llvm::errs() << llvm::toString(New.takeError()) << "\n";
        Exit = 3;
        continue;
      }
      if (*New != *Old)
        llvm::outs() << unifiedDiff(Path, *Old, *New);
      continue;
    }
    llvm::Expected<bool> Written = rewriteFileIfUnchanged(Path, Digest->second, Rewrite);
    if (!Written) {
      llvm::errs() << llvm::toString(Written.takeError()) << "\n";
      Exit = 3;
      continue;
    }
    Changed += *Written;
  }
  if (Fix)
    llvm::errs() << "amp-migrate: fixed " << Changed << " file" << (Changed == 1 ? "" : "s") << "\n";
  return Exit;
}

/// Lint, --fix, --diff, --export-fixes over the positional inputs.
static int runTool(const std::vector<std::string> &CompilerArgs) {
  if (Files.empty())
    return fail(2, "no input files (usage: amp-migrate [options] <files...> [-- <compiler args>])");
  if (Fix + Diff > 1)
    return fail(2, "--fix and --diff are exclusive");
  if (std::string RegexError; !HeaderFilter.empty() && !llvm::Regex(HeaderFilter).isValid(RegexError))
    return fail(2, "--header-filter '" + HeaderFilter + "' is not a valid regular expression: " + RegexError);
  if (Jobs == 0)
    return fail(2, "-j must be at least 1");

  llvm::Expected<InputSet> Expanded = expandInputs(std::vector<std::string>(Files.begin(), Files.end()));
  if (!Expanded)
    return fail(2, llvm::toString(Expanded.takeError()));
  for (const std::string &Note : Expanded->Notes)
    llvm::errs() << Note << "\n";
  std::vector<std::string> Inputs = Expanded->Files;
  if (Inputs.empty())
    return fail(2, "no C++ sources (.cpp, .cc, .cxx) in the directories given");
  if (!Shard.empty()) {
    unsigned K, N;
    if (llvm::Error E = parseShard(Shard, K, N))
      return fail(2, llvm::toString(std::move(E)));
    Inputs = selectShard(Inputs, K, N);
  }
  llvm::Expected<std::string> Cache = cacheDirectory();
  if (!Cache)
    return fail(2, llvm::toString(Cache.takeError()));
  std::optional<uint64_t> CacheBound = parseByteSize(CacheMaxSize);
  if (!CacheBound)
    return fail(2, "invalid --cache-max-size '" + CacheMaxSize + "' (a size such as 500M or 2G)");
  std::string DBError;
  auto DB = makeCompilationDatabase(BuildPath, CompilerArgs, Inputs, DBError);
  if (!DB)
    return fail(2, DBError);

  Report R;
  DriverStats DS;
  bool AnyWarningsAsErrors = WarningsAsErrors;
  if (std::optional<int> Error = analyse(Inputs, *Cache, *CacheBound, *DB, R, DS, AnyWarningsAsErrors))
    return *Error;
  if (!BuildPath.empty())
    R.BuildDirectory = BuildPath;

  int Exit = 0;
  for (const FileOutcome &F : R.Files)
    if (F.Status == FileOutcome::State::Failed) {
      llvm::errs() << F.Error << "\n"
                   << "amp-migrate: error: " << F.File << " could not be parsed; it is not analysed or rewritten\n";
      Exit = 3;
    }

  FileTexts Texts;
  // --output and --export-fixes are written whole or not at all (a truncated report reads as a
  // complete one), and a write error is an error of the tool, not a finding.
  std::string OutText;
  llvm::raw_ostream *OS = nullptr;
  if (std::optional<int> Error = emitReport(R, Texts, OS, OutText))
    return *Error;
  if (Fix || Diff)
    Exit = std::max(Exit, applyFixes(R, Texts, *Expanded));
  if (!R.UnverifiedSteps.empty()) {
    OS->flush();
    size_t N = R.UnverifiedSteps.size();
    llvm::errs() << "amp-migrate: note: " << N << (N == 1 ? " step has" : " steps have")
                 << " a rewrite available, not verified in a lint run; --diff, --fix or --export-fixes "
                    "verify it before offering it (--verify-fixes: here)\n";
  }
  if (Stats) {
    OS->flush(); // the report first, then the statistics, also when both go to one terminal
    printStats(R, DS, !Cache->empty(), llvm::errs());
  }
  if (Exit == 0 && AnyWarningsAsErrors && !R.Findings.empty())
    Exit = 1;
  return Exit;
}

/// A full disk or a closed pipe on stdout or stderr: exit 2 (a tool error, not findings), and
/// never LLVM's fatal "IO failure on output stream" when the streams are destroyed at exit.
static int checkStandardStreams(int Exit) {
  llvm::outs().flush();
  if (llvm::outs().has_error()) {
    std::error_code EC = llvm::outs().error();
    llvm::outs().clear_error();
    return fail(2, "cannot write to standard output: " + EC.message());
  }
  if (llvm::errs().has_error()) {
    llvm::errs().clear_error(); // nothing can be said there any more; the status says it
    return 2;
  }
  return Exit;
}

int main(int argc, const char **argv) {
  // Everything after `--` is compiler arguments, like clang-tidy.
  std::vector<const char *> Args;
  std::vector<std::string> CompilerArgs;
  bool HaveDashDash = false;
  for (int I = 0; I < argc; ++I) {
    if (!HaveDashDash && std::string(argv[I]) == "--") {
      HaveDashDash = true;
      continue;
    }
    if (HaveDashDash)
      CompilerArgs.push_back(argv[I]);
    else if (std::string(argv[I]) == "--stats" || std::string(argv[I]) == "-stats")
      Stats = true;
    else
      Args.push_back(argv[I]);
  }
  cl::HideUnrelatedOptions(Cat);
  cl::SetVersionPrinter([](llvm::raw_ostream &OS) {
    OS << "amp-migrate " << AMP_MIGRATE_VERSION << " (LLVM " << LLVM_VERSION_STRING << ")\n";
  });
  std::string ParseErrors;
  llvm::raw_string_ostream ErrOS(ParseErrors);
  if (!cl::ParseCommandLineOptions(Args.size(), Args.data(),
                                   "amp-migrate: find and rewrite autocast + loss-scaler training "
                                   "steps into the explicit-gradient auto_mixed_precision form\n",
                                   &ErrOS)) {
    llvm::errs() << ParseErrors;
    return checkStandardStreams(2);
  }
  if (Lsp) {
    LanguageServerOptions LO;
    LO.RuleFiles.assign(RuleFiles.begin(), RuleFiles.end());
    LO.Level = Level;
    LO.Checks = Checks;
    LO.CompilationDatabasePath = BuildPath;
    LO.ExtraArgs = CompilerArgs;
    LO.VerifyFixes = VerifyFixes;
    return runLanguageServer(LO);
  }
  if (ListChecks || !Explain.empty())
    return checkStandardStreams(describeChecks());
  if (!MergeFixes.empty() || !MergeSarif.empty())
    return checkStandardStreams(runMerge());
  if (ApplyFixes)
    return checkStandardStreams(runApply());
  return checkStandardStreams(runTool(CompilerArgs));
}
