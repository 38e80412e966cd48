// The amp-* checks as a clang-tidy module (libAmpMigrateTidy.so, `clang-tidy -load=...`).
//
// One implementation of every check: the engine (lib/) analyses the translation unit once, and each
// registered ClangTidyCheck emits the engine's findings of its own id, with notes, and with the
// training step's edits as fix-its on the step's lead finding (so `clang-tidy -fix` applies a step
// whole, like `amp-migrate --fix`).
//
// Options (CheckOptions in .clang-tidy or -config), on any amp-* check or globally:
//   amp-<id>.Level  O0|O1|O2|O3 (default O2): the AMP level of the rewrite
//   amp-<id>.Rules  semicolon-separated extra rule files (relative paths: to the working directory)
#include "ampmigrate/Checks.h"
#include "ampmigrate/Config.h"
#include "ampmigrate/Driver.h"
#include "ampmigrate/Engine.h"
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

/// What every amp-* check of one translation unit shares: the options the checks were configured
/// with, the preprocessor's skipped ranges, and the engine's findings (computed once).
///
/// clang-tidy creates a fresh set of check objects for each translation unit, constructs all of
/// them, then registers their PP callbacks and matchers, then parses, then calls check(). The
/// state is reset when the first check of a new set is constructed.
struct SharedState {
  enum class Phase { Idle, Constructing, Registered, Computed } Stage = Phase::Idle;
  // Options gathered from the checks of this translation unit, in construction order.
  std::vector<std::pair<std::string, std::string>> Levels; // check, value
  std::vector<std::string> RuleFiles;
  // Preprocessor output.
  std::vector<SourceRange> Inactive;
  // Engine output.
  const ASTContext *Ctx = nullptr;
  std::vector<Finding> Findings;
  /// Which finding (index into Findings) gives each edit as a fix-it. Every step of a file carries
  /// the same include insertion; amp-migrate applies it once, and clang-tidy would apply each copy.
  /// It goes to the first lead (in file order) that NOLINT does not suppress.
  std::map<std::tuple<std::string, unsigned, unsigned, std::string>, size_t> EditOwner;
  std::string File;  ///< the translation unit's main file (clang-tidy's current file)
  std::string Error; ///< rule loading or configuration problem, reported once
  bool ErrorReported = false;

  void reset() {
    *this = SharedState();
    Stage = Phase::Constructing;
  }
};

SharedState &state() {
  static SharedState S;
  return S;
}

/// Collects the ranges the preprocessor skipped (#if 0 ...): the engine does not rewrite them.
class SkippedRanges : public PPCallbacks {
public:
  void SourceRangeSkipped(SourceRange Range, SourceLocation) override {
    state().Inactive.push_back(Range);
  }
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
    SharedState &S = state();
    if (S.Stage != SharedState::Phase::Constructing || S.File != Context->getCurrentFile()) {
      S.reset();
      S.File = Context->getCurrentFile().str();
    }
    if (std::optional<StringRef> L = Options.getLocalOrGlobal("Level"))
      S.Levels.emplace_back(Id, L->trim().str());
    if (std::optional<StringRef> R = Options.getLocalOrGlobal("Rules")) {
      SmallVector<StringRef, 4> Parts;
      R->split(Parts, ';', -1, /*KeepEmpty=*/false);
      for (StringRef P : Parts)
        if (!P.trim().empty() && !llvm::is_contained(S.RuleFiles, P.trim().str()))
          S.RuleFiles.push_back(P.trim().str());
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
    SharedState &S = state();
    if (S.Stage == SharedState::Phase::Constructing) {
      S.Stage = SharedState::Phase::Registered;
      PP->addPPCallbacks(std::make_unique<SkippedRanges>());
    }
  }

  void registerMatchers(MatchFinder *Finder) override {
    Finder->addMatcher(translationUnitDecl().bind("tu"), this);
  }

