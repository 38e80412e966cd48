// --export-fixes: the YAML clang-tidy writes and clang-apply-replacements reads, produced through
// clang's own serialisation so the two stay in step.
#include "ampmigrate/Emitters.h"
#include "ampmigrate/FixApplier.h"
#include "clang/Tooling/Core/Diagnostic.h"
#include "clang/Tooling/DiagnosticsYaml.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/YAMLTraits.h"
#include <map>
#include <set>

namespace ampmigrate {
namespace {

clang::tooling::DiagnosticMessage messageAt(const SourcePos &Pos, llvm::StringRef Message) {
  clang::tooling::DiagnosticMessage M;
  M.Message = Message.str();
  M.FilePath = Pos.File;
  M.FileOffset = Pos.Offset;
  return M;
}

} // namespace

void emitExportFixes(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS) {
  clang::tooling::TranslationUnitDiagnostics TUD;
  if (!R.Files.empty())
    TUD.MainSourceFile = R.Files.front().File;
  else if (!R.Findings.empty())
    TUD.MainSourceFile = R.Findings.front().Pos.File;

  // clang-apply-replacements merges identical edits only across TUs (files), and this is one:
  // an edit several steps share (the same #include) is exported with its first step only.
  std::set<clang::tooling::Replacement> Exported;
  for (const Finding &F : R.Findings) {
    clang::tooling::DiagnosticMessage Message = messageAt(F.Pos, F.Message);
    std::vector<clang::tooling::Replacement> New;
    bool Broken = false;
    for (const clang::tooling::Replacement &Fix : F.Fixes) {
      // clang-apply-replacements inserts the text as given: CRLF files need CRLF text.
      const std::string *Text = Texts.get(Fix.getFilePath().str());
      clang::tooling::Replacement Rep = Text ? adaptToFile(Fix, *Text) : Fix;
      if (Exported.count(Rep) || llvm::is_contained(New, Rep))
        continue;
      New.push_back(Rep);
      if (llvm::Error Err = Message.Fix[Rep.getFilePath()].add(Rep)) {
        llvm::consumeError(std::move(Err));
        Broken = true;
      }
    }
    // A step whose own edits overlap is exported without fixes: half a step is worse than none.
    if (Broken)
      Message.Fix.clear();
    else
      Exported.insert(New.begin(), New.end());
    llvm::SmallVector<clang::tooling::DiagnosticMessage, 1> Notes;
    for (const Note &N : F.Notes)
      Notes.push_back(messageAt(N.Pos, N.Message));
    TUD.Diagnostics.emplace_back(F.Check, Message, Notes,
                                 F.Level == Severity::Error ? clang::tooling::Diagnostic::Error
                                                            : clang::tooling::Diagnostic::Warning,
                                 R.BuildDirectory);
  }

  // What the edits were computed from, for --merge-fixes and --apply-fixes to check.
  std::map<std::string, std::string> Digests;
  for (const clang::tooling::Diagnostic &D : TUD.Diagnostics)
    for (const auto &Entry : D.Message.Fix)
      if (auto It = R.ParsedDigests.find(Entry.first().str()); It != R.ParsedDigests.end())
        Digests[It->first] = It->second;
  OS << fixFileDigestLines(Digests);
  llvm::yaml::Output YAML(OS);
  YAML << TUD;
}

} // namespace ampmigrate
