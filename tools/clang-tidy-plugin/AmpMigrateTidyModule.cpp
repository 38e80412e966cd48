// The amp-* checks as a clang-tidy module (libAmpMigrateTidy.so, `clang-tidy -load=...`).
//
// One implementation of every check: the engine (lib/) analyses the translation unit once. Of the
// amp-* checks clang-tidy creates for a translation unit, the first enabled one in catalogue order
// (the leader) runs the engine and emits every enabled check's findings under their own ids, with
// notes, and with each training step's edits as fix-its on the step's lead finding (so `clang-tidy
// -fix` applies a step whole, like `amp-migrate --fix`). The others do nothing. No state outlives
// a check object, and nothing is shared between them.
//
// Options (CheckOptions in .clang-tidy or -config), on any amp-* check or globally:
//   amp-<id>.Level  O0|O1|O2|O3 (default O2): the AMP level of the rewrite
//   amp-<id>.Rules  semicolon-separated extra rule files (relative paths: to the working directory)
#include "ampmigrate/Checks.h"
#include "ampmigrate/Config.h"
#include "ampmigrate/Driver.h"
#include "ampmigrate/Engine.h"
#include "ampmigrate/HeaderScope.h"
#include "ampmigrate/MigrationPlan.h"
#include "ampmigrate/Rules.h"

#include "clang-tidy/ClangTidyCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"
#include <map>
#include <set>
#include <tuple>
#include <optional>

using namespace clang;
using namespace clang::ast_matchers;

namespace ampmigrate {
namespace tidyplugin {
namespace {

/// Collects the ranges the preprocessor skipped (#if 0 ...): the engine does not rewrite them.
class SkippedRanges : public PPCallbacks {
public:
  explicit SkippedRanges(std::vector<SourceRange> &Out) : Out(Out) {}
  void SourceRangeSkipped(SourceRange Range, SourceLocation) override { Out.push_back(Range); }

private:
  std::vector<SourceRange> &Out;
};

/// clang's diagnostic formatter treats '%' as an argument marker.
std::string escapeForDiag(StringRef S) {
  std::string Out;
  for (char C : S) {
    if (C == '%')
      Out += '%';
    Out += C;
  }
  return Out;
}

class AmpCheck : public clang::tidy::ClangTidyCheck {
public:
  AmpCheck(StringRef Name, tidy::ClangTidyContext *Context)
      : ClangTidyCheck(Name, Context), Id(Name.str()), Context(Context) {
    for (const CheckInfo &C : allChecks())
      if (Context->isCheckEnabled(C.Id)) {
        Leader = C.Id == Id;
        break;
      }
  }

  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }

  void storeOptions(tidy::ClangTidyOptions::OptionMap &Opts) override {
    Options.store(Opts, "Level", Options.getLocalOrGlobal("Level", "O2"));
    Options.store(Opts, "Rules", Options.getLocalOrGlobal("Rules", ""));
  }

  void registerPPCallbacks(const SourceManager &, Preprocessor *PP, Preprocessor *) override {
    if (Leader)
      PP->addPPCallbacks(std::make_unique<SkippedRanges>(Inactive));
  }

  void registerMatchers(MatchFinder *Finder) override {
    if (Leader)
      Finder->addMatcher(translationUnitDecl().bind("tu"), this);
  }

  void check(const MatchFinder::MatchResult &Result) override {
    ASTContext &Ctx = *Result.Context;
    // A file that does not parse is not analysed (as by the CLI and the language server): its
    // AST lacks what the errors cut off, and findings on it would be wrong (a disable after the
    // error seen as missing). clang-tidy reports the compiler's errors itself.
    if (Ctx.getDiagnostics().hasErrorOccurred())
      return;
    std::string Error;
    std::vector<Finding> Findings = compute(Ctx, Error);
    if (!Error.empty()) {
      configurationDiag(escapeForDiag(Error), DiagnosticIDs::Error);
      return;
    }
    const SourceManager &SM = Ctx.getSourceManager();
    for (const Finding &F : Findings) {
      SourceLocation Loc = location(SM, F.Pos.File, F.Pos.Offset);
      if (Loc.isInvalid())
        continue;
      {
        DiagnosticBuilder D = Context->diag(F.Check, Loc, escapeForDiag(F.Message),
                                            F.Level == Severity::Error ? DiagnosticIDs::Error
                                                                       : DiagnosticIDs::Warning);
        for (const Edit &E : fixItEdits(SM, F.Fixes)) {
          SourceLocation B = location(SM, E.File, E.Offset);
          if (B.isInvalid())
            continue;
          D << FixItHint::CreateReplacement(
              CharSourceRange::getCharRange(B, B.getLocWithOffset(E.Length)), E.Text);
        }
      }
      for (const Note &N : F.Notes) {
        SourceLocation NL = location(SM, N.Pos.File, N.Pos.Offset);
        if (NL.isValid())
          Context->diag(F.Check, NL, escapeForDiag(N.Message), DiagnosticIDs::Note);
      }
    }
  }

private:
  struct Edit {
    std::string File;
    unsigned Offset, Length;
    std::string Text;
  };

