// NOLINT comments, check-id globs, and file text caching.
#include "ampmigrate/Driver.h"
#include "ampmigrate/InputFiles.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/GlobPattern.h"

namespace ampmigrate {

const std::string *FileTexts::get(const std::string &File) {
  auto It = Cache.find(File);
  if (It != Cache.end())
    return &It->second;
  if (Missing.count(File))
    return nullptr;
  auto Buf = readSourceFile(File);
  if (!Buf) {
    llvm::consumeError(Buf.takeError()); // the driver has said why, for a main file
    Missing[File] = true;
    return nullptr;
  }
  return &(Cache[File] = (*Buf)->getBuffer().str());
}

/// clang-tidy's check globs: `*` is the only wildcard; every other character stands for itself.
static bool globMatch(llvm::StringRef Glob, llvm::StringRef S) {
  std::string Escaped;
  for (char C : Glob) {
    if (C != '*' && !llvm::isAlnum(C) && C != '_' && C != '-')
      Escaped += '\\';
    Escaped += C;
  }
  llvm::Expected<llvm::GlobPattern> P = llvm::GlobPattern::create(Escaped);
  if (!P) {
    llvm::consumeError(P.takeError());
    return false;
  }
  return P->match(S);
}

bool checkEnabledByGlobs(llvm::StringRef Globs, llvm::StringRef Check) {
  bool Enabled = false;
  llvm::SmallVector<llvm::StringRef, 8> Parts;
  Globs.split(Parts, ',', -1, false);
  if (Parts.empty())
    return true;
  for (llvm::StringRef P : Parts) {
    P = P.trim();
    bool Neg = P.consume_front("-");
    if (globMatch(P, Check))
      Enabled = !Neg;
  }
  return Enabled;
}

/// Does a NOLINT-style marker at `Pos` in `Line` cover `Check`? `Marker` is e.g. "NOLINTNEXTLINE".
static bool markerCovers(llvm::StringRef Line, llvm::StringRef Marker, llvm::StringRef Check) {
  size_t At = 0;
  while ((At = Line.find(Marker, At)) != llvm::StringRef::npos) {
    llvm::StringRef Rest = Line.substr(At + Marker.size());
    At += Marker.size();
    // NOLINT must not be the prefix of NOLINTNEXTLINE / NOLINTBEGIN when looking for NOLINT.
    if (!Rest.empty() && (llvm::isAlpha(Rest[0])))
      continue;
    if (!Rest.starts_with("("))
      return true;
    llvm::StringRef Ids = Rest.drop_front().split(')').first;
    llvm::SmallVector<llvm::StringRef, 4> Parts;
    Ids.split(Parts, ',');
    for (llvm::StringRef Id : Parts)
      if (globMatch(Id.trim(), Check))
        return true;
  }
  return false;
}

void applyNoLint(std::vector<Finding> &Findings, SourceTexts &Texts) {
  std::vector<Finding> Kept;
  for (Finding &F : Findings) {
    const std::string *Text = Texts.get(F.Pos.File);
    if (!Text || F.Pos.Line == 0) {
      Kept.push_back(std::move(F));
      continue;
    }
    llvm::SmallVector<llvm::StringRef, 0> Lines;
    llvm::StringRef(*Text).split(Lines, '\n');
    auto LineAt = [&](unsigned N) -> llvm::StringRef { return N >= 1 && N <= Lines.size() ? Lines[N - 1] : ""; };
    bool Suppressed = markerCovers(LineAt(F.Pos.Line), "NOLINT", F.Check) ||
                      markerCovers(LineAt(F.Pos.Line - 1), "NOLINTNEXTLINE", F.Check);
    if (!Suppressed) {
      // NOLINTBEGIN(id) ... NOLINTEND(id) around the line. A BEGIN without a matching END later
      // in the file suppresses nothing (as in clang-tidy); the finding says so in a note.
      std::vector<unsigned> Open; // lines of BEGINs not closed yet
      std::vector<std::pair<unsigned, unsigned>> Closed;
      for (unsigned N = 1; N <= Lines.size(); ++N) {
        if (markerCovers(Lines[N - 1], "NOLINTBEGIN", F.Check))
          Open.push_back(N);
        if (markerCovers(Lines[N - 1], "NOLINTEND", F.Check) && !Open.empty()) {
          Closed.push_back({Open.back(), N});
          Open.pop_back();
        }
      }
      for (const auto &[B, E] : Closed)
        if (B < F.Pos.Line && F.Pos.Line < E)
          Suppressed = true;
      if (!Suppressed)
        for (unsigned B : Open)
          if (B < F.Pos.Line) {
            SourcePos P;
            P.File = F.Pos.File;
            P.Line = B;
            P.Column = static_cast<unsigned>(LineAt(B).find("NOLINTBEGIN")) + 1;
            for (unsigned N = 1; N < B; ++N)
              P.Offset += Lines[N - 1].size() + 1;
            P.Offset += P.Column - 1;
            F.Notes.push_back({P, "this NOLINTBEGIN has no matching NOLINTEND; it suppresses nothing"});
            break;
          }
    }
    if (!Suppressed)
      Kept.push_back(std::move(F));
  }
  Findings = std::move(Kept);
}

bool mentionsAnyToken(llvm::StringRef Text, const std::vector<std::string> &Tokens) {
  for (const std::string &T : Tokens) {
    size_t At = 0;
    while ((At = Text.find(T, At)) != llvm::StringRef::npos) {
      bool LeftOk = At == 0 || !(llvm::isAlnum(Text[At - 1]) || Text[At - 1] == '_');
      size_t End = At + T.size();
      bool RightOk = End >= Text.size() || !(llvm::isAlnum(Text[End]) || Text[End] == '_');
      if (LeftOk && RightOk)
        return true;
      At = End;
    }
  }
  return false;
}

} // namespace ampmigrate
