// Text output plus clang's machine-readable fix-it lines (-fdiagnostics-parseable-fixits), the
// form editor integrations already parse.
#include "OutputCommon.h"
#include "ampmigrate/Emitters.h"

namespace ampmigrate {
namespace output {

void printParseableFixits(llvm::raw_ostream &OS, SourceTexts &Texts, const Finding &F) {
  for (const clang::tooling::Replacement &Rep : F.Fixes) {
    const std::string *Text = Texts.get(Rep.getFilePath().str());
    // Without the text there is no line/column to give; a wrong position is worse than none.
    if (!Text)
      continue;
    auto [L1, C1] = lineAndColumn(*Text, Rep.getOffset());
    auto [L2, C2] = lineAndColumn(*Text, Rep.getOffset() + Rep.getLength());
    // write_escaped gives clang's escaping: \\ \" \n \t and octal for anything unprintable.
    OS << "fix-it:\"";
    OS.write_escaped(Rep.getFilePath());
    OS << "\":{" << L1 << ':' << C1 << '-' << L2 << ':' << C2 << "}:\"";
    OS.write_escaped(Rep.getReplacementText());
    OS << "\"\n";
  }
}

} // namespace output

void emitFixits(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS,
                const EmitOptions &O) {
  output::emitTextReport(R, Texts, OS, O, /*ParseableFixits=*/true);
}

} // namespace ampmigrate
