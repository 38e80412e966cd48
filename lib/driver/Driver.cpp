// The driver: one frontend action per translation unit, run in parallel, merged into one report.
#include "ampmigrate/Driver.h"
#include "ampmigrate/EditMerge.h"
#include "ampmigrate/Checks.h"
#include "ampmigrate/FixApplier.h"
#include "ampmigrate/ResultCache.h"
#include "ampmigrate/StepFinder.h"

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
#include <cassert>
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

/// What the driver keeps of one translation unit: the engine's findings and, beside them, the
/// fixes of each step; what each edited file held when parsed; how many header bodies were skipped.
struct TUResult {
  std::vector<Finding> Findings;
  std::vector<StepFix> Fixes;
  std::map<std::string, std::string> Digests; ///< Report::ParsedDigests of this TU
  unsigned SkippedBodies = 0;
  bool hasFixes() const { return !Fixes.empty(); }
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
  }
  for (StepFix &Fix : Out.Fixes) {
    for (tooling::Replacement &R : Fix.Edits) {
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

bool cancelled(const DriverOptions &Opts) { return Opts.Cancelled && Opts.Cancelled->load(); }

class AmpConsumer : public ASTConsumer {
public:
  AmpConsumer(CompilerInstance &CI, const RuleSet &Rules, const DriverOptions &Opts,
              std::vector<SourceRange> &Inactive, TUResult &Out)
      : CI(CI), Rules(Rules), Opts(Opts), Inactive(Inactive), Out(Out),
        Skipper(Rules) {
    Filter.SM = &CI.getSourceManager();
    if (!Opts.HeaderFilter.empty())
      Filter.HeaderRe.emplace(Opts.HeaderFilter);
  }

  /// A function body in a header that names no AMP token (the rules' or a learned class's name)
  /// cannot hold a finding (HeaderBodySkipper).
  bool shouldSkipFunctionBody(Decl *D) override {
    if (cancelled())
      return true; // the result is discarded: finish the parse as fast as possible
    if (!Opts.SkipBodies || !Skipper.shouldSkip(CI.getSourceManager(), D))
      return false;
    ++Out.SkippedBodies;
    return true;
  }

  /// Keeps the top-level declarations for the traversal scope, and learns the guard and scaler
  /// classes they complete for the body-skipping rule.
  bool HandleTopLevelDecl(DeclGroupRef DG) override {
    TopLevel.insert(TopLevel.end(), DG.begin(), DG.end());
    if (Opts.SkipBodies)
      Skipper.learn(CI.getSourceManager(), DG);
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
    EngineResult E = runChecks(Ctx, Rules, [F](SourceLocation L) { return F->inScope(L); }, Inactive,
                               Opts.Engine);
    Out.Findings = std::move(E.Findings);
    Out.Fixes = std::move(E.Fixes);
    anchorToParsedFiles(CI, Out);
  }

private:
  bool cancelled() const { return ampmigrate::cancelled(Opts); }

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

std::string absolutePath(StringRef P) {
  llvm::SmallString<256> S(P);
  llvm::sys::fs::make_absolute(S);
  llvm::sys::path::remove_dots(S, /*remove_dot_dot=*/true);
  return std::string(S);
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

/// Where the verification parse finds the runtime's headers (<amp/torch.h>) when the project's
/// compile command does not name them yet (it did not need them before the migration): next to
/// the installed tool (<prefix>/include), else the source and build trees it was built from.
/// Searched after everything the command names (-idirafter).
std::vector<std::string> runtimeIncludeArgs() {
  std::vector<std::string> Dirs;
  std::string Exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  llvm::SmallString<256> Installed(llvm::sys::path::parent_path(llvm::sys::path::parent_path(Exe)));
  llvm::sys::path::append(Installed, "include");
  llvm::SmallString<256> Probe(Installed);
  llvm::sys::path::append(Probe, "amp", "torch.h");
  if (!Exe.empty() && llvm::sys::fs::exists(Probe)) {
    Dirs.push_back(std::string(Installed));
  } else {
    llvm::SmallVector<StringRef, 4> Parts;
    StringRef(AMP_RUNTIME_BUILD_INCLUDE_DIRS).split(Parts, '|', -1, false);
    for (StringRef P : Parts)
      Dirs.push_back(P.str());
  }
  std::vector<std::string> Args;
  for (const std::string &D : Dirs) {
    Args.push_back("-idirafter");
    Args.push_back(D);
  }
  return Args;
}

/// The verification parse of a rewritten translation unit: bodies of functions in files that no
/// edit touched are skipped (they compiled before and nothing in them changed).
class VerifyConsumer : public ASTConsumer {
public:
  VerifyConsumer(CompilerInstance &CI, const std::set<std::string> &Edited, const std::atomic<bool> *Cancelled)
      : CI(CI), Edited(Edited), Cancelled(Cancelled) {}
  /// A cancelled verification (the language server: a newer version of the file) stops at the
  /// next top-level declaration (ParseAST ends when this returns false); its result is discarded.
  bool HandleTopLevelDecl(DeclGroupRef) override { return !cancelled(); }
  bool shouldSkipFunctionBody(Decl *D) override {
    if (cancelled())
      return true;
    const SourceManager &SM = CI.getSourceManager();
    SourceLocation L = SM.getExpansionLoc(D->getLocation());
    if (SM.isInMainFile(L))
      return false;
    auto FE = SM.getFileEntryRefForID(SM.getFileID(L));
    return !FE || !Edited.count(absolutePath(FE->getName()));
  }

private:
  bool cancelled() const { return Cancelled && Cancelled->load(); }
  CompilerInstance &CI;
  const std::set<std::string> &Edited;
  const std::atomic<bool> *Cancelled;
};

class VerifyActionFactory : public tooling::FrontendActionFactory {
public:
  VerifyActionFactory(const std::set<std::string> &Edited, const std::atomic<bool> *Cancelled)
      : Edited(Edited), Cancelled(Cancelled) {}
  std::unique_ptr<FrontendAction> create() override {
    struct Action : ASTFrontendAction {
      const std::set<std::string> &Edited;
      const std::atomic<bool> *Cancelled;
      Action(const std::set<std::string> &Edited, const std::atomic<bool> *Cancelled)
          : Edited(Edited), Cancelled(Cancelled) {}
      std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, StringRef) override {
        CI.getFrontendOpts().SkipFunctionBodies = true;
        return std::make_unique<VerifyConsumer>(CI, Edited, Cancelled);
      }
    };
    return std::make_unique<Action>(Edited, Cancelled);
  }

private:
  const std::set<std::string> &Edited;
  const std::atomic<bool> *Cancelled;
};

/// Collects error diagnostics as clang prints them ("file:line:col: error: ...").
struct ErrorCollector : DiagnosticConsumer {
  std::string Text;
  llvm::raw_string_ostream OS{Text};
  llvm::IntrusiveRefCntPtr<DiagnosticOptions> DiagOpts = llvm::makeIntrusiveRefCnt<DiagnosticOptions>();
  TextDiagnosticPrinter Printer{OS, DiagOpts.get()};
  void BeginSourceFile(const LangOptions &LO, const Preprocessor *PP) override { Printer.BeginSourceFile(LO, PP); }
  void EndSourceFile() override { Printer.EndSourceFile(); }
  void HandleDiagnostic(DiagnosticsEngine::Level L, const Diagnostic &Info) override {
    DiagnosticConsumer::HandleDiagnostic(L, Info);
    if (L >= DiagnosticsEngine::Error)
      Printer.HandleDiagnostic(L, Info);
  }
};

/// Parses `File` as the driver does (its compile command, syntax only, the editor's overlays and
/// `Extra` files mapped over `FS`). Returns false when the parse had errors.
bool parseTU(const tooling::CompilationDatabase &DB, const std::string &File,
             const std::map<std::string, std::string> &Overlays,
             const std::map<std::string, std::string> &Extra, tooling::FrontendActionFactory &Factory,
             ErrorCollector &Errors, llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS,
             const std::vector<std::string> &ExtraArgs = {}) {
  tooling::ClangTool Tool(DB, {File}, std::make_shared<PCHContainerOperations>(), std::move(FS));
  Tool.setPrintErrorMessage(false);
  Tool.setDiagnosticConsumer(&Errors);
  Tool.appendArgumentsAdjuster(parseArgumentsAdjuster());
  if (!ExtraArgs.empty())
    Tool.appendArgumentsAdjuster(
        tooling::getInsertArgumentAdjuster(ExtraArgs, tooling::ArgumentInsertPosition::END));
  for (const auto &[Path, Text] : Overlays)
    if (!Extra.count(Path))
      Tool.mapVirtualFile(Path, Text);
  for (const auto &[Path, Text] : Extra)
    Tool.mapVirtualFile(Path, Text);
  int RC = Tool.run(&Factory);
  Errors.OS.flush();
  return RC == 0 && Errors.getNumErrors() == 0;
}

/// The texts of the files `Fixes` edit, with the edits applied; an empty map and `Error` set when
/// the edits cannot be applied together.
std::map<std::string, std::string> rewrittenTexts(const std::vector<const StepFix *> &Fixes,
                                                  SourceTexts &Texts, std::string &Error) {
  EditMerge Merge;
  for (const StepFix *Fix : Fixes) {
    std::vector<tooling::Replacement> Unit;
    for (const tooling::Replacement &R : Fix->Edits)
      Unit.emplace_back(absolutePath(R.getFilePath()), R.getOffset(), R.getLength(),
                        R.getReplacementText());
    if (std::optional<EditOverlap> O = Merge.add(Unit)) {
      Error = "its edits conflict: " + overlapText(*O);
      return {};
    }
  }
  std::map<std::string, std::string> Out;
  for (const auto &[File, Reps] : Merge.byFile()) {
    const std::string *Text = Texts.get(File);
    if (!Text) {
      Error = File + " cannot be read";
      return {};
    }
    llvm::Expected<std::string> New = tooling::applyAllReplacements(*Text, Reps);
    if (!New) {
      Error = llvm::toString(New.takeError());
      return {};
    }
    Out[File] = std::move(*New);
  }
  return Out;
}

/// "file:line:col: error: message" -> "line L of the rewritten <name>: message".
std::string describeFirstError(StringRef Diags) {
  for (StringRef Line : llvm::split(Diags, '\n')) {
    size_t At = Line.find(": error: ");
    size_t Skip = 9;
    if (At == StringRef::npos) {
      At = Line.find(": fatal error: ");
      Skip = 15;
    }
    if (At == StringRef::npos)
      continue;
    StringRef Where = Line.take_front(At), Message = Line.drop_front(At + Skip);
    auto [RestCol, Col] = Where.rsplit(':');
    auto [Path, LineNo] = RestCol.rsplit(':');
    return "error: " + Message.str() + " (line " + LineNo.str() + " of the rewritten " +
           llvm::sys::path::filename(Path).str() + ")";
  }
  return "the rewritten file does not parse";
}

/// Re-parses the translation unit with the edits applied in memory; returns why it fails, or "".
std::string whyFixesFail(const tooling::CompilationDatabase &DB, const std::string &File,
                         const DriverOptions &Opts, const std::vector<const StepFix *> &Fixes,
                         SourceTexts &Texts, const llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> &FS) {
  std::string Error;
  std::map<std::string, std::string> New = rewrittenTexts(Fixes, Texts, Error);
  if (!Error.empty())
    return Error;
  std::set<std::string> Edited;
  for (const auto &[Path, Text] : New)
    Edited.insert(Path);
  VerifyActionFactory Factory(Edited, Opts.Cancelled);
  ErrorCollector Errors;
  // No caret lines, and no "N errors generated." on the user's terminal: only the first error
  // matters, and it is reported as the step's reason.
  std::vector<std::string> Args = runtimeIncludeArgs();
  Args.push_back("-fno-caret-diagnostics");
  bool Parsed;
  if (Opts.VerifyParser && New.size() == 1 && New.begin()->first == File) {
    std::vector<tooling::CompileCommand> Cmds = DB.getCompileCommands(File);
    if (Cmds.empty())
      return "no compile command for the rewritten file";
    for (tooling::CompileCommand &C : Cmds)
      C.CommandLine.insert(C.CommandLine.end(), Args.begin(), Args.end());
    Parsed = Opts.VerifyParser(New.begin()->second)(Cmds, File, Factory, Errors);
    Errors.OS.flush();
    Parsed = Parsed && Errors.getNumErrors() == 0;
  } else {
    Parsed = parseTU(DB, File, Opts.Overlays, New, Factory, Errors, FS, Args);
  }
  if (Parsed)
    return "";
  return describeFirstError(Errors.Text);
}

/// A step whose rewrite would not compile keeps its findings, loses its fix, and is reported.
void withdrawFix(std::vector<Finding> &Findings, const StepFix &Fix, const std::string &Why,
                 const DriverOptions &Opts) {
  const Finding *Lead = nullptr;
  for (Finding &F : Findings)
    if (F.StepId == Fix.StepId) {
      if (F.Fixable && (!Lead || F.Pos.Offset < Lead->Pos.Offset))
        Lead = &F;
    }
  if (Lead && Opts.Engine.CheckEnabled("amp-manual-migration")) {
    Finding M;
    M.Check = "amp-manual-migration";
    M.Pos = Lead->Pos;
    M.StepId = Fix.StepId;
    M.Message = "not migrated automatically: the rewrite of this step would not compile, so it is "
                "withdrawn: " + Why;
    Findings.push_back(std::move(M));
  }
  for (Finding &F : Findings)
    if (F.StepId == Fix.StepId)
      F.Fixable = false;
}

/// Keeps the fixes whose rewritten translation unit compiles: all together when they do, else
/// each step alone, and then the survivors together once more.
void verifyFixes(TUResult &Res, const tooling::CompilationDatabase &DB, const std::string &File,
                 const DriverOptions &Opts, const llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> &FS) {
  FileTexts Texts(Opts.Overlays);
  std::vector<const StepFix *> All;
  for (const StepFix &F : Res.Fixes)
    All.push_back(&F);
  if (All.empty() || whyFixesFail(DB, File, Opts, All, Texts, FS).empty() || cancelled(Opts))
    return;
  std::vector<StepFix> Kept;
  for (const StepFix *F : All) {
    if (cancelled(Opts))
      return; // the result is discarded
    std::string Why = whyFixesFail(DB, File, Opts, {F}, Texts, FS);
    if (Why.empty())
      Kept.push_back(*F);
    else
      withdrawFix(Res.Findings, *F, Why, Opts);
  }
  if (Kept.size() > 1) {
    std::vector<const StepFix *> Survivors;
    for (const StepFix &F : Kept)
      Survivors.push_back(&F);
    std::string Why = whyFixesFail(DB, File, Opts, Survivors, Texts, FS);
    if (!Why.empty()) {
      for (const StepFix &F : Kept)
        withdrawFix(Res.Findings, F, "together with the other steps of this file: " + Why, Opts);
      Kept.clear();
    }
  }
  Res.Fixes = std::move(Kept);
}

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



/// The options that decide a TU's findings, as text for the result cache's key. A field added to
/// the planner's options must be added here too (the static_assert says so).
std::string cacheConfiguration(const DriverOptions &Opts) {
  static_assert(sizeof(PlannerOptions) == sizeof(AmpLevel), "a new planner option: add it to the cache key");
  std::string S = "header-filter=" + Opts.HeaderFilter;
  S += "\nskip-bodies=" + std::to_string(Opts.SkipBodies);
  S += "\nlevel=" + std::to_string(static_cast<int>(Opts.Engine.Planner.Level));
  // The verification withdraws fixes (and reports why) by what the runtime's headers declare.
  S += "\nverify-fixes=" + std::to_string(Opts.VerifyFixes);
  if (Opts.VerifyFixes)
    for (const std::string &A : runtimeIncludeArgs())
      S += " " + A;
  S += "\nchecks=";
  for (const CheckInfo &C : allChecks())
    S += (Opts.Engine.CheckEnabled(C.Id) ? "+" : "-") + C.Id.str() + ",";
  return S;
}

/// The encoding of the main file when it is one clang cannot read (UTF-16, UTF-32).
std::optional<StringRef> encodingProblem(const std::string &File) {
  auto Buf = llvm::MemoryBuffer::getFile(File, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!Buf)
    return std::nullopt; // the parser says why
  return unsupportedEncoding((*Buf)->getBuffer());
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
  if (mentionsAmp(SM, F))
    return false;
  // A project header's function that touches `.grad` may be called between a backward and
  // step(), and the analysis follows such calls (a step must never leave one behind): its body
  // is kept. System headers' functions are not followed.
  return SM.isInSystemHeader(L) || !mentionsGrad(SM, F);
}

bool HeaderBodySkipper::mentionsGrad(const SourceManager &SM, FileID F) {
  auto [It, New] = FileHasGrad.try_emplace(F.getHashValue(), false);
  if (New) {
    bool Invalid = false;
    StringRef Text = SM.getBufferData(F, &Invalid);
    It->second = Invalid || mentionsAnyToken(Text, {"grad", "mutable_grad"});
  }
  return It->second;
}

bool HeaderBodySkipper::mentionsAmp(const SourceManager &SM, FileID F) {
  auto [It, New] = FileHasTokens.try_emplace(F.getHashValue());
  FileTokens &T = It->second;
  bool Invalid = false;
  StringRef Text;
  if (New) {
    Text = SM.getBufferData(F, &Invalid);
    T.Mentions = Invalid || mentionsAnyToken(Text, Tokens);
  }
  if (T.Mentions || T.LearnedChecked == LearnedTokens.size())
    return T.Mentions;
  if (!New)
    Text = SM.getBufferData(F, &Invalid);
  std::vector<std::string> Unchecked(LearnedTokens.begin() + T.LearnedChecked, LearnedTokens.end());
  T.LearnedChecked = LearnedTokens.size();
  T.Mentions = Invalid || mentionsAnyToken(Text, Unchecked);
  return T.Mentions;
}

void HeaderBodySkipper::learn(const SourceManager &SM, DeclGroupRef DG) {
  for (const Decl *D : DG)
    learnIn(SM, D);
}

void HeaderBodySkipper::learnIn(const SourceManager &SM, const Decl *D) {
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(D); Ctor && Ctor->isOutOfLine()) {
    // `Guard::Guard(bool on) { set_enabled(on); }` completes a guard.
    learnClass(SM, Ctor->getParent());
    return;
  }
  if (const auto *T = dyn_cast<ClassTemplateDecl>(D))
    D = T->getTemplatedDecl();
  if (const auto *RD = dyn_cast<CXXRecordDecl>(D)) {
    if (!RD->isThisDeclarationADefinition() || RD->isLambda() || isa<ClassTemplateSpecializationDecl>(RD))
      return;
    learnClass(SM, RD);
    for (const Decl *Member : RD->noload_decls())
      if (isa<CXXRecordDecl, ClassTemplateDecl>(Member))
        learnIn(SM, Member);
    return;
  }
  // Namespaces opened in a system header hold no user class; their own files' are read as the
  // declarations come (noload: a preamble's declarations are never deserialised for this).
  if (isa<NamespaceDecl, LinkageSpecDecl, ExportDecl>(D) && !SM.isInSystemHeader(SM.getExpansionLoc(D->getLocation())))
    for (const Decl *Inner : cast<DeclContext>(D)->noload_decls())
      learnIn(SM, Inner);
}

void HeaderBodySkipper::learnClass(const SourceManager &SM, const CXXRecordDecl *RD) {
  SourceLocation L = SM.getExpansionLoc(RD->getLocation());
  if (L.isInvalid() || SM.isInSystemHeader(L) || !RD->getIdentifier())
    return;
  if (!SM.isInMainFile(L) && !mentionsAmp(SM, SM.getFileID(L)))
    return;
  std::string Name = RD->getName().str();
  if (llvm::is_contained(Tokens, Name) || llvm::is_contained(LearnedTokens, Name))
    return;
  if (isAutocastGuardClass(RD, Rules, nullptr) || isScalerClass(RD, Rules))
    LearnedTokens.push_back(std::move(Name));
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
  // A header's step planned from several TUs is one step.
  llvm::stable_sort(R.StepFixes, [](const StepFix &A, const StepFix &B) { return A.StepId < B.StepId; });
  R.StepFixes.erase(std::unique(R.StepFixes.begin(), R.StepFixes.end(),
                                [](const StepFix &A, const StepFix &B) { return A.StepId == B.StepId; }),
                    R.StepFixes.end());
}

void mergeReport(Report &Into, Report &&Part) {
  for (Finding &F : Part.Findings)
    Into.Findings.push_back(std::move(F));
  for (FileOutcome &F : Part.Files)
    Into.Files.push_back(std::move(F));
  for (StepFix &F : Part.StepFixes)
    Into.StepFixes.push_back(std::move(F));
  mergeDigests(Into.ParsedDigests, Part.ParsedDigests);
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
    } else if (std::optional<CachedTU> Hit = Cache ? Cache->lookup(Key) : std::nullopt;
               Hit && !(Opts.VerifyBeforeFix && Hit->BodiesUnchecked)) {
      // (An entry of a run that did not fix, whose header bodies were never parsed, is a miss
      // for a run that fixes: it parses them first.)
      // What a miss leaves after verification: the same NOLINT and attachFixes below apply.
      std::lock_guard<std::mutex> L(M);
      if (Stats)
        ++Stats->CacheHits;
      for (Finding &F : Hit->Findings)
        R.Findings.push_back(std::move(F));
      for (StepFix &F : Hit->Fixes)
        R.StepFixes.push_back(std::move(F));
      mergeDigests(R.ParsedDigests, Hit->Digests);
    } else {
      TUResult Res;
      AmpActionFactory Factory(Rules, Opts, Res);
      ErrorCollector Errors;
      // With a cache, the parses (and the verification's) run on a file system that records what
      // they probed and read.
      DependencyLog Deps;
      llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS =
          Cache ? makeRecordingFileSystem(Deps) : llvm::vfs::getRealFileSystem();
      bool Parsed = Opts.Parser ? Opts.Parser(Cmds, File, Factory, Errors)
                                : parseTU(DB, File, Opts.Overlays, {}, Factory, Errors, FS);
      Errors.OS.flush();
      Parsed = Parsed && Errors.getNumErrors() == 0;
      bool BodiesUnchecked = Res.SkippedBodies > 0 && Res.hasFixes() && !Opts.VerifyBeforeFix;
      // Errors in header bodies the fast path skipped are invisible to it; a TU that is going to
      // be rewritten is parsed again in full first (a file that does not compile is never fixed).
      if (Parsed && Opts.VerifyBeforeFix && Res.SkippedBodies > 0 && Res.hasFixes()) {
        std::unique_ptr<tooling::FrontendActionFactory> SyntaxOnly =
            tooling::newFrontendActionFactory<SyntaxOnlyAction>();
        Errors.Text.clear();
        ErrorCollector Full;
        Parsed = parseTU(DB, File, Opts.Overlays, {}, *SyntaxOnly, Full, FS);
        Errors.Text = Full.Text;
      }
      if (!Parsed) {
        O.Status = FileOutcome::State::Failed;
        O.Error = Errors.Text.empty() ? File + ": error: the file could not be parsed" : Errors.Text;
        while (!O.Error.empty() && O.Error.back() == '\n')
          O.Error.pop_back();
      } else {
        if (Opts.VerifyFixes && !Opts.Unfinished)
          verifyFixes(Res, DB, File, Opts, FS);
        if (Cache && !cancelled(Opts))
          Cache->store(Key, Deps.take(), CachedTU{Res.Findings, Res.Fixes, Res.Digests, BodiesUnchecked});
        std::lock_guard<std::mutex> L(M);
        if (Stats && Cache)
          ++Stats->CacheMisses;
        for (Finding &F : Res.Findings)
          R.Findings.push_back(std::move(F));
        for (StepFix &F : Res.Fixes)
          R.StepFixes.push_back(std::move(F));
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

  if (Cache)
    Cache->trim();
  sortAndDeduplicate(R);
  if (!Opts.Unfinished)
    finishReport(R, Opts);
  return R;
}

void verifyReportFixes(Report &R, const DriverOptions &Opts, const tooling::CompilationDatabase &DB) {
  assert(Opts.Files.size() == 1 && "the fixes of one translation unit");
  if (Opts.Files.size() != 1 || R.StepFixes.empty())
    return;
  for (const FileOutcome &O : R.Files)
    if (O.Status == FileOutcome::State::Failed)
      return; // nothing was analysed
  TUResult Res;
  Res.Findings = std::move(R.Findings);
  Res.Fixes = std::move(R.StepFixes);
  verifyFixes(Res, DB, absolutePath(Opts.Files.front()), Opts, llvm::vfs::getRealFileSystem());
  R.Findings = std::move(Res.Findings);
  R.StepFixes = std::move(Res.Fixes);
  sortAndDeduplicate(R);
}

void finishReport(Report &R, const DriverOptions &Opts) {
  FileTexts Texts(Opts.Overlays);
  applyNoLint(R.Findings, Texts);
  attachFixes(R.Findings, R.StepFixes);
}

} // namespace ampmigrate
