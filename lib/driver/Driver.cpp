// The driver: one frontend action per translation unit, run in parallel, merged into one report.
#include "ampmigrate/Driver.h"
#include "ampmigrate/FixApplier.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/FrontendActions.h"
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
#include <optional>
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
  std::map<std::string, std::string> Digests; ///< Report::ParsedDigests of this TU
  unsigned SkippedBodies = 0;
  bool hasFixes() const {
    return llvm::any_of(Findings, [](const Finding &F) { return !F.Fixes.empty(); });
  }
};

/// The compiler names files as it opened them, which may be relative to the compile command's
/// directory (a relative "file" in compile_commands.json): the report names them absolutely, so
/// that --fix writes the file that was parsed and not one at the same path under the current
/// directory. Also records what each edited file held when parsed (Report::ParsedDigests).
void anchorToParsedFiles(CompilerInstance &CI, TUResult &Out) {
  FileManager &FM = CI.getFileManager();
  SourceManager &SM = CI.getSourceManager();
  std::map<std::string, std::string> Absolute; // name as opened -> absolute
  auto Anchor = [&](const std::string &Name) -> const std::string & {
    auto [It, New] = Absolute.try_emplace(Name, Name);
    if (New && !Name.empty()) {
      llvm::SmallString<256> P(Name);
      FM.makeAbsolutePath(P);
      llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
      It->second = std::string(P);
    }
    return It->second;
  };
  for (Finding &F : Out.Findings) {
    F.Pos.File = Anchor(F.Pos.File);
    for (Note &N : F.Notes)
      N.Pos.File = Anchor(N.Pos.File);
    for (tooling::Replacement &R : F.Fixes) {
      std::string Opened = R.getFilePath().str();
      const std::string &File = Anchor(Opened);
      if (!Out.Digests.count(File)) {
        std::string Digest; // none: the file is never written
        if (auto FE = FM.getOptionalFileRef(Opened)) {
          FileID ID = SM.translateFile(*FE);
          bool Invalid = false;
          StringRef Text = ID.isValid() ? SM.getBufferData(ID, &Invalid) : StringRef();
          if (ID.isValid() && !Invalid)
            Digest = digestOf(Text);
        }
        Out.Digests[File] = Digest;
      }
      R = tooling::Replacement(File, R.getOffset(), R.getLength(), R.getReplacementText());
    }
  }
}

/// Adds one TU's digests; a file two TUs read differently gets "" (it is never written).
void mergeDigests(std::map<std::string, std::string> &Into, const std::map<std::string, std::string> &From) {
  for (const auto &[File, Digest] : From) {
    auto [It, New] = Into.try_emplace(File, Digest);
    if (!New && It->second != Digest)
      It->second.clear();
  }
}

/// UTF-16 and UTF-32 text reaches the lexer as NUL-interleaved bytes that mention no AMP name, so
/// the file would pass silently: name the encoding instead. (Clang reads UTF-8 only.)
std::optional<StringRef> unsupportedEncoding(StringRef Text) {
  if (Text.starts_with(StringRef("\xFF\xFE\0\0", 4)) || Text.starts_with(StringRef("\0\0\xFE\xFF", 4)))
    return StringRef("UTF-32");
  if (Text.starts_with("\xFF\xFE") || Text.starts_with("\xFE\xFF"))
    return StringRef("UTF-16");
  // No byte order mark: ASCII text in UTF-16 has a NUL in every other byte.
  StringRef Head = Text.take_front(512);
  if (Head.size() >= 8) {
    unsigned Even = 0, Odd = 0;
    for (size_t I = 0; I < Head.size(); ++I)
      if (Head[I] == '\0')
        ++(I % 2 ? Odd : Even);
    if (std::max(Even, Odd) * 8 >= Head.size() * 3 && std::min(Even, Odd) == 0)
      return StringRef("UTF-16");
  }
  return std::nullopt;
}

class AmpConsumer : public ASTConsumer {
public:
  AmpConsumer(CompilerInstance &CI, const RuleSet &Rules, const DriverOptions &Opts,
              std::vector<SourceRange> &Inactive, TUResult &Out)
      : CI(CI), Rules(Rules), Opts(Opts), Inactive(Inactive), Out(Out),
        Tokens(Rules.prefilterTokens()) {
    Filter.SM = &CI.getSourceManager();
    if (!Opts.HeaderFilter.empty())
      Filter.HeaderRe.emplace(Opts.HeaderFilter);
  }

  /// A function body in a file that names no AMP token cannot hold a finding.
  bool shouldSkipFunctionBody(Decl *D) override {
    if (!Opts.SkipBodies)
      return false;
    const SourceManager &SM = CI.getSourceManager();
    SourceLocation L = SM.getExpansionLoc(D->getLocation());
    if (SM.isInMainFile(L))
      return false;
    FileID F = SM.getFileID(L);
    auto It = FileHasTokens.find(F);
    if (It == FileHasTokens.end()) {
      bool Invalid = false;
      StringRef Text = SM.getBufferData(F, &Invalid);
      It = FileHasTokens.try_emplace(F, Invalid || mentionsAnyToken(Text, Tokens)).first;
    }
    if (It->second)
      return false;
    ++Out.SkippedBodies;
    return true;
  }

