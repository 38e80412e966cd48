// The driver: one frontend action per translation unit, run in parallel, merged into one report.
#include "ampmigrate/Driver.h"
#include "ampmigrate/Checks.h"
#include "ampmigrate/ResultCache.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"
#include <atomic>
#include <mutex>
#include <set>

using namespace clang;
namespace ampmigrate {

std::unique_ptr<tooling::CompilationDatabase>
makeCompilationDatabase(const std::string &BuildPath, const std::vector<std::string> &ExtraArgs,
                        const std::vector<std::string> &Files, std::string &Error) {
  if (!BuildPath.empty()) {
    auto DB = tooling::CompilationDatabase::autoDetectFromDirectory(BuildPath, Error);
    if (!DB)
      Error = BuildPath + ": error: no compilation database (compile_commands.json): " + Error;
    return DB;
  }
  if (!ExtraArgs.empty() || Files.empty())
    return std::make_unique<tooling::FixedCompilationDatabase>(".", ExtraArgs);
  std::string Ignored;
  if (auto DB = tooling::CompilationDatabase::autoDetectFromSource(Files.front(), Ignored))
    return DB;
  llvm::errs() << "amp-migrate: warning: no compile_commands.json found for " << Files.front()
               << " and no '--' arguments; parsing with -std=c++17 only\n";
  return std::make_unique<tooling::FixedCompilationDatabase>(".", std::vector<std::string>{"-std=c++17"});
}

namespace {

/// Which files of a translation unit the user wants analysed.
struct ScopeFilter {
  const SourceManager *SM = nullptr;
  std::optional<llvm::Regex> HeaderRe;
  bool inScope(SourceLocation L) const {
    if (L.isInvalid())
      return false;
    L = SM->getExpansionLoc(L);
    if (SM->isInMainFile(L))
      return true;
    if (!HeaderRe || SM->isInSystemHeader(L))
      return false;
    auto FE = SM->getFileEntryRefForID(SM->getFileID(L));
    return FE && HeaderRe->match(FE->getName());
  }
};

class InactiveRegions : public PPCallbacks {
public:
  explicit InactiveRegions(std::vector<SourceRange> &Out) : Out(Out) {}
  void SourceRangeSkipped(SourceRange Range, SourceLocation) override { Out.push_back(Range); }

private:
  std::vector<SourceRange> &Out;
};

struct TUResult {
  std::vector<Finding> Findings;
};

class AmpConsumer : public ASTConsumer {
public:
  AmpConsumer(CompilerInstance &CI, const RuleSet &Rules, const DriverOptions &Opts,
              std::vector<SourceRange> &Inactive, TUResult &Out)
      : CI(CI), Rules(Rules), Opts(Opts), Inactive(Inactive), Out(Out),
        Skipper(Rules.prefilterTokens()) {
    Filter.SM = &CI.getSourceManager();
    if (!Opts.HeaderFilter.empty())
      Filter.HeaderRe.emplace(Opts.HeaderFilter);
  }

  /// A function body in a file that names no AMP token cannot hold a finding.
  bool shouldSkipFunctionBody(Decl *D) override {
    if (cancelled())
      return true; // the result is discarded: finish the parse as fast as possible
    return Opts.SkipBodies && Skipper.shouldSkip(CI.getSourceManager(), D);
  }

  bool HandleTopLevelDecl(DeclGroupRef DG) override {
    TopLevel.insert(TopLevel.end(), DG.begin(), DG.end());
    return true;
  }

  void HandleTranslationUnit(ASTContext &Ctx) override {
    if (CI.getDiagnostics().hasErrorOccurred() || cancelled())
      return; // never report or rewrite from a broken parse
    // The declarations this parse read at the top level: every one in a whole parse; with a
    // precompiled preamble (the language server), those of the file's body, so that the
    // preamble's headers are never deserialised whole (only the main file is reported there).
    std::vector<Decl *> Scope;
    for (Decl *D : TopLevel)
      if (Filter.inScope(D->getLocation()) || isa<NamespaceDecl, LinkageSpecDecl>(D))
        Scope.push_back(D);
    Ctx.setTraversalScope(Scope);
    const ScopeFilter *F = &Filter;
    Out.Findings = runChecks(Ctx, Rules, [F](SourceLocation L) { return F->inScope(L); }, Inactive,
                             Opts.Engine);
  }

private:
  bool cancelled() const { return Opts.Cancelled && Opts.Cancelled->load(); }

