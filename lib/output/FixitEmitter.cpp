// Text output plus clang's machine-readable fix-it lines (-fdiagnostics-parseable-fixits), the
// form editor integrations already parse.
#include "OutputCommon.h"
#include "ampmigrate/Emitters.h"

namespace ampmigrate {
namespace output {

void printParseableFixits(llvm::raw_ostream &OS, LineTable &Lines, const Finding &F) {
  for (const clang::tooling::Replacement &Rep : F.Fixes) {
    std::string File = Rep.getFilePath().str();
    auto Begin = Lines.position(File, Rep.getOffset());
    auto End = Lines.position(File, Rep.getOffset() + Rep.getLength());
    // Without the text there is no line/column to give; a wrong position is worse than none.
    if (!Begin || !End)
      continue;
    auto [L1, C1] = *Begin;
    auto [L2, C2] = *End;
    // write_escaped gives clang's escaping: \\ \" \n \t and octal for anything unprintable.
    OS << "fix-it:\"";
    OS.write_escaped(Rep.getFilePath());
    OS << "\":{" << L1 << ':' << C1 << '-' << L2 << ':' << C2 << "}:\"";
    OS.write_escaped(Rep.getReplacementText());
    OS << "\"\n";
  }
}

} // namespace output

void emitFixits(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS, const EmitOptions &O) {
  output::LineTable Lines(Texts);
  output::emitTextReport(R, Lines, OS, O, /*ParseableFixits=*/true);
}

} // namespace ampmigrate
