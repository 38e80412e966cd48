// The language server's diagnostics: a check's findings and parse failures, published.
#include "LanguageServerInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace ampmigrate {
namespace lsp {

std::string readFileText(const std::string &Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  return Buf ? (*Buf)->getBuffer().str() : std::string();
}

/// Keeps a check's findings for code actions and publishes them (StateM held). The fixes of
/// findings not verified yet are not kept (D.Unverified holds them for verification).
void Server::publish(Document &D, const std::string &Text, Report R) {
  D.CheckedGeneration = D.Generation;
  D.CheckedText = Text;
  D.Findings.clear();
  json::Array Diags;
  LineIndex Idx(D.CheckedText, Utf8);
  for (Finding &F : R.Findings)
    if (samePath(F.Pos.File, D.Path)) {
      Diags.push_back(diagnostic(F, D, Idx));
      if (!D.Verified)
        F.Fixes.clear();
      D.Findings.push_back(std::move(F));
    }
  for (const FileOutcome &O : R.Files)
    if (O.Status == FileOutcome::State::Failed)
      Diags.push_back(parseFailure(O, D, Idx));
  Client.notify("textDocument/publishDiagnostics",
                json::Object{{"uri", D.Uri}, {"version", D.Version}, {"diagnostics", std::move(Diags)}});
}

bool Server::samePath(StringRef A, StringRef B) {
  if (A == B)
    return true;
  llvm::SmallString<256> PA(A), PB(B);
  llvm::sys::fs::make_absolute(PA);
  llvm::sys::fs::make_absolute(PB);
  llvm::sys::path::remove_dots(PA, true);
  llvm::sys::path::remove_dots(PB, true);
  return PA == PB;
}

/// The range of a finding: from its position to the end of the name there (`a::b::c`, `x.y`).
json::Object Server::range(const LineIndex &Idx, StringRef Text, unsigned Offset) {
  size_t End = std::min<size_t>(Offset, Text.size());
  auto IsName = [](char C) { return llvm::isAlnum(C) || C == '_'; };
  while (End < Text.size()) {
    if (IsName(Text[End]))
      ++End;
    else if (Text.substr(End).starts_with("::") && End + 2 < Text.size() && IsName(Text[End + 2]))
      End += 2;
    else
      break;
  }
  if (End == Offset && End < Text.size() && Text[End] != '\n')
    ++End;
  return json::Object{{"start", Idx.position(Offset)}, {"end", Idx.position(static_cast<unsigned>(End))}};
}

json::Value Server::diagnostic(const Finding &F, const Document &D, const LineIndex &Idx) {
  // Pos.Offset is into the checked text; the line and column say the same, in bytes.
  unsigned Offset = F.Pos.Offset;
  if (Offset > D.CheckedText.size())
    Offset = static_cast<unsigned>(std::min(D.CheckedText.size(), Idx.lineStart(F.Pos.Line) + F.Pos.Column - 1));
  json::Object Diag{{"range", range(Idx, D.CheckedText, Offset)},
                    {"severity", F.Level == Severity::Error ? 1 : 2},
                    {"code", F.Check},
                    {"source", "amp-migrate"},
                    {"message", F.Message}};
  json::Array Related;
  for (const Note &N : F.Notes) {
    if (N.Pos.File.empty())
      continue;
    json::Object Loc;
    if (samePath(N.Pos.File, D.Path)) {
      Loc = json::Object{{"uri", D.Uri}, {"range", range(Idx, D.CheckedText, N.Pos.Offset)}};
    } else {
      std::string Text = readFileText(N.Pos.File);
      LineIndex NI(Text, Utf8);
      Loc = json::Object{{"uri", pathToUri(absolute(N.Pos.File))}, {"range", range(NI, Text, N.Pos.Offset)}};
    }
    Related.push_back(json::Object{{"location", std::move(Loc)}, {"message", N.Message}});
  }
  if (!Related.empty())
    Diag["relatedInformation"] = std::move(Related);
  if (!F.StepId.empty())
    Diag["data"] = json::Object{{"stepId", F.StepId}, {"fixable", F.Fixable}};
  return Diag;
}

/// A file that does not parse is not analysed: say so once, at the first error.
json::Value Server::parseFailure(const FileOutcome &O, const Document &D, const LineIndex &Idx) {
  StringRef First = StringRef(O.Error).split('\n').first;
  unsigned Line = 1, Col = 1;
  // "file:line:col: error: message"
  size_t E = First.find(": error: ");
  if (E != StringRef::npos) {
    StringRef Loc = First.take_front(E);
    auto [Rest, ColS] = Loc.rsplit(':');
    auto [FileS, LineS] = Rest.rsplit(':');
    unsigned L, C;
    if (!LineS.getAsInteger(10, L) && !ColS.getAsInteger(10, C) && samePath(FileS, D.Path)) {
      Line = L;
      Col = C;
    }
    First = First.drop_front(E + 2);
  }
  size_t Offset = std::min(D.CheckedText.size(), Idx.lineStart(Line) + Col - 1);
  return json::Object{{"range", json::Object{{"start", Idx.position(static_cast<unsigned>(Offset))},
                                             {"end", Idx.position(static_cast<unsigned>(Offset))}}},
                      {"severity", 3},
                      {"source", "amp-migrate"},
                      {"message", ("not analysed, the file does not parse: " + First).str()}};
}

std::string Server::absolute(StringRef P) {
  llvm::SmallString<256> S(P);
  llvm::sys::fs::make_absolute(S);
  llvm::sys::path::remove_dots(S, true);
  return std::string(S);
}

} // namespace lsp
} // namespace ampmigrate