  void HandleTranslationUnit(ASTContext &Ctx) override {
    if (CI.getDiagnostics().hasErrorOccurred())
      return; // never report or rewrite from a broken parse
    std::vector<Decl *> Scope;
    for (Decl *D : Ctx.getTranslationUnitDecl()->decls())
      if (Filter.inScope(D->getLocation()) || isa<NamespaceDecl, LinkageSpecDecl>(D))
        Scope.push_back(D);
    Ctx.setTraversalScope(Scope);
    const ScopeFilter *F = &Filter;
    Out.Findings = runChecks(Ctx, Rules, [F](SourceLocation L) { return F->inScope(L); }, Inactive,
                             Opts.Engine);
    anchorToParsedFiles(CI, Out);
  }

private:
  CompilerInstance &CI;
  const RuleSet &Rules;
  const DriverOptions &Opts;
  std::vector<SourceRange> &Inactive;
  TUResult &Out;
  ScopeFilter Filter;
  std::vector<std::string> Tokens;
  llvm::DenseMap<FileID, bool> FileHasTokens;
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

/// Parses one TU with `Factory`'s action; false (and the compiler's errors in `Diags`) when the
/// file does not compile.
bool parseOnce(const tooling::CompilationDatabase &DB, const std::string &File,
               const DriverOptions &Opts, tooling::FrontendActionFactory &Factory, std::string &Diags) {
  Diags.clear();
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
  tooling::ClangTool Tool(DB, {File});
  Tool.setPrintErrorMessage(false);
  Tool.setDiagnosticConsumer(&Consumer);
  Tool.appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(
      {"-resource-dir=" AMP_CLANG_RESOURCE_DIR, "-Wno-everything"},
      tooling::ArgumentInsertPosition::BEGIN));
  Tool.appendArgumentsAdjuster(tooling::getClangSyntaxOnlyAdjuster());
  Tool.appendArgumentsAdjuster(stripPrecompiledHeaders());
  Tool.appendArgumentsAdjuster(tooling::getClangStripOutputAdjuster());
  for (const auto &[Path, Text] : Opts.Overlays)
    Tool.mapVirtualFile(Path, Text);
  int RC = Tool.run(&Factory);
  DiagOS.flush();
  return RC == 0 && Consumer.getNumErrors() == 0;
}

/// The encoding of the main file when it is one clang cannot read (UTF-16, UTF-32).
std::optional<StringRef> encodingProblem(const std::string &File) {
  auto Buf = llvm::MemoryBuffer::getFile(File, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return std::nullopt; // the parser says why
  return unsupportedEncoding((*Buf)->getBuffer());
}

} // namespace

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
  mergeDigests(Into.ParsedDigests, Part.ParsedDigests);
  sortAndDeduplicate(Into);
}

Report runDriver(const DriverOptions &Opts, const RuleSet &Rules,
                 const tooling::CompilationDatabase &DB) {
  Report R;
  std::mutex M;
  std::vector<std::string> Tokens = Rules.prefilterTokens();
  std::atomic<unsigned> Done{0};
  size_t Total = Opts.Files.size();

  auto RunOne = [&](const std::string &RawFile) {
    std::string File = absolutePath(RawFile);
    FileOutcome O;
    O.File = File;
    std::vector<tooling::CompileCommand> Cmds = DB.getCompileCommands(File);
    if (Cmds.empty())
      Cmds = DB.getCompileCommands(RawFile);
    if (Cmds.empty()) {
      O.Status = FileOutcome::State::Failed;
      O.Error = File + ": error: no compile command for this file in the compilation database";
    } else if (StringRef(File).contains('\\')) {
      // ClangTool makes paths "native", which on POSIX turns '\' into '/': it would parse, and
      // --fix would write, another file.
      O.Status = FileOutcome::State::Failed;
      O.Error = File + ": error: a file name containing '\\' is not supported (clang's tooling "
                       "reads it as '/', another file)";
    } else if (std::optional<StringRef> Enc = encodingProblem(File)) {
      O.Status = FileOutcome::State::Failed;
      O.Error = File + ": error: the file is " + Enc->str() +
                " encoded; amp-migrate reads UTF-8 (or ASCII) sources only";
    } else if (Opts.Prefilter && !mayHoldFindings(Cmds.front(), File, Tokens, Opts.Overlays)) {
      O.Status = FileOutcome::State::Skipped;
    } else {
      TUResult Res;
      std::string Diags;
      AmpActionFactory Factory(Rules, Opts, Res);
      bool Parsed = parseOnce(DB, File, Opts, Factory, Diags);
      // Errors in header bodies the fast path skipped are invisible to it; a TU that is going to
      // be rewritten is parsed again in full first (a file that does not compile is never fixed).
      if (Parsed && Opts.VerifyBeforeFix && Res.SkippedBodies > 0 && Res.hasFixes()) {
        DriverOptions Full = Opts;
        Full.SkipBodies = false;
        std::unique_ptr<tooling::FrontendActionFactory> SyntaxOnly =
            tooling::newFrontendActionFactory<SyntaxOnlyAction>();
        Parsed = parseOnce(DB, File, Full, *SyntaxOnly, Diags);
      }
      if (!Parsed) {
        O.Status = FileOutcome::State::Failed;
        O.Error = Diags.empty() ? File + ": error: the file could not be parsed" : Diags;
        while (!O.Error.empty() && O.Error.back() == '\n')
          O.Error.pop_back();
      } else {
        std::lock_guard<std::mutex> L(M);
        for (Finding &F : Res.Findings)
          R.Findings.push_back(std::move(F));
        mergeDigests(R.ParsedDigests, Res.Digests);
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

  sortAndDeduplicate(R);
  FileTexts Texts(Opts.Overlays);
  applyNoLint(R.Findings, Texts);
  return R;
}

} // namespace ampmigrate