  CompilerInstance &CI;
  const RuleSet &Rules;
  const DriverOptions &Opts;
  std::vector<SourceRange> &Inactive;
  TUResult &Out;
  ScopeFilter Filter;
  HeaderBodySkipper Skipper;
  std::vector<Decl *> TopLevel;
};

class AmpAction : public ASTFrontendAction {
public:
  AmpAction(const RuleSet &Rules, const DriverOptions &Opts, TUResult &Out)
      : Rules(Rules), Opts(Opts), Out(Out) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, StringRef) override {
    CI.getFrontendOpts().SkipFunctionBodies = Opts.SkipBodies;
    CI.getPreprocessor().addPPCallbacks(std::make_unique<InactiveRegions>(Inactive));
    return std::make_unique<AmpConsumer>(CI, Rules, Opts, Inactive, Out);
  }

private:
  const RuleSet &Rules;
  const DriverOptions &Opts;
  TUResult &Out;
  std::vector<SourceRange> Inactive;
};

class AmpActionFactory : public tooling::FrontendActionFactory {
public:
  AmpActionFactory(const RuleSet &Rules, const DriverOptions &Opts, TUResult &Out)
      : Rules(Rules), Opts(Opts), Out(Out) {}
  std::unique_ptr<FrontendAction> create() override {
    return std::make_unique<AmpAction>(Rules, Opts, Out);
  }

private:
  const RuleSet &Rules;
  const DriverOptions &Opts;
  TUResult &Out;
};

/// Quoted and angled includes of a file that resolve inside the project (not system dirs).
void collectProjectHeaders(const std::string &File, const std::vector<std::string> &IncludeDirs,
                           std::set<std::string> &Seen, std::vector<std::string> &Out, int Depth) {
  if (Depth > 32 || !Seen.insert(File).second)
    return;
  auto Buf = llvm::MemoryBuffer::getFile(File);
  if (!Buf)
    return;
  Out.push_back(File);
  StringRef Text = (*Buf)->getBuffer();
  llvm::SmallString<256> Dir(llvm::sys::path::parent_path(File));
  while (!Text.empty()) {
    auto [Line, Rest] = Text.split('\n');
    Text = Rest;
    StringRef L = Line.ltrim();
    if (!L.consume_front("#"))
      continue;
    L = L.ltrim();
    if (!L.consume_front("include"))
      continue;
    L = L.ltrim();
    if (L.size() < 2 || (L[0] != '"' && L[0] != '<'))
      continue;
    char Close = L[0] == '"' ? '"' : '>';
    StringRef Name = L.drop_front().split(Close).first;
    std::vector<std::string> Candidates;
    if (Close == '"') {
      llvm::SmallString<256> P(Dir);
      llvm::sys::path::append(P, Name);
      Candidates.push_back(std::string(P));
    }
    for (const std::string &I : IncludeDirs) {
      llvm::SmallString<256> P(I);
      llvm::sys::path::append(P, Name);
      Candidates.push_back(std::string(P));
    }
    for (const std::string &C : Candidates)
      if (llvm::sys::fs::is_regular_file(C)) {
        collectProjectHeaders(C, IncludeDirs, Seen, Out, Depth + 1);
        break;
      }
  }
}

/// Include directories of installed frameworks (libtorch mentions every AMP name itself) are not
/// project code, even when a build passes them with -I rather than -isystem.
bool isFrameworkIncludeDir(StringRef Dir) {
  return Dir.starts_with("/usr/include") || Dir.starts_with("/usr/local/include") ||
         Dir.starts_with("/usr/lib") || Dir.contains("/site-packages/") ||
         Dir.contains("torch/csrc/api/include") || Dir.ends_with("/torch/include") ||
         Dir.contains("/torch/include/");
}

/// The lexical prefilter: does the main file or a project header mention an AMP token?
bool mayHoldFindings(const tooling::CompileCommand &Cmd, const std::string &File,
                     const std::vector<std::string> &Tokens, const std::map<std::string, std::string> &Overlays) {
  if (auto It = Overlays.find(File); It != Overlays.end() && mentionsAnyToken(It->second, Tokens))
    return true;
  std::vector<std::string> IncludeDirs;
  for (size_t I = 0; I < Cmd.CommandLine.size(); ++I) {
    StringRef A = Cmd.CommandLine[I];
    std::string Dir;
    if (A == "-I" && I + 1 < Cmd.CommandLine.size())
      Dir = Cmd.CommandLine[++I];
    else if (A.starts_with("-I"))
      Dir = A.drop_front(2).str();
    else if (A == "-iquote" && I + 1 < Cmd.CommandLine.size())
      Dir = Cmd.CommandLine[++I];
    else
      continue;
    llvm::SmallString<256> Abs(Dir);
    if (!llvm::sys::path::is_absolute(Abs)) {
      Abs = Cmd.Directory;
      llvm::sys::path::append(Abs, Dir);
    }
    if (!isFrameworkIncludeDir(Abs))
      IncludeDirs.push_back(std::string(Abs));
  }
  std::set<std::string> Seen;
  std::vector<std::string> Files;
  collectProjectHeaders(File, IncludeDirs, Seen, Files, 0);
  for (const std::string &F : Files) {
    auto Buf = llvm::MemoryBuffer::getFile(F);
    if (Buf && mentionsAnyToken((*Buf)->getBuffer(), Tokens))
      return true;
  }
  return Files.empty(); // unreadable: let the parser say why
}

/// CMake's precompiled headers (`-include .../cmake_pch.hxx` next to a compiler-specific .gch)
/// belong to the build, not to the sources: the TU's own includes are what the tool must see.
tooling::ArgumentsAdjuster stripPrecompiledHeaders() {
  return [](const tooling::CommandLineArguments &Args, StringRef) {
    tooling::CommandLineArguments Out;
    for (size_t I = 0; I < Args.size(); ++I) {
      StringRef A = Args[I];
      bool HasValue = I + 1 < Args.size();
      if ((A == "-include" || A == "-include-pch") && HasValue &&
          (StringRef(Args[I + 1]).contains("cmake_pch") || A == "-include-pch")) {
        ++I;
        continue;
      }
      if (A == "-Xclang" && HasValue && (Args[I + 1] == "-include-pch" || Args[I + 1] == "-include")) {
        // -Xclang -include -Xclang <pch>: drop all four.
        if (I + 3 < Args.size() && StringRef(Args[I + 3]).contains("cmake_pch")) {
          I += 3;
          continue;
        }
      }
      if (A == "-Winvalid-pch" || A == "-fpch-preprocess" || A.starts_with("-fpch-instantiate"))
        continue;
      Out.push_back(Args[I]);
    }
    return Out;
  };
}

std::string absolutePath(StringRef P) {
  llvm::SmallString<256> S(P);
  llvm::sys::fs::make_absolute(S);
  llvm::sys::path::remove_dots(S, /*remove_dot_dot=*/true);
  return std::string(S);
}

/// The options that decide a TU's findings, as text for the result cache's key. A field added to
/// the planner's options must be added here too (the static_assert says so).
std::string cacheConfiguration(const DriverOptions &Opts) {
  static_assert(sizeof(PlannerOptions) == sizeof(AmpLevel), "a new planner option: add it to the cache key");
  std::string S = "header-filter=" + Opts.HeaderFilter;
  S += "\nskip-bodies=" + std::to_string(Opts.SkipBodies);
  S += "\nlevel=" + std::to_string(static_cast<int>(Opts.Engine.Planner.Level));
  S += "\nchecks=";
  for (const CheckInfo &C : allChecks())
    S += (Opts.Engine.CheckEnabled(C.Id) ? "+" : "-") + C.Id.str() + ",";
  return S;
}

} // namespace

