// The driver: one frontend action per translation unit, run in parallel, merged into one report.
#include "ampmigrate/Driver.h"
#include "DriverInternal.h"
#include "ampmigrate/Checks.h"
#include "ampmigrate/InputFiles.h"
#include "ampmigrate/ResultCache.h"

#include "clang/Frontend/FrontendActions.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/thread.h"
#include "llvm/Support/raw_ostream.h"
#include <atomic>
#include <mutex>
#include <optional>
#include <set>

using namespace clang;
namespace ampmigrate {
namespace driver {

bool cancelled(const DriverOptions &Opts) { return Opts.Cancelled && Opts.Cancelled->load(); }

namespace {

/// The options that decide a TU's findings, as text for the result cache's key. A field added to
/// the planner's options must be added here too (the static_assert says so).
std::string cacheConfiguration(const DriverOptions &Opts) {
  static_assert(sizeof(PlannerOptions) == sizeof(AmpLevel), "a new planner option: add it to the cache key");
  std::string S = "header-filter=" + Opts.HeaderFilter;
  S += "\nskip-bodies=" + std::to_string(Opts.SkipBodies);
  S += "\nlevel=" + std::to_string(static_cast<int>(Opts.Engine.Planner.Level));
  // The verification withdraws fixes (and reports why) by what the runtime's headers declare.
  // A run that defers it shares the key of a verifying run: the entry says which it holds
  // (CachedTU::FixesDeferred), and a verifying run never takes a deferred one.
  bool Verifying = Opts.VerifyFixes || Opts.DeferVerification;
  S += "\nverify-fixes=" + std::to_string(Verifying);
  if (Verifying)
    for (const std::string &A : runtimeIncludeArgs())
      S += " " + A;
  S += "\nchecks=";
  for (const CheckInfo &C : allChecks())
    S += (Opts.Engine.CheckEnabled(C.Id) ? "+" : "-") + C.Id.str() + ",";
  return S;
}

/// What the analysis of a file under its compile commands gave.
struct FileAnalysis {
  std::string Error; ///< the parse failed: the compiler's errors
  TUResult Result;
  bool BodiesUnchecked = false; ///< header bodies skipped and not parsed since (ResultCache)
};

/// Parses and analyses `File` under `Cmds` (one compile command, or the language server's), then
/// parses it in full if it is going to be rewritten and skipped bodies, and verifies its fixes.
/// `Try`: through a precompiled preamble where it can (PreambleTU), `Deps` recording its reads.
FileAnalysis analyseCommand(const tooling::CompilationDatabase &DB, const std::vector<tooling::CompileCommand> &Cmds,
                            const std::string &File, const RuleSet &Rules, const DriverOptions &Opts,
                            const llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> &FS, DependencyLog *Deps,
                            bool Try, unsigned SharedPrefix) {
  FileAnalysis Out;
  TUResult &Res = Out.Result;
  std::unique_ptr<PreambleTU> Fast =
      Try && preamblePathEnabled(Opts) ? PreambleTU::open(Cmds.front(), File, Rules, Opts, FS, Deps, SharedPrefix)
                                       : nullptr;
  if (Fast) {
    AmpActionFactory Factory(Rules, Opts, Res);
    ErrorCollector Errors;
    bool Parsed = Fast->analyse(Factory, Errors);
    Res.SkippedBodies += Fast->skippedBodies();
    // A parse with errors, or fixes that edit a header: the whole-parse path decides, as before
    // (its errors, and its verification of edited headers).
    bool Headers = llvm::any_of(Res.Fixes, [&](const StepFix &F) {
      return llvm::any_of(F.Edits, [&](const tooling::Replacement &R) { return absolutePath(R.getFilePath()) != File; });
    });
    if (!Parsed || Headers)
      return analyseCommand(DB, Cmds, File, Rules, Opts, FS, Deps, /*Try=*/false, 0);
  } else {
    AmpActionFactory Factory(Rules, Opts, Res);
    ErrorCollector Errors;
    bool Parsed = Opts.Parser ? Opts.Parser(Cmds, File, Factory, Errors)
                              : parseTU(DB, File, Opts.Overlays, {}, Factory, Errors, FS);
    Errors.OS.flush();
    Parsed = Parsed && Errors.getNumErrors() == 0;
    if (!Parsed) {
      Out.Error = Errors.Text.empty() ? File + ": error: the file could not be parsed" : Errors.Text;
      while (!Out.Error.empty() && Out.Error.back() == '\n')
        Out.Error.pop_back();
      return Out;
    }
  }
  bool Parsed = true;
  ErrorCollector Errors;
  Out.BodiesUnchecked = Res.SkippedBodies > 0 && Res.hasFixes() && !Opts.VerifyBeforeFix;
  // Errors in header bodies the fast path skipped are invisible to it; a TU that is going to
  // be rewritten is parsed again in full first (a file that does not compile is never fixed).
  // Where other files of the run share the preamble's lines, against a preamble of them that
  // holds every body and the headers' instantiations (built once for all of them); else whole.
  if (Parsed && Opts.VerifyBeforeFix && Res.SkippedBodies > 0 && Res.hasFixes()) {
    Errors.Text.clear();
    ErrorCollector Full; // its text is not reported
    std::optional<bool> Checked =
        Fast && SharedPrefix > 0 && sharedPrefixesEnabled() ? Fast->checkInFull(Full) : std::nullopt;
    // (A file that fails is parsed whole too, for the errors to read as a whole parse reports them.)
    if (!Checked || !*Checked) {
      std::unique_ptr<tooling::FrontendActionFactory> SyntaxOnly =
          tooling::newFrontendActionFactory<SyntaxOnlyAction>();
      ErrorCollector Whole;
      Checked = parseTU(DB, File, Opts.Overlays, {}, *SyntaxOnly, Whole, FS);
      Errors.Text = Whole.Text;
    }
    Parsed = *Checked;
  }
  if (!Parsed) {
    Out.Error = Errors.Text.empty() ? File + ": error: the file could not be parsed" : Errors.Text;
    while (!Out.Error.empty() && Out.Error.back() == '\n')
      Out.Error.pop_back();
    return Out;
  }
  if (Opts.VerifyFixes && !Opts.Unfinished)
    verifyFixes(Res, DB, File, Opts, FS, Fast.get());
  return Out;
}

/// Every configuration of `File` (each compile command the database has for it) analysed on its
/// own, then agreed on (agreeOnFixes): a step is fixed only as every configuration would fix it.
/// The language server's parser takes the commands together, as before.
FileAnalysis analyseFile(const tooling::CompilationDatabase &DB, const std::vector<tooling::CompileCommand> &Cmds,
                         const std::string &File, const RuleSet &Rules, const DriverOptions &Opts,
                         const llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> &FS, DependencyLog *Deps,
                         unsigned SharedPrefix) {
  // A preamble costs more than the whole parse it replaces (the includes are parsed, then
  // written as a PCH); it pays where the fixes are verified (the includes are not parsed a second
  // time) or where other TUs of the run reuse it.
  bool Try = (Opts.VerifyFixes && !Opts.Unfinished) || SharedPrefix > 0;
  if (Opts.Parser || Cmds.size() == 1)
    return analyseCommand(DB, Cmds, File, Rules, Opts, FS, Deps, Try, SharedPrefix);
  FileAnalysis Out;
  std::vector<std::string> Labels = configurationLabels(Cmds);
  std::vector<Analysis> Parts;
  for (size_t I = 0; I < Cmds.size(); ++I) {
    std::unique_ptr<tooling::CompilationDatabase> One = databaseOf(Cmds[I]);
    FileAnalysis A = analyseCommand(*One, {Cmds[I]}, File, Rules, Opts, FS, Deps, Try, 0);
    if (!A.Error.empty()) {
      Out.Error = A.Error + "\n" + File + ": note: under " + Labels[I];
      return Out;
    }
    Out.BodiesUnchecked |= A.BodiesUnchecked;
    Parts.push_back({Labels[I], std::move(A.Result), File});
  }
  Out.Result = agreeOnFixes(std::move(Parts), Opts);
  return Out;
}

/// Clang's parser and the analysis's walks recurse once per level of an expression: 3,000 nested
/// parentheses, or an operator chain of 10,000 links, overflow a thread's usual 8 MiB (2 MiB
/// already at 5,000 links), several times sooner in a sanitizer build. Each translation unit runs
/// on a thread with this much stack: address space reserved, not memory used.
constexpr unsigned TranslationUnitStack = 512u << 20;

void runOnLargeStack(llvm::function_ref<void()> Fn) {
  llvm::thread T(std::optional<unsigned>(TranslationUnitStack), [Fn] { Fn(); });
  T.join();
}

} // namespace
} // namespace driver
using namespace driver;

Report runDriver(const DriverOptions &Opts, const RuleSet &Rules,
                 const tooling::CompilationDatabase &DB, DriverStats *Stats) {
  Report R;
  std::vector<Analysis> Parts; // each translation unit's result
  std::mutex M;
  std::vector<std::string> Tokens = Rules.prefilterTokens();
  std::atomic<unsigned> Done{0};
  size_t Total = Opts.Files.size();
  std::optional<ResultCache> Cache;
  std::string CacheConfig;
  if (!Opts.CacheDir.empty()) {
    Cache.emplace(Opts.CacheDir, Opts.CacheMaxSize);
    CacheConfig = cacheConfiguration(Opts);
  }

  // The files whose first include lines (under the same flags) another file of the run starts
  // with, and how many bytes they share.
  std::map<std::string, unsigned> SharedIncludes;
  if (Opts.Files.size() > 1 && preamblePathEnabled(Opts))
    SharedIncludes = sharedIncludePrefixes(DB, Opts);

  auto RunOne = [&](const std::string &RawFile) {
    FileCommands Resolved = resolveFileCommands(DB, RawFile, Opts.Overlays);
    const std::string &File = Resolved.File;
    const std::vector<tooling::CompileCommand> &Cmds = Resolved.Commands;
    std::string &Problem = Resolved.Problem;
    FileOutcome O;
    O.File = File;
    std::string Key = Cache && Problem.empty() ? Cache->commandKey(Rules, CacheConfig, Cmds, Opts.Overlays) : "";
    if (!Problem.empty()) {
      O.Status = FileOutcome::State::Failed;
      O.Error = std::move(Problem);
    } else if (Opts.Prefilter && !mayHoldFindings(Cmds.front(), File, Tokens, Opts.Overlays)) {
      O.Status = FileOutcome::State::Skipped;
    } else if (std::optional<CachedTU> Hit = Cache ? Cache->lookup(Key) : std::nullopt;
               Hit && !(Opts.VerifyBeforeFix && Hit->BodiesUnchecked) && !(Opts.VerifyFixes && Hit->FixesDeferred)) {
      // (An entry of a run that did not fix, whose header bodies were never parsed, is a miss
      // for a run that fixes: it parses them first. An entry whose fixes a lint run left
      // unverified is a miss for a run that verifies.)
      // What a miss leaves after verification: the same NOLINT and attachFixes below apply.
      std::lock_guard<std::mutex> L(M);
      if (Stats)
        ++Stats->CacheHits;
      TUResult Res;
      Res.Findings = std::move(Hit->Findings);
      Res.Fixes = std::move(Hit->Fixes);
      Res.Digests = std::move(Hit->Digests);
      Res.FixesDeferred = Hit->FixesDeferred;
      Res.Summaries = std::move(Hit->Summaries);
      Res.UnknownCallees = std::move(Hit->UnknownCallees);
      Parts.push_back({"the translation unit " + File, std::move(Res), File});
    } else {
      // With a cache, the parses (and the verification's) run on a file system that records what
      // they probed and read. Either has a working directory of its own: ClangTool moves to each
      // compile command's directory, which on the process-wide real file system would move every
      // other thread of -j (relative inputs then named files under the build directory).
      DependencyLog Deps;
      llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS =
          Cache ? makeRecordingFileSystem(Deps)
                : llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(
                      llvm::vfs::createPhysicalFileSystem().release());
      auto Shared = SharedIncludes.find(File);
      FileAnalysis A = analyseFile(DB, Cmds, File, Rules, Opts, FS, Cache ? &Deps : nullptr,
                                   Shared == SharedIncludes.end() ? 0 : Shared->second);
      if (!A.Error.empty()) {
        O.Status = FileOutcome::State::Failed;
        O.Error = std::move(A.Error);
      } else {
        TUResult &Res = A.Result;
        Res.FixesDeferred = Opts.DeferVerification && Res.hasFixes();
        if (Cache && !cancelled(Opts))
          Cache->store(Key, Deps.take(),
                       CachedTU{Res.Findings, Res.Fixes, Res.Digests, A.BodiesUnchecked, Res.FixesDeferred,
                                Res.Summaries, Res.UnknownCallees});
        std::lock_guard<std::mutex> L(M);
        if (Stats && Cache)
          ++Stats->CacheMisses;
        Parts.push_back({"the translation unit " + File, std::move(Res), File});
      }
    }
    std::lock_guard<std::mutex> L(M);
    R.Files.push_back(std::move(O));
    unsigned N = ++Done;
    if (Opts.Progress)
      llvm::errs() << "[" << N << "/" << Total << "] " << RawFile << "\n";
  };

  if (Opts.Jobs <= 1 || Opts.Files.size() <= 1) {
    for (const std::string &F : Opts.Files)
      runOnLargeStack([&] { RunOne(F); });
  } else {
    llvm::DefaultThreadPool Pool(llvm::hardware_concurrency(Opts.Jobs));
    for (const std::string &F : Opts.Files)
      Pool.async([&, F] { runOnLargeStack([&] { RunOne(F); }); });
    Pool.wait();
  }

  // A callee whose body is in another file is judged by that file's summary: the TUs that asked
  // about one are analysed again with the run's summaries (not cached: the entry of their first
  // analysis, with its questions, is what a later run starts from).
  SummaryIndex Index;
  answerCallees(Parts, DB, Rules, Opts,
                [&](const std::string &File, const SummaryIndex &Known) -> std::optional<TUResult> {
                  DriverOptions Again = Opts;
                  Again.Engine.RunSummaries = &Known;
                  FileCommands Resolved = resolveFileCommands(DB, File, Opts.Overlays);
                  if (!Resolved.Problem.empty())
                    return std::nullopt;
                  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS(llvm::vfs::createPhysicalFileSystem().release());
                  std::optional<FileAnalysis> A;
                  runOnLargeStack([&] {
                    A = analyseFile(DB, Resolved.Commands, Resolved.File, Rules, Again, FS, nullptr, 0);
                  });
                  if (!A->Error.empty())
                    return std::nullopt;
                  A->Result.FixesDeferred = Opts.DeferVerification && A->Result.hasFixes();
                  return std::move(A->Result);
                },
                Index);

  // A header's step seen from several translation units is fixed only if they all fix it alike.
  llvm::sort(Parts, [](const Analysis &A, const Analysis &B) { return A.Label < B.Label; });
  // A step some TU left unverified is unverified (the TUs that verified it say nothing of it).
  for (const Analysis &A : Parts)
    if (A.Result.FixesDeferred)
      for (const StepFix &F : A.Result.Fixes)
        R.UnverifiedSteps.insert(F.StepId);
  TUResult All = agreeOnFixes(std::move(Parts), Opts);
  R.Findings = std::move(All.Findings);
  R.StepFixes = std::move(All.Fixes);
  R.ParsedDigests = std::move(All.Digests);

  if (Cache)
    Cache->trim();
  sortAndDeduplicate(R);
  if (!Opts.Unfinished)
    finishReport(R, Opts);
  return R;
}

} // namespace ampmigrate
