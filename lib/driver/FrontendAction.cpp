// The driver's frontend action for one translation unit, and the header-body skipping rule.
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
              const std::vector<std::pair<unsigned, unsigned>> *PreambleInactive)
      : CI(CI), Rules(Rules), Opts(Opts), Inactive(Inactive), Out(Out), PreambleInactive(PreambleInactive),
        Filter(CI.getSourceManager(), Opts.HeaderFilter), Skipper(Rules) {}

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
            const std::vector<std::pair<unsigned, unsigned>> *PreambleInactive)
      : Rules(Rules), Opts(Opts), Out(Out), PreambleInactive(PreambleInactive) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, StringRef) override {
    CI.getFrontendOpts().SkipFunctionBodies = Opts.SkipBodies;
    CI.getPreprocessor().addPPCallbacks(std::make_unique<InactiveRegions>(Inactive));
    return std::make_unique<AmpConsumer>(CI, Rules, Opts, Inactive, Out, PreambleInactive);
  }

private:
  const RuleSet &Rules;
  const DriverOptions &Opts;
  TUResult &Out;
  const std::vector<std::pair<unsigned, unsigned>> *PreambleInactive;
  std::vector<SourceRange> Inactive;
};

} // namespace

std::unique_ptr<FrontendAction> AmpActionFactory::create() {
  return std::make_unique<AmpAction>(Rules, Opts, Out, PreambleInactive);
}

} // namespace driver

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

} // namespace ampmigrate