  /// The step's edits as fix-its that clang-tidy applies byte for byte. clang merges the fix-its
  /// of a diagnostic through edit::EditedSource, which widens a pure removal by one following
  /// space when it judges the space redundant ("adjustRemoval"): deleting a whole line would also
  /// eat one column of the next line's indentation. A removal that touches no other edit is
  /// therefore given as the replacement of one more character (the one before it, or after it at
  /// the start of the file) by that same character, which clang applies as written.
  static std::vector<Edit> fixItEdits(const SourceManager &SM,
                                      const std::vector<tooling::Replacement> &Fixes) {
    std::vector<Edit> Out;
    for (const tooling::Replacement &R : Fixes)
      Out.push_back({R.getFilePath().str(), R.getOffset(), R.getLength(), R.getReplacementText().str()});
    // Removals that meet (two statements deleted line after line) are one removal: clang would
    // merge them and widen the merged removal as above.
    llvm::stable_sort(Out, [](const Edit &A, const Edit &B) {
      return std::tie(A.File, A.Offset) < std::tie(B.File, B.Offset);
    });
    std::vector<Edit> Merged;
    for (Edit &E : Out) {
      if (!Merged.empty()) {
        Edit &P = Merged.back();
        if (P.File == E.File && P.Text.empty() && E.Text.empty() && P.Length && E.Length &&
            P.Offset + P.Length == E.Offset) {
          P.Length += E.Length;
          continue;
        }
      }
      Merged.push_back(std::move(E));
    }
    Out = std::move(Merged);
    for (Edit &E : Out) {
      if (!E.Text.empty() || E.Length == 0)
        continue;
      bool Touches = llvm::any_of(Out, [&](const Edit &O) {
        return &O != &E && O.File == E.File &&
               (O.Offset + O.Length == E.Offset || O.Offset == E.Offset + E.Length);
      });
      if (Touches)
        continue;
      SourceLocation B = location(SM, E.File, 0);
      if (B.isInvalid())
        continue;
      bool Invalid = false;
      StringRef Buf = SM.getBufferData(SM.getFileID(B), &Invalid);
      if (Invalid || E.Offset + E.Length > Buf.size())
        continue;
      if (E.Offset > 0) {
        E.Text = std::string(1, Buf[E.Offset - 1]);
        E.Offset -= 1;
        E.Length += 1;
      } else if (E.Length < Buf.size()) {
        E.Text = std::string(1, Buf[E.Length]);
        E.Length += 1;
      }
    }
    return Out;
  }

  /// The location of a byte offset in a file of this translation unit.
  static SourceLocation location(const SourceManager &SM, const std::string &File, unsigned Offset) {
    if (File.empty())
      return {};
    FileID FID;
    if (auto FE = SM.getFileManager().getOptionalFileRef(File))
      FID = SM.translateFile(*FE);
    if (FID.isInvalid())
      return {};
    bool Invalid = false;
    StringRef Buf = SM.getBufferData(FID, &Invalid);
    if (Invalid || Offset > Buf.size())
      return {};
    return SM.getComposedLoc(FID, Offset);
  }

  /// An option of any enabled amp-* check ("amp-<id>.<Name>"), else the global one.
  std::vector<std::pair<std::string, std::string>> optionValues(StringRef Name) const {
    std::vector<std::pair<std::string, std::string>> Out;
    const tidy::ClangTidyOptions::OptionMap &Map = Context->getOptions().CheckOptions;
    for (const CheckInfo &C : allChecks()) {
      if (!Context->isCheckEnabled(C.Id))
        continue;
      auto It = Map.find((C.Id + "." + Name).str());
      if (It != Map.end())
        Out.emplace_back(C.Id.str(), It->second.Value);
    }
    if (Out.empty())
      if (auto It = Map.find(Name); It != Map.end())
        Out.emplace_back("", It->second.Value);
    return Out;
  }