tooling::ArgumentsAdjuster parseArgumentsAdjuster() {
  tooling::ArgumentsAdjuster A = tooling::getInsertArgumentAdjuster(
      {"-resource-dir=" AMP_CLANG_RESOURCE_DIR, "-Wno-everything"}, tooling::ArgumentInsertPosition::BEGIN);
  for (tooling::ArgumentsAdjuster Next : {tooling::getClangSyntaxOnlyAdjuster(), stripPrecompiledHeaders(),
                                          tooling::getClangStripOutputAdjuster(),
                                          tooling::getClangStripDependencyFileAdjuster()})
    A = tooling::combineAdjusters(std::move(A), std::move(Next));
  return A;
}

bool HeaderBodySkipper::shouldSkip(const SourceManager &SM, const Decl *D) {
  SourceLocation L = SM.getExpansionLoc(D->getLocation());
  if (SM.isInMainFile(L))
    return false;
  FileID F = SM.getFileID(L);
  auto It = FileHasTokens.find(F.getHashValue());
  if (It == FileHasTokens.end()) {
    bool Invalid = false;
    StringRef Text = SM.getBufferData(F, &Invalid);
    It = FileHasTokens.try_emplace(F.getHashValue(), Invalid || mentionsAnyToken(Text, Tokens)).first;
  }
  return !It->second;
}

/// One consistent report: a header finding seen from several TUs appears once.
static void sortAndDeduplicate(Report &R) {
  llvm::sort(R.Findings, [](const Finding &A, const Finding &B) {
    return std::tie(A.Pos.File, A.Pos.Offset, A.Check, A.Message) <
           std::tie(B.Pos.File, B.Pos.Offset, B.Check, B.Message);
  });
  R.Findings.erase(std::unique(R.Findings.begin(), R.Findings.end(),
                               [](const Finding &A, const Finding &B) {
                                 return A.Pos.File == B.Pos.File && A.Pos.Offset == B.Pos.Offset &&
                                        A.Check == B.Check && A.Message == B.Message;
                               }),
                   R.Findings.end());
  llvm::sort(R.Files, [](const FileOutcome &A, const FileOutcome &B) { return A.File < B.File; });
}

