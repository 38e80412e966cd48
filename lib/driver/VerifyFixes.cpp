// Fix verification: a TU re-parsed with its edits in memory; a step that fails is withdrawn.
#include "DriverInternal.h"
#include "ampmigrate/EditMerge.h"
#include "ampmigrate/FixApplier.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"
#include <atomic>
#include <cassert>
#include <set>

using namespace clang;
namespace ampmigrate {
namespace driver {
namespace {

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

/// The texts of the files `Fixes` edit, with the edits applied; an empty map and `Error` set when
/// the edits cannot be applied together.
std::map<std::string, std::string> rewrittenTexts(const std::vector<const StepFix *> &Fixes,
                                                  SourceTexts &Texts, std::string &Error,
                                                  std::map<std::string, tooling::Replacements> &Edits) {
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
  Edits = Merge.byFile();
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
  // No error of the compiler's: the parse did not start (the command cannot be run as given).
  for (StringRef Line : llvm::split(Diags, '\n'))
    if (!Line.trim().empty()) {
      StringRef First = Line.trim();
      return "the rewritten file does not parse: " + First.take_front(240).str() +
             (First.size() > 240 ? "..." : "");
    }
  return "the rewritten file could not be parsed (the compile command did not start a parse)";
}

/// Re-parses the translation unit with the edits applied in memory; returns why it fails, or "".
std::string whyFixesFail(const tooling::CompilationDatabase &DB, const std::string &File,
                         const DriverOptions &Opts, const std::vector<const StepFix *> &Fixes,
                         SourceTexts &Texts, const llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> &FS,
                         PreambleTU *Fast) {
  std::string Error;
  std::map<std::string, tooling::Replacements> Edits;
  std::map<std::string, std::string> New = rewrittenTexts(Fixes, Texts, Error, Edits);
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
  std::optional<std::string> MainOnly;
  if (Fast && New.size() == 1 && New.begin()->first == Fast->file())
    MainOnly = Fast->verificationText(Edits.begin()->second);
  if (MainOnly) {
    // The main file alone, against the preamble of the analysis: no header is parsed again.
    Parsed = Fast->verify(*MainOnly, Factory, Errors);
  } else if (Opts.VerifyParser && New.size() == 1 && New.begin()->first == File) {
    std::vector<tooling::CompileCommand> Cmds = DB.getCompileCommands(File);
    if (Cmds.empty())
      return "no compile command for the rewritten file";
    // Before a `--` (interpolated commands of headers end in `-- file`), where they would be
    // read as input files.
    for (tooling::CompileCommand &C : Cmds)
      C.CommandLine.insert(llvm::find(C.CommandLine, "--"), Args.begin(), Args.end());
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

} // namespace

/// Keeps the fixes whose rewritten translation unit compiles: all together when they do, else
/// each step alone, and then the survivors together once more.
void verifyFixes(TUResult &Res, const tooling::CompilationDatabase &DB, const std::string &File,
                 const DriverOptions &Opts, const llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> &FS,
                 PreambleTU *Fast) {
  FileTexts Texts(Opts.Overlays);
  std::vector<const StepFix *> All;
  for (const StepFix &F : Res.Fixes)
    All.push_back(&F);
  // A file edited on disk since the parse: its old offsets would land in the new text, and the
  // parse of that would withdraw the steps for a reason that is not theirs. The fixes stay as
  // they are; the write refuses the file ("changed since it was analysed").
  for (const StepFix &F : Res.Fixes)
    for (const tooling::Replacement &R : F.Edits) {
      auto D = Res.Digests.find(absolutePath(R.getFilePath()));
      const std::string *Now = D == Res.Digests.end() ? nullptr : Texts.get(D->first);
      if (Now && digestOf(*Now) != D->second)
        return;
    }
  if (All.empty() || whyFixesFail(DB, File, Opts, All, Texts, FS, Fast).empty() || cancelled(Opts))
    return;
  std::vector<StepFix> Kept;
  for (const StepFix *F : All) {
    if (cancelled(Opts))
      return; // the result is discarded
    std::string Why = whyFixesFail(DB, File, Opts, {F}, Texts, FS, Fast);
    if (Why.empty())
      Kept.push_back(*F);
    else
      withdrawFix(Res.Findings, *F, Why, Opts);
  }
  if (Kept.size() > 1) {
    std::vector<const StepFix *> Survivors;
    for (const StepFix &F : Kept)
      Survivors.push_back(&F);
    std::string Why = whyFixesFail(DB, File, Opts, Survivors, Texts, FS, Fast);
    if (!Why.empty()) {
      for (const StepFix &F : Kept)
        withdrawFix(Res.Findings, F, "together with the other steps of this file: " + Why, Opts);
      Kept.clear();
    }
  }
  Res.Fixes = std::move(Kept);
}

} // namespace driver
using namespace driver;

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
  verifyFixes(Res, DB, absolutePath(Opts.Files.front()), Opts,
              llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(
                  llvm::vfs::createPhysicalFileSystem().release()));
  R.Findings = std::move(Res.Findings);
  R.StepFixes = std::move(Res.Fixes);
  sortAndDeduplicate(R);
}

} // namespace ampmigrate
