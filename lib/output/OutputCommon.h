// Shared by the report emitters: source lines and carets, path spelling, severity names.
#pragma once

#include "ampmigrate/Finding.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ampmigrate {
struct EmitOptions;
namespace output {

/// The report's files split into lines once each, so that positions for many findings in one
/// large file stay cheap. Lines and columns are 1-based; columns count bytes, like clang's.
class LineTable {
public:
  explicit LineTable(SourceTexts &Texts) : Texts(Texts) {}
  /// The file's text, or nullptr when it cannot be read.
  const std::string *text(const std::string &File);
  /// The line and column of a byte offset (clamped to the end), or nullopt when unreadable.
  std::optional<std::pair<unsigned, unsigned>> position(const std::string &File, unsigned Offset);
  /// Line `Line` without its terminator; a null StringRef when out of range or unreadable.
  llvm::StringRef line(const std::string &File, unsigned Line);
  /// The byte offset line `Line` starts at; the text's size past the last line.
  unsigned lineStart(const std::string &File, unsigned Line);

private:
  struct Lines {
    const std::string *Text = nullptr;
    std::vector<unsigned> Starts; ///< offset of each line's first byte
  };
  Lines &lines(const std::string &File);
  SourceTexts &Texts;
  std::map<std::string, Lines> Cache;
};

/// The caret line to print under `Line`, pointing at 1-based byte column `Column`. Tabs in the
/// source are mirrored so the caret lines up whatever the reader's tab width.
std::string caretLine(llvm::StringRef Line, unsigned Column);

/// "warning" or "error".
llvm::StringRef severityName(Severity S);

/// `Path` relative to the current directory when it lies below it, else "" (the caller then
/// spells it absolutely).
std::string pathBelowCurrentDir(llvm::StringRef Path);

/// `Path` made absolute and free of "." / ".." components.
std::string absolutePath(llvm::StringRef Path);

/// Counts the warnings and errors of a report: "2 warnings and 1 error generated." (clang's
/// wording); empty when there are none.
std::string generatedSummary(const Report &R);

/// Prints one clang-style diagnostic block: location, level, message, optional "[check]", then the
/// source line and a caret when the text is available.
/// Colours on `OS` as `Color` says for the lifetime of the scope (raw_ostream::changeColor writes
/// nothing while they are off), then as they were.
class ColorScope {
public:
  ColorScope(llvm::raw_ostream &OS, bool Color) : OS(OS), Was(OS.colors_enabled()) {
    OS.enable_colors(Color);
  }
  ~ColorScope() { OS.enable_colors(Was); }

private:
  llvm::raw_ostream &OS;
  bool Was;
};

void printDiagnostic(llvm::raw_ostream &OS, LineTable &Lines, const SourcePos &Pos,
                     llvm::StringRef Level, llvm::StringRef Message, llvm::StringRef Check,
                     bool Color);

/// The text report; with `ParseableFixits`, each fixable diagnostic is followed by its
/// `fix-it:` lines (emitFixits).
void emitTextReport(const Report &R, LineTable &Lines, llvm::raw_ostream &OS, const EmitOptions &O,
                    bool ParseableFixits);

/// One `fix-it:"file":{L1:C1-L2:C2}:"text"` line per replacement of `F`.
void printParseableFixits(llvm::raw_ostream &OS, LineTable &Lines, const Finding &F);

} // namespace output
} // namespace ampmigrate