  /// The engine's findings for this translation unit, NOLINT applied as clang-tidy applies it and
  /// each step's edits on its first surviving lead; `Error` set for a configuration problem.
  std::vector<Finding> compute(ASTContext &Ctx, std::string &Error) const {
    EngineOptions EO;
    std::string LevelName = "O2";
    std::vector<std::pair<std::string, std::string>> Levels = optionValues("Level");
    for (const auto &[Check, Value] : Levels) {
      if (StringRef(Value).trim() != StringRef(Levels.front().second).trim()) {
        Error = "amp-* checks configured with different levels ('" + Levels.front().second +
                "' for " + Levels.front().first + ", '" + Value + "' for " + Check +
                "); one level applies to every amp check";
        return {};
      }
      LevelName = StringRef(Value).trim().str();
    }
    if (!parseLevel(LevelName, EO.Planner.Level)) {
      Error = "invalid amp-*.Level '" + LevelName + "' (valid: O0, O1, O2, O3)";
      return {};
    }
    std::vector<std::string> RuleFiles;
    for (const auto &[Check, Value] : optionValues("Rules")) {
      SmallVector<StringRef, 4> Parts;
      StringRef(Value).split(Parts, ';', -1, /*KeepEmpty=*/false);
      for (StringRef P : Parts)
        if (!P.trim().empty() && !llvm::is_contained(RuleFiles, P.trim().str()))
          RuleFiles.push_back(P.trim().str());
    }
    tidy::ClangTidyContext *C = Context;
    EO.CheckEnabled = [C](StringRef Id) { return C->isCheckEnabled(Id); };

    // Rules are loaded per translation unit: cheap, and rule files may differ per directory.
    llvm::Expected<RuleSet> Rules = loadRules(RuleFiles);
    if (!Rules) {
      Error = llvm::toString(Rules.takeError());
      return {};
    }

    // In scope: what amp-migrate analyses for the same file: the main file, and headers that
    // clang-tidy's HeaderFilterRegex selects (matched as clang-tidy matches it: the name as
    // opened), never system headers nor libtorch's own.
    const SourceManager &SM = Ctx.getSourceManager();
    const tidy::ClangTidyOptions &TO = Context->getOptions();
    auto Scope = std::make_shared<HeaderScope>(SM,
                                               TO.HeaderFilterRegex ? *TO.HeaderFilterRegex : std::string(),
                                               HeaderScope::Name::AsOpened);
    auto InScope = [Scope](SourceLocation L) { return Scope->inScope(L); };
    EngineResult R = runChecks(Ctx, *Rules, InScope, Inactive, EO);
    // clang-tidy applies NOLINT to the diagnostics itself, by the same rules; the fixes must go to
    // findings that survive it (test/tidy/nolint.test). clang-tidy applies each diagnostic's
    // fix-its on its own, so an edit several steps share goes to the first lead only.
    BufferTexts Texts(SM);
    // An edit under a NOLINT withdraws its step's fix, as in amp-migrate (withdrawNoLintFixes).
    withdrawNoLintFixes(R.Findings, R.Fixes, Texts, EO.CheckEnabled);
    std::vector<Finding> Surviving = R.Findings;
    applyNoLint(Surviving, Texts);
    attachFixes(Surviving, R.Fixes, /*EachEditOnce=*/true);
    // clang-tidy is given every finding (it reports unmatched NOLINTBEGINs its own way).
    for (const Finding &S : Surviving)
      if (!S.Fixes.empty())
        for (Finding &F : R.Findings)
          if (F.Check == S.Check && F.Pos.File == S.Pos.File && F.Pos.Offset == S.Pos.Offset &&
              F.Message == S.Message)
            F.Fixes = S.Fixes;
    return std::move(R.Findings);
  }

  /// The files as this translation unit read them.
  class BufferTexts : public SourceTexts {
  public:
    explicit BufferTexts(const SourceManager &SM) : SM(SM) {}
    const std::string *get(const std::string &File) override {
      auto It = Cache.find(File);
      if (It != Cache.end())
        return &It->second;
      SourceLocation L = location(SM, File, 0);
      if (L.isInvalid())
        return nullptr;
      bool Invalid = false;
      StringRef Buf = SM.getBufferData(SM.getFileID(L), &Invalid);
      if (Invalid)
        return nullptr;
      return &(Cache[File] = Buf.str());
    }

  private:
    const SourceManager &SM;
    std::map<std::string, std::string> Cache;
  };

  std::string Id;
  tidy::ClangTidyContext *Context;
  bool Leader = false;
  std::vector<SourceRange> Inactive;
};

class AmpMigrateModule : public tidy::ClangTidyModule {
public:
  void addCheckFactories(tidy::ClangTidyCheckFactories &Factories) override {
    for (const CheckInfo &C : allChecks())
      Factories.registerCheckFactory(C.Id, [](StringRef Name, tidy::ClangTidyContext *Context) {
        return std::make_unique<AmpCheck>(Name, Context);
      });
  }
};

} // namespace
} // namespace tidyplugin
} // namespace ampmigrate

namespace clang::tidy {
// Registered under a name of its own; `clang-tidy -load=libAmpMigrateTidy.so -list-checks` shows it.
static ClangTidyModuleRegistry::Add<ampmigrate::tidyplugin::AmpMigrateModule>
    AmpMigrateModuleRegistration("amp-migrate-module", "amp-migrate: autocast and loss-scaler migration checks.");
} // namespace clang::tidy
