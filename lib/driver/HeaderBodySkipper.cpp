// The header-body skipping rule (HeaderBodySkipper) and the whole-word token test it shares with
// the lexical prefilter.
#include "ampmigrate/HeaderBodySkipper.h"
#include "ampmigrate/ShapeRecognisers.h"

#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace ampmigrate {

bool mentionsAnyToken(llvm::StringRef Text, const std::vector<std::string> &Tokens) {
  for (const std::string &T : Tokens) {
    size_t At = 0;
    while ((At = Text.find(T, At)) != llvm::StringRef::npos) {
      bool LeftOk = At == 0 || !(llvm::isAlnum(Text[At - 1]) || Text[At - 1] == '_');
      size_t End = At + T.size();
      bool RightOk = End >= Text.size() || !(llvm::isAlnum(Text[End]) || Text[End] == '_');
      if (LeftOk && RightOk)
        return true;
      At = End;
    }
  }
  return false;
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

void HeaderBodySkipper::learnNames(const std::vector<std::string> &Names) {
  for (const std::string &Name : Names)
    if (!llvm::is_contained(Tokens, Name) && !llvm::is_contained(LearnedTokens, Name))
      LearnedTokens.push_back(Name);
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
