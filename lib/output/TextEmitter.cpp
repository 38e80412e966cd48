// The clang-style text report: diagnostics with source line and caret, notes, and (with
// ShowFixes) the lines a fix rewrites, as they read afterwards.
#include "OutputCommon.h"
#include "ampmigrate/Emitters.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include <algorithm>

using clang::tooling::Replacement;

namespace ampmigrate {
namespace output {
namespace {

/// A run of original lines [FirstLine, LastLine] touched by some replacements of one file.
struct TouchedLines {
  unsigned FirstLine = 0, LastLine = 0;
  std::vector<Replacement> Reps;
};

std::vector<TouchedLines> groupByLines(LineTable &Lines, const std::string &File,
                                       std::vector<Replacement> Reps) {
  llvm::sort(Reps, [](const Replacement &A, const Replacement &B) {
    return std::make_pair(A.getOffset(), A.getLength()) <
           std::make_pair(B.getOffset(), B.getLength());
  });
  std::vector<TouchedLines> Groups;
  for (const Replacement &Rep : Reps) {
    unsigned End = Rep.getOffset() + Rep.getLength();
    unsigned First = Lines.position(File, Rep.getOffset())->first;
    // A deletion ending with a newline ends on the line that newline closes.
    unsigned Last = Rep.getLength() ? Lines.position(File, End - 1)->first : First;
    // Neighbouring lines read better as one block than as two headers.
    if (!Groups.empty() && First <= Groups.back().LastLine + 1) {
      Groups.back().LastLine = std::max(Groups.back().LastLine, Last);
      Groups.back().Reps.push_back(Rep);
      continue;
    }
    Groups.push_back({First, Last, {Rep}});
  }
  return Groups;
}

/// The text of the group's lines once its replacements are applied.
std::string rewrittenLines(LineTable &Lines, const std::string &File, const TouchedLines &G) {
  llvm::StringRef Text = *Lines.text(File);
  size_t Begin = Lines.lineStart(File, G.FirstLine);
  size_t End = Lines.lineStart(File, G.LastLine + 1);
  std::string Out;
  size_t Cursor = Begin;
  for (const Replacement &Rep : G.Reps) {
    // Overlapping edits within one step are refused when applied; show the first only.
    if (Rep.getOffset() < Cursor || Rep.getOffset() + Rep.getLength() > Text.size())
      continue;
    Out += Text.slice(Cursor, Rep.getOffset());
    Out += Rep.getReplacementText();
    Cursor = Rep.getOffset() + Rep.getLength();
  }
  if (Cursor < End)
    Out += Text.slice(Cursor, End);
  return Out;
}

void printFixedLines(llvm::raw_ostream &OS, LineTable &Lines, const Finding &F, bool Color) {
  // Per file in the order the fixes name them; identical edits from the step count once.
  std::vector<std::string> Files;
  std::map<std::string, std::vector<Replacement>> ByFile;
  for (const Replacement &Rep : F.Fixes) {
    std::vector<Replacement> &Reps = ByFile[Rep.getFilePath().str()];
    if (Reps.empty())
      Files.push_back(Rep.getFilePath().str());
    if (!llvm::is_contained(Reps, Rep))
      Reps.push_back(Rep);
  }
  for (const std::string &File : Files) {
    if (!Lines.text(File))
      continue;
    for (const TouchedLines &G : groupByLines(Lines, File, ByFile[File])) {
      {
        ColorScope Colors(OS, Color);
        OS.changeColor(llvm::raw_ostream::GREEN, /*Bold=*/true);
        OS << "fixed:";
        OS.resetColor();
      }
      OS << ' ' << File << ':' << G.FirstLine;
      if (G.LastLine != G.FirstLine)
        OS << '-' << G.LastLine;
      std::string New = rewrittenLines(Lines, File, G);
      if (New.empty()) {
        OS << ": (removed)\n";
        continue;
      }
      OS << ":\n";
      llvm::StringRef Rest(New);
      Rest.consume_back("\n");
      llvm::SmallVector<llvm::StringRef, 8> NewLines;
      Rest.split(NewLines, '\n');
      for (llvm::StringRef Line : NewLines) {
        Line.consume_back("\r");
        OS << Line << '\n';
      }
    }
  }
}

} // namespace

void emitTextReport(const Report &R, LineTable &Lines, llvm::raw_ostream &OS, const EmitOptions &O,
                    bool ParseableFixits) {
  for (const Finding &F : R.Findings) {
    printDiagnostic(OS, Lines, F.Pos, severityName(F.Level), F.Message, F.Check, O.Color);
    // Fix-its belong to the diagnostic, so they come before its notes (as clang prints them).
    if (ParseableFixits)
      printParseableFixits(OS, Lines, F);
    for (const Note &N : F.Notes)
      printDiagnostic(OS, Lines, N.Pos, "note", N.Message, "", O.Color);
    if (O.ShowFixes && !F.Fixes.empty())
      printFixedLines(OS, Lines, F, O.Color);
  }
  std::string Summary = generatedSummary(R);
  if (!Summary.empty())
    OS << Summary << '\n';
}

} // namespace output

void emitText(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS, const EmitOptions &O) {
  output::LineTable Lines(Texts);
  output::emitTextReport(R, Lines, OS, O, /*ParseableFixits=*/false);
}

} // namespace ampmigrate
