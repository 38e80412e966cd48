// Source lines, carets, path spelling and summary wording shared by the report emitters.
#include "OutputCommon.h"
#include "ampmigrate/Emitters.h"
#include "ampmigrate/SourceText.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <algorithm>

namespace ampmigrate {

std::pair<unsigned, unsigned> lineAndColumn(llvm::StringRef Text, unsigned Offset) {
  // An offset past the end (a fix appending to the file) still gets a position: the end.
  if (Offset > Text.size())
    Offset = Text.size();
  llvm::StringRef Before = Text.take_front(Offset);
  unsigned Line = 1 + Before.count('\n');
  size_t LineStart = Before.rfind('\n');
  LineStart = LineStart == llvm::StringRef::npos ? 0 : LineStart + 1;
  return {Line, Offset - static_cast<unsigned>(LineStart) + 1};
}

namespace output {

static llvm::StringRef withoutTerminator(llvm::StringRef Line) {
  Line.consume_back("\n");
  Line.consume_back("\r");
  return Line;
}

LineTable::Lines &LineTable::lines(const std::string &File) {
  auto [It, Inserted] = Cache.try_emplace(File);
  if (!Inserted)
    return It->second;
  Lines &L = It->second;
  L.Text = Texts.get(File);
  if (!L.Text)
    return L;
  L.Starts.push_back(0);
  for (size_t I = 0; I < L.Text->size(); ++I)
    if ((*L.Text)[I] == '\n')
      L.Starts.push_back(I + 1);
  return L;
}

const std::string *LineTable::text(const std::string &File) { return lines(File).Text; }

std::optional<std::pair<unsigned, unsigned>> LineTable::position(const std::string &File,
                                                                 unsigned Offset) {
  Lines &L = lines(File);
  if (!L.Text)
    return std::nullopt;
  Offset = std::min<size_t>(Offset, L.Text->size());
  // The last line starting at or before Offset.
  auto It = std::upper_bound(L.Starts.begin(), L.Starts.end(), Offset) - 1;
  return std::make_pair(unsigned(It - L.Starts.begin()) + 1, Offset - *It + 1);
}

llvm::StringRef LineTable::line(const std::string &File, unsigned Line) {
  Lines &L = lines(File);
  if (!L.Text || Line == 0 || Line > L.Starts.size())
    return {};
  size_t Begin = L.Starts[Line - 1];
  size_t End = Line < L.Starts.size() ? L.Starts[Line] : L.Text->size();
  return withoutTerminator(llvm::StringRef(*L.Text).slice(Begin, End));
}

unsigned LineTable::lineStart(const std::string &File, unsigned Line) {
  Lines &L = lines(File);
  if (!L.Text)
    return 0;
  if (Line == 0)
    return 0;
  return Line <= L.Starts.size() ? L.Starts[Line - 1] : L.Text->size();
}

std::string caretLine(llvm::StringRef Line, unsigned Column) {
  std::string Caret;
  for (unsigned I = 0; I + 1 < Column; ++I) {
    if (I >= Line.size()) {
      Caret += ' ';
      continue;
    }
    unsigned char C = Line[I];
    // A multi-byte UTF-8 character takes one cell on screen, so only its lead byte pads.
    if ((C & 0xC0) == 0x80)
      continue;
    Caret += C == '\t' ? '\t' : ' ';
  }
  Caret += '^';
  return Caret;
}

llvm::StringRef severityName(Severity S) { return S == Severity::Error ? "error" : "warning"; }

std::string absolutePath(llvm::StringRef Path) {
  llvm::SmallString<256> Abs(Path);
  llvm::sys::fs::make_absolute(Abs);
  llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
  return std::string(Abs);
}

std::string pathBelowCurrentDir(llvm::StringRef Path) {
  llvm::SmallString<256> Cwd;
  if (llvm::sys::fs::current_path(Cwd))
    return "";
  llvm::sys::path::remove_dots(Cwd, true);
  std::string Abs = absolutePath(Path);
  llvm::StringRef Rest(Abs);
  if (!Rest.consume_front(Cwd))
    return "";
  // "/work/a" is not below "/work/ab"; the prefix must end at a separator.
  if (!Cwd.ends_with("/") && !Rest.consume_front("/"))
    return "";
  return std::string(Rest);
}

std::string generatedSummary(const Report &R) {
  unsigned Warnings = 0, Errors = 0;
  for (const Finding &F : R.Findings)
    ++(F.Level == Severity::Error ? Errors : Warnings);
  if (Warnings == 0 && Errors == 0)
    return "";
  std::string S;
  llvm::raw_string_ostream OS(S);
  if (Warnings)
    OS << Warnings << (Warnings == 1 ? " warning" : " warnings");
  if (Warnings && Errors)
    OS << " and ";
  if (Errors)
    OS << Errors << (Errors == 1 ? " error" : " errors");
  OS << " generated.";
  return S;
}

// Clang's palette (as clang's TextDiagnostic sets it): bold locations and messages, coloured level
// names, green carets.
static llvm::raw_ostream::Colors levelColor(llvm::StringRef Level) {
  if (Level == "error")
    return llvm::raw_ostream::RED;
  if (Level == "warning")
    return llvm::raw_ostream::MAGENTA;
  return llvm::raw_ostream::CYAN;
}

void printDiagnostic(llvm::raw_ostream &OS, LineTable &Lines, const SourcePos &Pos,
                     llvm::StringRef Level, llvm::StringRef Message, llvm::StringRef Check,
                     bool Color) {
  ColorScope Colors(OS, Color);
  if (!Pos.File.empty()) {
    OS.changeColor(llvm::raw_ostream::SAVEDCOLOR, /*Bold=*/true);
    OS << positionText(Pos.File, Pos.Line, Pos.Column) << ": ";
  }
  OS.changeColor(levelColor(Level), /*Bold=*/true);
  OS << Level << ':';
  OS.resetColor();
  OS.changeColor(llvm::raw_ostream::SAVEDCOLOR, /*Bold=*/true);
  OS << ' ' << Message;
  if (!Check.empty())
    OS << " [" << Check << ']';
  OS.resetColor();
  OS << '\n';

  if (Pos.File.empty() || Pos.Line == 0)
    return;
  llvm::StringRef Line = Lines.line(Pos.File, Pos.Line);
  if (!Line.data())
    return;
  // Clang's columns count a UTF-8 BOM; terminals show nothing for it, so neither do we.
  unsigned Column = Pos.Column;
  if (Pos.Line == 1 && Line.consume_front("\xEF\xBB\xBF"))
    Column = Column > 3 ? Column - 3 : 1;
  OS << Line << '\n';
  OS.changeColor(llvm::raw_ostream::GREEN, /*Bold=*/true);
  OS << caretLine(Line, Column);
  OS.resetColor();
  OS << '\n';
}

} // namespace output
} // namespace ampmigrate
