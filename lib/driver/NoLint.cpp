// NOLINT comments (over findings, and over the edits of fixes), check-id globs, and file text
// caching.
#include "ampmigrate/Driver.h"
#include "ampmigrate/Checks.h"
#include "ampmigrate/InputFiles.h"
#include "ampmigrate/SourceText.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Path.h"
#include <memory>
#include <optional>
#include <tuple>

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

namespace {

/// Does a NOLINT-style marker in `Line` cover `Check`? `Marker` is e.g. "NOLINTNEXTLINE".
bool markerCovers(llvm::StringRef Line, llvm::StringRef Marker, llvm::StringRef Check) {
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

/// A marker that covers a line: the line it is written on and its kind ("NOLINT",
/// "NOLINTNEXTLINE", "NOLINTBEGIN").
struct NoLintMarker {
  unsigned Line;
  llvm::StringRef Kind;
};

/// The NOLINT markers of one file: which line's findings (or edits) each check's markers cover.
class NoLintMarkers {
public:
  explicit NoLintMarkers(llvm::StringRef Text) : Any(Text.contains("NOLINT")) { Text.split(Lines, '\n'); }

  /// Whether the file holds a marker at all (most do not).
  bool any() const { return Any; }

  llvm::StringRef line(unsigned N) const { return N >= 1 && N <= Lines.size() ? Lines[N - 1] : ""; }

  /// The marker that suppresses `Check` on line N, or none. With `Inclusive`, the BEGIN and END
  /// lines of a range are covered too (an edit there would move or delete the marker).
  std::optional<NoLintMarker> suppressor(unsigned N, llvm::StringRef Check, bool Inclusive) {
    if (!Any)
      return std::nullopt;
    if (markerCovers(line(N), "NOLINT", Check))
      return NoLintMarker{N, "NOLINT"};
    if (N > 1 && markerCovers(line(N - 1), "NOLINTNEXTLINE", Check))
      return NoLintMarker{N - 1, "NOLINTNEXTLINE"};
    for (const auto &[B, E] : ranges(Check).Closed)
      if (Inclusive ? B <= N && N <= E : B < N && N < E)
        return NoLintMarker{B, "NOLINTBEGIN"};
    return std::nullopt;
  }

  /// The first NOLINTBEGIN for `Check` before line N that no NOLINTEND closes, or 0.
  unsigned unclosedBeginBefore(unsigned N, llvm::StringRef Check) {
    for (unsigned B : ranges(Check).Open)
      if (B < N)
        return B;
    return 0;
  }

  SourcePos position(const std::string &File, unsigned N, llvm::StringRef Marker) const {
    SourcePos P;
    P.File = File;
    P.Line = N;
    P.Column = static_cast<unsigned>(line(N).find(Marker)) + 1;
    for (unsigned I = 1; I < N; ++I)
      P.Offset += Lines[I - 1].size() + 1;
    P.Offset += P.Column - 1;
    return P;
  }

  /// The 1-based line of a byte offset.
  unsigned lineOf(unsigned Offset) const {
    unsigned N = 1, Start = 0;
    for (; N <= Lines.size(); ++N) {
      unsigned End = Start + static_cast<unsigned>(Lines[N - 1].size());
      if (Offset <= End)
        return N;
      Start = End + 1;
    }
    return static_cast<unsigned>(Lines.size());
  }

private:
  struct Ranges {
    std::vector<std::pair<unsigned, unsigned>> Closed;
    std::vector<unsigned> Open; ///< BEGINs no END closes
  };
  /// NOLINTBEGIN(id) ... NOLINTEND(id). A BEGIN without a matching END later in the file
  /// suppresses nothing (as in clang-tidy).
  const Ranges &ranges(llvm::StringRef Check) {
    auto [It, New] = ByCheck.try_emplace(Check.str());
    if (!New)
      return It->second;
    for (unsigned N = 1; N <= Lines.size(); ++N) {
      if (markerCovers(Lines[N - 1], "NOLINTBEGIN", Check))
        It->second.Open.push_back(N);
      if (markerCovers(Lines[N - 1], "NOLINTEND", Check) && !It->second.Open.empty()) {
        It->second.Closed.push_back({It->second.Open.back(), N});
        It->second.Open.pop_back();
      }
    }
    return It->second;
  }

  bool Any;
  llvm::SmallVector<llvm::StringRef, 0> Lines;
  std::map<std::string, Ranges> ByCheck;
};

/// The markers of each file a report names, read once.
class MarkersByFile {
public:
  explicit MarkersByFile(SourceTexts &Texts) : Texts(Texts) {}
  NoLintMarkers *get(const std::string &File) {
    auto It = Files.find(File);
    if (It != Files.end())
      return It->second.get();
    const std::string *Text = Texts.get(File);
    auto &Slot = Files[File];
    if (Text)
      Slot = std::make_unique<NoLintMarkers>(*Text);
    return Slot.get();
  }

private:
  SourceTexts &Texts;
  std::map<std::string, std::unique_ptr<NoLintMarkers>> Files;
};

/// The first edit of `Fix` on a line under a NOLINT of an amp check (or of every check), with the
/// marker that covers it.
std::optional<std::pair<SourcePos, NoLintMarker>> editUnderNoLint(const StepFix &Fix, MarkersByFile &Markers) {
  for (const clang::tooling::Replacement &R : Fix.Edits) {
    std::string File = R.getFilePath().str();
    NoLintMarkers *M = Markers.get(File);
    if (!M || !M->any())
      continue;
    unsigned First = M->lineOf(R.getOffset());
    unsigned Last = R.getLength() ? M->lineOf(R.getOffset() + R.getLength() - 1) : First;
    for (unsigned N = First; N <= Last; ++N)
      for (const CheckInfo &C : allChecks())
        if (std::optional<NoLintMarker> Marker = M->suppressor(N, C.Id, /*Inclusive=*/true)) {
          SourcePos At;
          At.File = File;
          At.Line = N;
          return std::make_pair(At, *Marker);
        }
  }
  return std::nullopt;
}

} // namespace

void withdrawNoLintFixes(std::vector<Finding> &Findings, std::vector<StepFix> &Fixes, SourceTexts &Texts,
                         const std::function<bool(llvm::StringRef)> &CheckEnabled) {
  MarkersByFile Markers(Texts);
  std::vector<StepFix> Kept;
  std::vector<Finding> Added;
  for (StepFix &Fix : Fixes) {
    std::optional<std::pair<SourcePos, NoLintMarker>> Hit = editUnderNoLint(Fix, Markers);
    if (!Hit) {
      Kept.push_back(std::move(Fix));
      continue;
    }
    const auto &[Edit, Marker] = *Hit;
    llvm::StringRef Name = llvm::sys::path::filename(Edit.File);
    std::string Why = "its edit at " + positionText(Name, Edit.Line) + " lies under the " + Marker.Kind.str() +
                      " at " + positionText(Name, Marker.Line) + ", so the step is left whole";
    // The reason goes on the step's first finding that a NOLINT of amp-manual-migration does not
    // hide (a NOLINT on the step's first line would otherwise hide why the step was not fixed).
    Finding *Host = nullptr;
    for (Finding &F : Findings) {
      if (F.StepId != Fix.StepId)
        continue;
      F.Fixable = false;
      NoLintMarkers *M = Markers.get(F.Pos.File);
      bool Hidden = M && F.Pos.Line && M->suppressor(F.Pos.Line, "amp-manual-migration", false);
      if (!Hidden && (!Host || std::tie(F.Pos.File, F.Pos.Offset) < std::tie(Host->Pos.File, Host->Pos.Offset)))
        Host = &F;
    }
    if (!Host)
      continue; // the whole step is under NOLINT: nothing to say
    NoLintMarkers *M = Markers.get(Edit.File);
    Note N{M->position(Edit.File, Marker.Line, Marker.Kind), "the " + Marker.Kind.str() + " that covers the edit"};
    if (!CheckEnabled("amp-manual-migration")) {
      Host->Notes.push_back({N.Pos, "not fixed: " + Why});
      continue;
    }
    Finding F;
    F.Check = "amp-manual-migration";
    F.Pos = Host->Pos;
    F.StepId = Fix.StepId;
    F.Message = "not migrated automatically: " + Why;
    F.Notes.push_back(std::move(N));
    Added.push_back(std::move(F));
  }
  Fixes = std::move(Kept);
  for (Finding &F : Added)
    Findings.push_back(std::move(F));
}

void applyNoLint(std::vector<Finding> &Findings, SourceTexts &Texts) {
  MarkersByFile Markers(Texts);
  std::vector<Finding> Kept;
  for (Finding &F : Findings) {
    NoLintMarkers *M = Markers.get(F.Pos.File);
    if (!M || !M->any() || F.Pos.Line == 0) {
      Kept.push_back(std::move(F));
      continue;
    }
    if (M->suppressor(F.Pos.Line, F.Check, /*Inclusive=*/false))
      continue;
    if (unsigned B = M->unclosedBeginBefore(F.Pos.Line, F.Check))
      F.Notes.push_back({M->position(F.Pos.File, B, "NOLINTBEGIN"),
                         "this NOLINTBEGIN has no matching NOLINTEND; it suppresses nothing"});
    Kept.push_back(std::move(F));
  }
  Findings = std::move(Kept);
}

} // namespace ampmigrate
