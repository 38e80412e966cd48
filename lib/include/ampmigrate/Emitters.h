// Report formats: text (clang style), json, sarif, github annotations, parseable fix-its, and the
// clang-apply-replacements YAML that --export-fixes writes.
#pragma once

#include "ampmigrate/Finding.h"
#include "llvm/Support/raw_ostream.h"

namespace ampmigrate {

struct EmitOptions {
  bool Color = false;     ///< ANSI colours in text output
  bool ShowFixes = false; ///< text: print the fixed lines under each fixable lead finding
  std::string ToolName = "amp-migrate";
  std::string ToolVersion;
  std::string DocsBaseUri; ///< SARIF helpUri prefix; "" = relative "docs/checks/<id>.md"
};

/// `file:line:col: warning: message [check]`, the source line and a caret, then notes; last a
/// summary line "N warnings generated." (nothing when there are no findings).
void emitText(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS, const EmitOptions &O);
/// {"version": 1, "findings": [...], "summary": {...}} (docs/output-formats.md).
void emitJson(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS, const EmitOptions &O);
/// SARIF 2.1.0 for GitHub code scanning, with fixes.
void emitSarif(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS, const EmitOptions &O);
/// `::warning file=F,line=L,col=C,title=ID::message` (GitHub Actions workflow commands).
void emitGithub(const Report &R, llvm::raw_ostream &OS);
/// Text output followed, after each diagnostic with fixes, by clang's
/// `fix-it:"file":{L1:C1-L2:C2}:"text"` lines (-fdiagnostics-parseable-fixits).
void emitFixits(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS, const EmitOptions &O);
/// clang-apply-replacements YAML: MainSourceFile, Diagnostics[{DiagnosticName,
/// DiagnosticMessage{Message, FilePath, FileOffset, Replacements[]}, Level, BuildDirectory}].
void emitExportFixes(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS);

/// Converts a byte offset in `Text` to a 1-based line and column.
std::pair<unsigned, unsigned> lineAndColumn(llvm::StringRef Text, unsigned Offset);

} // namespace ampmigrate
