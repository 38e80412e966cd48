// The header-body skipping rule every parse applies (the driver's whole parse and the precompiled
// preambles of the driver and the language server), and the token test it shares with the prefilter.
#pragma once

#include "ampmigrate/Rules.h"

#include "clang/AST/DeclGroup.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/StringRef.h"
#include <map>
#include <string>
#include <vector>

namespace clang {
class CXXRecordDecl;
class Decl;
} // namespace clang

namespace ampmigrate {

/// True when the text mentions one of the tokens as a whole word (the lexical prefilter's test of
/// one file).
bool mentionsAnyToken(llvm::StringRef Text, const std::vector<std::string> &Tokens);

/// The body-skipping rule (DriverOptions::SkipBodies): a function body in a header that names no
/// AMP token cannot hold a finding. The tokens are the rules' names and the guard and scaler
/// classes learned so far in the translation unit (a guard defined in one header and used in
/// another makes the user's body worth parsing). One rule for every parse: the driver's whole
/// parse and the language server's precompiled preamble apply it alike, so that both see the same
/// declarations and give the same findings.
class HeaderBodySkipper {
public:
  explicit HeaderBodySkipper(const RuleSet &Rules) : Rules(Rules), Tokens(Rules.prefilterTokens()) {}
  bool shouldSkip(const clang::SourceManager &SM, const clang::Decl *D);
  /// Learns the guard and scaler classes of a finished top-level declaration (classes, nested
  /// ones, those inside namespaces, and the classes an out-of-line constructor completes). At the
  /// top level the inline bodies of a class are parsed by then; the preamble's builder sees only
  /// top-level declarations, so this is the one place classes are learned.
  void learn(const clang::SourceManager &SM, clang::DeclGroupRef DG);
  /// The classes learned so far (their names), and learning them from another parse: the build of
  /// a preamble that covers only the first lines of the include block hands what it learned to the
  /// parse of the rest, which then skips as a whole parse would.
  const std::vector<std::string> &learned() const { return LearnedTokens; }
  void learnNames(const std::vector<std::string> &Names);

private:
  bool mentionsAmp(const clang::SourceManager &SM, clang::FileID F);
  bool mentionsGrad(const clang::SourceManager &SM, clang::FileID F);
  void learnIn(const clang::SourceManager &SM, const clang::Decl *D);
  void learnClass(const clang::SourceManager &SM, const clang::CXXRecordDecl *RD);

  const RuleSet &Rules;
  std::vector<std::string> Tokens;
  std::vector<std::string> LearnedTokens;
  struct FileTokens {
    bool Mentions = false;
    size_t LearnedChecked = 0; ///< LearnedTokens[0, LearnedChecked) are known to be absent
  };
  std::map<unsigned, FileTokens> FileHasTokens; ///< by FileID
  std::map<unsigned, bool> FileHasGrad;         ///< by FileID: a project header naming grad
};

} // namespace ampmigrate
