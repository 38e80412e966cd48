// LSP base-protocol framing: header lines up to a blank line, then Content-Length bytes of body.
#include "ampmigrate/LspTransport.h"

#include "llvm/ADT/StringRef.h"
#include <algorithm>

namespace ampmigrate {

LspIncoming readLspMessage(std::FILE *In) {
  long long Length = -1;
  std::string Problem;
  bool SawHeader = false;
  std::string Line;
  for (;;) {
    Line.clear();
    int C;
    while ((C = std::fgetc(In)) != EOF && C != '\n')
      if (Line.size() < 4096) // a header line longer than this is garbage: keep its start
        Line.push_back(static_cast<char>(C));
    if (C == EOF && Line.empty())
      return {};
    llvm::StringRef L = llvm::StringRef(Line).rtrim("\r");
    if (L.empty()) {
      if (SawHeader)
        break;
      if (C == EOF)
        return {};
      continue; // stray blank line between messages
    }
    SawHeader = true;
    auto [Name, Value] = L.split(':');
    if (Name.trim().equals_insensitive("Content-Length")) {
      long long N;
      if (Value.trim().getAsInteger(10, N) || N < 0)
        Problem = "invalid Content-Length '" + Value.trim().str() + "'";
      else
        Length = N;
    }
    if (C == EOF)
      return {};
  }
  if (Length < 0)
    return {std::nullopt, Problem.empty() ? "a header block without Content-Length" : Problem};
  if (Length > MaxLspMessageBytes) {
    // Skip the body without holding it.
    char Chunk[4096];
    for (long long Left = Length; Left > 0;) {
      size_t Want = static_cast<size_t>(std::min<long long>(Left, sizeof Chunk));
      size_t Got = std::fread(Chunk, 1, Want, In);
      if (Got == 0)
        return {};
      Left -= static_cast<long long>(Got);
    }
    return {std::nullopt, "Content-Length " + std::to_string(Length) + " exceeds the limit of " +
                              std::to_string(MaxLspMessageBytes) + " bytes; message skipped"};
  }
  std::string Body(static_cast<size_t>(Length), '\0');
  if (Length > 0 && std::fread(&Body[0], 1, Body.size(), In) != Body.size())
    return {};
  return {std::move(Body), ""};
}

} // namespace ampmigrate