void mergeReport(Report &Into, Report &&Part) {
  for (Finding &F : Part.Findings)
    Into.Findings.push_back(std::move(F));
  for (FileOutcome &F : Part.Files)
    Into.Files.push_back(std::move(F));
  sortAndDeduplicate(Into);
}

Report runDriver(const DriverOptions &Opts, const RuleSet &Rules,
                 const tooling::CompilationDatabase &DB, DriverStats *Stats) {
  Report R;
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

  auto RunOne = [&](const std::string &RawFile) {
    std::string File = absolutePath(RawFile);
    FileOutcome O;
    O.File = File;
    std::vector<tooling::CompileCommand> Cmds = DB.getCompileCommands(File);
    if (Cmds.empty())
      Cmds = DB.getCompileCommands(RawFile);
    std::string Key = Cache && !Cmds.empty() ? Cache->commandKey(Rules, CacheConfig, Cmds, Opts.Overlays) : "";
    if (Cmds.empty()) {
      O.Status = FileOutcome::State::Failed;
      O.Error = File + ": error: no compile command for this file in the compilation database";
    } else if (Opts.Prefilter && !mayHoldFindings(Cmds.front(), File, Tokens, Opts.Overlays)) {
      O.Status = FileOutcome::State::Skipped;
    } else if (std::optional<std::vector<Finding>> Hit =
                   Cache ? Cache->lookup(Key) : std::nullopt) {
      std::lock_guard<std::mutex> L(M);
      if (Stats)
        ++Stats->CacheHits;
      for (Finding &F : *Hit)
        R.Findings.push_back(std::move(F));
    } else {
      TUResult Res;
      std::string Diags;
      llvm::raw_string_ostream DiagOS(Diags);
      auto DiagOpts = llvm::makeIntrusiveRefCnt<DiagnosticOptions>();
      TextDiagnosticPrinter Printer(DiagOS, DiagOpts.get());
      struct ErrorsOnly : DiagnosticConsumer {
        TextDiagnosticPrinter &P;
        explicit ErrorsOnly(TextDiagnosticPrinter &P) : P(P) {}
        void BeginSourceFile(const LangOptions &LO, const Preprocessor *PP) override { P.BeginSourceFile(LO, PP); }
        void EndSourceFile() override { P.EndSourceFile(); }
        void HandleDiagnostic(DiagnosticsEngine::Level L, const Diagnostic &Info) override {
          DiagnosticConsumer::HandleDiagnostic(L, Info);
          if (L >= DiagnosticsEngine::Error)
            P.HandleDiagnostic(L, Info);
        }
      } Consumer(Printer);
      // With a cache, the parse runs on a file system that records what it probed and read.
      DependencyLog Deps;
      tooling::ClangTool Tool(DB, {File}, std::make_shared<PCHContainerOperations>(),
                              Cache ? makeRecordingFileSystem(Deps) : llvm::vfs::getRealFileSystem());
      Tool.setPrintErrorMessage(false);
      Tool.setDiagnosticConsumer(&Consumer);
      Tool.appendArgumentsAdjuster(parseArgumentsAdjuster());
      for (const auto &[Path, Text] : Opts.Overlays)
        Tool.mapVirtualFile(Path, Text);
      AmpActionFactory Factory(Rules, Opts, Res);
      int RC = Opts.Parser ? !Opts.Parser(Cmds, File, Factory, Consumer) : Tool.run(&Factory);
      if (RC != 0 || Consumer.getNumErrors() > 0) {
        O.Status = FileOutcome::State::Failed;
        O.Error = Diags.empty() ? File + ": error: the file could not be parsed" : Diags;
        while (!O.Error.empty() && O.Error.back() == '\n')
          O.Error.pop_back();
      } else {
        if (Cache)
          Cache->store(Key, Deps.take(), Res.Findings);
        std::lock_guard<std::mutex> L(M);
        if (Stats && Cache)
          ++Stats->CacheMisses;
        for (Finding &F : Res.Findings)
          R.Findings.push_back(std::move(F));
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
      RunOne(F);
  } else {
    llvm::DefaultThreadPool Pool(llvm::hardware_concurrency(Opts.Jobs));
    for (const std::string &F : Opts.Files)
      Pool.async([&, F] { RunOne(F); });
    Pool.wait();
  }

  if (Cache)
    Cache->trim();
  sortAndDeduplicate(R);
  FileTexts Texts(Opts.Overlays);
  applyNoLint(R.Findings, Texts);
  return R;
}

} // namespace ampmigrate
