// The driver's frontend action for one translation unit.
#include "DriverInternal.h"
#include "ampmigrate/Checks.h"
#include "ampmigrate/FixApplier.h"
#include "ampmigrate/HeaderScope.h"
#include "ampmigrate/StepFinder.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include <optional>

using namespace clang;
namespace ampmigrate {
namespace driver {
namespace {

class InactiveRegions : public PPCallbacks {
public:
  explicit InactiveRegions(std::vector<SourceRange> &Out) : Out(Out) {}
  void SourceRangeSkipped(SourceRange Range, SourceLocation) override { Out.push_back(Range); }

private:
  std::vector<SourceRange> &Out;
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

class AmpConsumer : public ASTConsumer {
public:
  AmpConsumer(CompilerInstance &CI, const RuleSet &Rules, const DriverOptions &Opts,
              std::vector<SourceRange> &Inactive, TUResult &Out,
              const std::vector<std::pair<unsigned, unsigned>> *PreambleInactive,
              const std::vector<std::string> *PreambleLearned)
      : CI(CI), Rules(Rules), Opts(Opts), Inactive(Inactive), Out(Out), PreambleInactive(PreambleInactive),
        Filter(CI.getSourceManager(), Opts.HeaderFilter), Skipper(Rules) {
    if (PreambleLearned)
      Skipper.learnNames(*PreambleLearned);
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
    if (PreambleInactive) {
      const SourceManager &SM = CI.getSourceManager();
      SourceLocation Start = SM.getLocForStartOfFile(SM.getMainFileID());
      std::vector<SourceRange> Preamble;
      for (auto [B, E] : *PreambleInactive)
        Preamble.emplace_back(Start.getLocWithOffset(B), Start.getLocWithOffset(E));
      Inactive.insert(Inactive.begin(), Preamble.begin(), Preamble.end());
    }
    // The declarations this parse read at the top level: every one in a whole parse; with a
    // precompiled preamble (the language server), those of the file's body, so that the
    // preamble's headers are never deserialised whole (only the main file is reported there).
    std::vector<Decl *> Scope;
    for (Decl *D : TopLevel)
      if (Filter.inScope(D->getLocation()) || isa<NamespaceDecl, LinkageSpecDecl>(D))
        Scope.push_back(D);
    Ctx.setTraversalScope(Scope);
    const HeaderScope *F = &Filter;
    EngineResult E = runChecks(Ctx, Rules, [F](SourceLocation L) { return F->inScope(L); }, Inactive,
                               Opts.Engine);
    Out.Findings = std::move(E.Findings);
    Out.Fixes = std::move(E.Fixes);
    Out.Summaries = std::move(E.Summaries);
    Out.UnknownCallees = std::move(E.UnknownCallees);
    anchorToParsedFiles(CI, Out);
  }

private:
  bool cancelled() const { return driver::cancelled(Opts); }

  CompilerInstance &CI;
  const RuleSet &Rules;
  const DriverOptions &Opts;
  std::vector<SourceRange> &Inactive;
  TUResult &Out;
  const std::vector<std::pair<unsigned, unsigned>> *PreambleInactive;
  HeaderScope Filter;
  HeaderBodySkipper Skipper;
  std::vector<Decl *> TopLevel;
};

class AmpAction : public ASTFrontendAction {
public:
  AmpAction(const RuleSet &Rules, const DriverOptions &Opts, TUResult &Out,
            const std::vector<std::pair<unsigned, unsigned>> *PreambleInactive,
            const std::vector<std::string> *PreambleLearned)
      : Rules(Rules), Opts(Opts), Out(Out), PreambleInactive(PreambleInactive), PreambleLearned(PreambleLearned) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, StringRef) override {
    CI.getFrontendOpts().SkipFunctionBodies = Opts.SkipBodies;
    CI.getPreprocessor().addPPCallbacks(std::make_unique<InactiveRegions>(Inactive));
    return std::make_unique<AmpConsumer>(CI, Rules, Opts, Inactive, Out, PreambleInactive, PreambleLearned);
  }

private:
  const RuleSet &Rules;
  const DriverOptions &Opts;
  TUResult &Out;
  const std::vector<std::pair<unsigned, unsigned>> *PreambleInactive;
  const std::vector<std::string> *PreambleLearned;
  std::vector<SourceRange> Inactive;
};

} // namespace

std::unique_ptr<FrontendAction> AmpActionFactory::create() {
  return std::make_unique<AmpAction>(Rules, Opts, Out, PreambleInactive, PreambleLearned);
}

} // namespace driver

} // namespace ampmigrate
