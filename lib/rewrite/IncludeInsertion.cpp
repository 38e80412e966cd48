#include "ampmigrate/IncludeInsertion.h"
#include "llvm/ADT/StringExtras.h"

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

std::optional<IncludeInsertion> planIncludeInsertion(StringRef Code, StringRef Spelled) {
  if (includesExactly(Code, Spelled))
    return std::nullopt;
  unsigned Start = Code.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  unsigned LastInclude = 0, AfterGuardOrOnce = 0;
  bool HaveInclude = false, HaveGuardOrOnce = false;
  // The header guard: the file's first directive `#ifndef X` followed by `#define X`.
  std::string GuardMacro;
  bool FirstDirective = true, ExpectGuardDefine = false;
  int Depth = 0, GuardDepth = -1;
  bool InComment = false;
  LineScanner Lines(Code);
  for (Line L; Lines.next(L);) {
    std::string Stripped = stripComments(L.Text, InComment);
    StringRef Name, Rest;
    if (!directive(Stripped, Name, Rest)) {
      if (StringRef(Stripped).trim().empty())
        continue;
      break; // the first line of code ends the leading block
    }
    bool WasFirst = FirstDirective;
    FirstDirective = false;
    if (ExpectGuardDefine) {
      ExpectGuardDefine = false;
      if (Name == "define" && Rest.take_while([](char C) { return !llvm::isSpace(C); }) == GuardMacro) {
        GuardDepth = Depth;
        AfterGuardOrOnce = L.End;
        HaveGuardOrOnce = true;
        continue;
      }
      GuardMacro.clear(); // an #ifndef that guards something else: a condition after all
    }
    if (Name == "if" || Name == "ifdef" || Name == "ifndef") {
      ++Depth;
      if (WasFirst && Name == "ifndef") {
        GuardMacro = Rest.str();
        ExpectGuardDefine = true;
      }
      continue;
    }
    if (Name == "endif") {
      if (Depth > 0)
        --Depth;
      if (GuardDepth >= 0 && Depth < GuardDepth)
        break; // the guard closed: nothing after it belongs to the header
      continue;
    }
    int Unconditional = GuardDepth >= 0 ? GuardDepth : 0;
    if (Depth != Unconditional)
      continue; // inside #if/#else: not an anchor
    if (Name == "include") {
      LastInclude = L.End;
      HaveInclude = true;
    } else if (Name == "pragma" && Rest == "once" && !HaveGuardOrOnce) {
      AfterGuardOrOnce = L.End;
      HaveGuardOrOnce = true;
    }
  }
  IncludeInsertion Ins;
  Ins.Offset = HaveInclude ? LastInclude : HaveGuardOrOnce ? AfterGuardOrOnce : Start;
  // The file's own line ending (a CRLF file stays CRLF).
  size_t FirstNL = Code.find('\n');
  StringRef EOL = FirstNL != StringRef::npos && FirstNL > 0 && Code[FirstNL - 1] == '\r' ? "\r\n" : "\n";
  Ins.Text = "#include " + Spelled.str() + EOL.str();
  if (Ins.Offset > 0 && Ins.Offset == Code.size() && Code.back() != '\n')
    Ins.Text = EOL.str() + Ins.Text;
  return Ins;
}

} // namespace ampmigrate
