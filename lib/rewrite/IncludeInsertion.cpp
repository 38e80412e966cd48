// Where the target's #include goes: tooling::HeaderIncludes decides, after a check that the file
// does not already include it anywhere.
#include "ampmigrate/IncludeInsertion.h"
#include "clang/Tooling/Inclusions/HeaderIncludes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

using llvm::StringRef;

namespace ampmigrate {
namespace {

/// One logical line of the leading block, as the scan sees it.
struct Line {
  StringRef Text;   ///< without the newline
  unsigned End = 0; ///< offset just past the newline (or the end of the code)
};

/// Reads lines; tracks whether a block comment is open across them.
class LineScanner {
public:
  explicit LineScanner(StringRef Code) : Code(Code) {}
  bool next(Line &L) {
    if (Pos >= Code.size())
      return false;
    size_t NL = Code.find('\n', Pos);
    size_t End = NL == StringRef::npos ? Code.size() : NL + 1;
    L.Text = Code.slice(Pos, NL == StringRef::npos ? Code.size() : NL).rtrim("\r");
    L.End = unsigned(End);
    Pos = End;
    return true;
  }

private:
  StringRef Code;
  size_t Pos = 0;
};

/// What is left of a line once comments are removed; `InComment` carries a `/* ... */` that spans
/// lines. Strings are not looked at: the leading block holds directives and comments only.
std::string stripComments(StringRef Text, bool &InComment) {
  std::string Out;
  for (size_t I = 0; I < Text.size();) {
    if (InComment) {
      size_t Close = Text.find("*/", I);
      if (Close == StringRef::npos)
        return Out;
      InComment = false;
      I = Close + 2;
      Out += ' ';
      continue;
    }
    if (Text.substr(I).starts_with("//"))
      return Out;
    if (Text.substr(I).starts_with("/*")) {
      InComment = true;
      I += 2;
      continue;
    }
    Out += Text[I++];
  }
  return Out;
}

/// The directive name and its operand text of a preprocessor line (`#  include <x>` -> include, <x>).
bool directive(StringRef Stripped, StringRef &Name, StringRef &Rest) {
  StringRef S = Stripped.ltrim();
  if (!S.consume_front("#"))
    return false;
  S = S.ltrim();
  size_t E = 0;
  while (E < S.size() && (llvm::isAlnum(S[E]) || S[E] == '_'))
    ++E;
  Name = S.take_front(E);
  Rest = S.drop_front(E).trim();
  return true;
}

bool includesExactly(StringRef Code, StringRef Spelled) {
  bool InComment = false;
  LineScanner Lines(Code);
  for (Line L; Lines.next(L);) {
    std::string S = stripComments(L.Text, InComment);
    StringRef Name, Rest;
    if (directive(S, Name, Rest) && Name == "include" && Rest == Spelled)
      return true;
  }
  return false;
}

} // namespace

std::optional<IncludeInsertion> planIncludeInsertion(StringRef Code, StringRef Spelled,
                                                     StringRef FileName) {
  // Comment-aware and at any depth: a directive that is there already is never added twice
  // (HeaderIncludes would also take a line inside a block comment for one).
  if (includesExactly(Code, Spelled))
    return std::nullopt;
  // The byte-order mark is not code; the lexer behind HeaderIncludes sees what follows it.
  const unsigned Bom = Code.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  StringRef Body = Code.drop_front(Bom);
  const bool Angled = Spelled.starts_with("<");
  // The style: the new include is a category of its own, after the one every other include is
  // in, so that it goes last in the leading block and the user's order and grouping stay as they
  // are (HeaderIncludes' default would sort it in among the others).
  clang::tooling::IncludeStyle Style;
  Style.IncludeCategories = {{"^" + llvm::Regex::escape(Spelled) + "$", 2, 0, false},
                             {".*", 1, 0, false}};
  clang::tooling::HeaderIncludes Includes(FileName.empty() ? "input.cpp" : FileName, Body, Style);
  std::optional<clang::tooling::Replacement> R =
      Includes.insert(Spelled.drop_front().drop_back(), Angled, clang::tooling::IncludeDirective::Include);
  if (!R)
    return std::nullopt;
  IncludeInsertion Ins;
  Ins.Offset = Bom + R->getOffset();
  // The directive alone on its line, in the file's own line ending (a CRLF file stays CRLF).
  size_t FirstNL = Code.find('\n');
  StringRef EOL = FirstNL != StringRef::npos && FirstNL > 0 && Code[FirstNL - 1] == '\r' ? "\r\n" : "\n";
  Ins.Text = "#include " + Spelled.str() + EOL.str();
  if (Ins.Offset > 0 && Ins.Offset == Code.size() && Code.back() != '\n')
    Ins.Text = EOL.str() + Ins.Text;
  return Ins;
}

} // namespace ampmigrate
