// --export-fixes: the YAML clang-tidy writes and clang-apply-replacements reads, produced through
// clang's own serialisation so the two stay in step.
#include "ampmigrate/Emitters.h"
#include "clang/Tooling/Core/Diagnostic.h"
#include "clang/Tooling/DiagnosticsYaml.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/YAMLTraits.h"

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

void emitExportFixes(const Report &R, llvm::raw_ostream &OS) {
  clang::tooling::TranslationUnitDiagnostics TUD;
  if (!R.Files.empty())
    TUD.MainSourceFile = R.Files.front().File;
  else if (!R.Findings.empty())
    TUD.MainSourceFile = R.Findings.front().Pos.File;

  for (const Finding &F : R.Findings) {
    clang::tooling::DiagnosticMessage Message = messageAt(F.Pos, F.Message);
    for (const clang::tooling::Replacement &Rep : F.Fixes) {
      clang::tooling::Replacements &Reps = Message.Fix[Rep.getFilePath()];
      // Replacements::add would merge two identical insertions into a doubled one.
      if (llvm::is_contained(Reps, Rep))
        continue;
      // A step repeating one edit (the same include for two scopes) exports it once; a real
      // overlap is the applier's to refuse, so it is dropped here rather than written twice.
      if (llvm::Error Err = Reps.add(Rep))
        llvm::consumeError(std::move(Err));
    }
    llvm::SmallVector<clang::tooling::DiagnosticMessage, 1> Notes;
    for (const Note &N : F.Notes)
      Notes.push_back(messageAt(N.Pos, N.Message));
    TUD.Diagnostics.emplace_back(F.Check, Message, Notes,
                                 F.Level == Severity::Error ? clang::tooling::Diagnostic::Error
                                                            : clang::tooling::Diagnostic::Warning,
                                 R.BuildDirectory);
  }

  llvm::yaml::Output YAML(OS);
  YAML << TUD;
}

} // namespace ampmigrate