  void check(const MatchFinder::MatchResult &Result) override {
    ASTContext &Ctx = *Result.Context;
    SharedState &S = state();
    if (S.Stage != SharedState::Phase::Computed || S.Ctx != &Ctx)
      compute(Ctx, S);
    if (!S.Error.empty()) {
      if (!S.ErrorReported) {
        S.ErrorReported = true;
        configurationDiag(escapeForDiag(S.Error), DiagnosticIDs::Error);
      }
      return;
    }
    const SourceManager &SM = Ctx.getSourceManager();
    for (const Finding &F : S.Findings) {
      if (F.Check != Id)
        continue;
      SourceLocation Loc = location(SM, F.Pos.File, F.Pos.Offset);
      if (Loc.isInvalid())
        continue;
      {
        DiagnosticBuilder D = diag(Loc, escapeForDiag(F.Message),
                                   F.Level == Severity::Error ? DiagnosticIDs::Error
                                                              : DiagnosticIDs::Warning);
        size_t Index = static_cast<size_t>(&F - S.Findings.data());
        std::vector<tooling::Replacement> Fresh;
        for (const tooling::Replacement &R : F.Fixes) {
          auto Owner = S.EditOwner.find(editKey(R));
          if (Owner == S.EditOwner.end() || Owner->second == Index)
            Fresh.push_back(R);
        }
        for (const Edit &E : fixItEdits(SM, Fresh)) {
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
          diag(NL, escapeForDiag(N.Message), DiagnosticIDs::Note);
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

  void compute(ASTContext &Ctx, SharedState &S) {
    S.Stage = SharedState::Phase::Computed;
    S.Ctx = &Ctx;
    S.Findings.clear();
    S.EditOwner.clear();
    S.Error.clear();
    S.ErrorReported = false;

    EngineOptions EO;
    std::string LevelName = "O2";
    for (const auto &[Check, Value] : S.Levels) {
      if (Value != S.Levels.front().second) {
        S.Error = "amp-* checks configured with different levels ('" + S.Levels.front().second +
                  "' for " + S.Levels.front().first + ", '" + Value + "' for " + Check +
                  "); one level applies to every amp check";
        return;
      }
      LevelName = Value;
    }
    if (!parseLevel(LevelName, EO.Planner.Level)) {
      S.Error = "invalid amp-*.Level '" + LevelName + "' (valid: O0, O1, O2, O3)";
      return;
    }
    tidy::ClangTidyContext *C = Context;
    EO.CheckEnabled = [C](StringRef Id) { return C->isCheckEnabled(Id); };

    // Rules are loaded per translation unit: cheap, and rule files may differ per directory.
    llvm::Expected<RuleSet> Rules = loadRules(S.RuleFiles);
    if (!Rules) {
      S.Error = llvm::toString(Rules.takeError());
      return;
    }

    // In scope: what amp-migrate analyses for the same file — the main file, and headers that
    // clang-tidy's HeaderFilterRegex selects (never system headers).
    const SourceManager &SM = Ctx.getSourceManager();
    std::shared_ptr<llvm::Regex> HeaderRe;
    const tidy::ClangTidyOptions &TO = Context->getOptions();
    if (TO.HeaderFilterRegex && !TO.HeaderFilterRegex->empty())
      HeaderRe = std::make_shared<llvm::Regex>(*TO.HeaderFilterRegex);
    auto InScope = [&SM, HeaderRe](SourceLocation L) {
      if (L.isInvalid())
        return false;
      L = SM.getExpansionLoc(L);
      if (SM.isInMainFile(L))
        return true;
      if (!HeaderRe || SM.isInSystemHeader(L))
        return false;
      auto FE = SM.getFileEntryRefForID(SM.getFileID(L));
      return FE && HeaderRe->match(FE->getName());
    };
    S.Findings = runChecks(Ctx, *Rules, InScope, S.Inactive, EO);

    // Owners of the edits that several leads carry: the first lead in file order that survives
    // NOLINT (amp-migrate's NOLINT rules are clang-tidy's; test/tidy/nolint.test).
    std::vector<size_t> Order(S.Findings.size());
    for (size_t I = 0; I < Order.size(); ++I)
      Order[I] = I;
    llvm::stable_sort(Order, [&](size_t A, size_t B) {
      return std::tie(S.Findings[A].Pos.File, S.Findings[A].Pos.Offset) <
             std::tie(S.Findings[B].Pos.File, S.Findings[B].Pos.Offset);
    });
    BufferTexts Texts(SM);
    relocateSuppressedFixes(S.Findings, Texts); // as amp-migrate does: a step is not vetoed by NOLINT
    for (bool WantSurvivor : {true, false})
      for (size_t I : Order) {
        const Finding &F = S.Findings[I];
        if (F.Fixes.empty())
          continue;
        std::vector<Finding> One{F};
        applyNoLint(One, Texts);
        if (One.empty() == WantSurvivor)
          continue;
        for (const tooling::Replacement &R : F.Fixes)
          S.EditOwner.emplace(editKey(R), I);
      }
  }

  static std::tuple<std::string, unsigned, unsigned, std::string> editKey(const tooling::Replacement &R) {
    return {R.getFilePath().str(), R.getOffset(), R.getLength(), R.getReplacementText().str()};
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
