// Turns the fixes of a report into one edit set per file: each training step's fixes are taken
// whole or refused whole, and an edit several steps or TUs make identically is kept once.
#include "ampmigrate/Emitters.h"
#include "ampmigrate/FixApplier.h"
#include "ampmigrate/SourceText.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

using clang::tooling::Replacement;

namespace ampmigrate {
namespace {

/// An edit already in the set, and the step (its lead finding) that brought it.
struct AcceptedEdit {
  Replacement Rep;
  const Finding *Step;
};

/// "./a.h" and "a.h" from two TUs are one file; keep the spelling otherwise.
std::string normalizedPath(llvm::StringRef Path) {
  llvm::SmallString<256> P(Path);
  llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
  return std::string(P);
}

bool overlap(const Replacement &A, const Replacement &B) {
  unsigned AB = A.getOffset(), AE = AB + A.getLength();
  unsigned BB = B.getOffset(), BE = BB + B.getLength();
  // Two insertions at one offset: which text comes first is undefined.
  if (A.getLength() == 0 && B.getLength() == 0)
    return AB == BB;
  // An insertion touching the end of a replaced range is fine; one inside it is not.
  if (A.getLength() == 0)
    return BB < AB && AB < BE;
  if (B.getLength() == 0)
    return AB < BB && BB < AE;
  return AB < BE && BB < AE;
}

std::string where(SourceTexts &Texts, const Replacement &Rep) {
  std::string S = Rep.getFilePath().str();
  if (const std::string *Text = Texts.get(S)) {
    auto [Line, Column] = lineAndColumn(*Text, Rep.getOffset());
    return positionText(S, Line, Column);
  }
  return S + "@" + std::to_string(Rep.getOffset());
}

std::string where(const SourcePos &Pos) {
  return positionText(Pos.File, Pos.Line, Pos.Column);
}

std::string conflictReason(SourceTexts &Texts, const Replacement &Mine, const Replacement &Theirs,
                           const Finding *TheirStep, const Finding &Me) {
  std::string Other = TheirStep == &Me ? "another edit of the same step"
                                       : "an edit of the step at " + where(TheirStep->Pos);
  if (Mine.getLength() == 0 && Theirs.getLength() == 0)
    return "its insertion at " + where(Texts, Mine) + " differs from the insertion there by " +
           Other;
  return "its edit at " + where(Texts, Mine) + " overlaps " + Other + " at " + where(Texts, Theirs);
}

} // namespace

EditSet collectEdits(const Report &R, SourceTexts &Texts) {
  EditSet Set;
  std::map<std::string, std::vector<AcceptedEdit>> Accepted;

  for (const Finding &F : R.Findings) {
    if (F.Fixes.empty())
      continue;

    // The unit's edits that are new, i.e. not already made identically by an earlier unit.
    std::vector<Replacement> Unit;
    std::string Conflict;
    std::string Kind = "conflicting edits";
    for (const Replacement &Raw : F.Fixes) {
      Replacement Rep(normalizedPath(Raw.getFilePath()), Raw.getOffset(), Raw.getLength(),
                      Raw.getReplacementText());
      if (llvm::is_contained(Unit, Rep))
        continue;
      // An edit past the end (the file changed since it was analysed) would make the whole file
      // fail to apply; refusing its step here lets the file's other steps through.
      const std::string *Text = Texts.get(Raw.getFilePath().str());
      if (Text && Rep.getOffset() + Rep.getLength() > Text->size()) {
        Kind = "edit out of range";
        Conflict = "its edit at " + Rep.getFilePath().str() + "@" +
                   std::to_string(Rep.getOffset()) + " ends past the end of the file (" +
                   std::to_string(Text->size()) + " bytes)";
        break;
      }
      std::vector<AcceptedEdit> &InFile = Accepted[Rep.getFilePath().str()];
      if (llvm::any_of(InFile, [&](const AcceptedEdit &A) { return A.Rep == Rep; }))
        continue;
      for (const AcceptedEdit &A : InFile)
        if (overlap(Rep, A.Rep)) {
          Conflict = conflictReason(Texts, Rep, A.Rep, A.Step, F);
          break;
        }
      for (const Replacement &Sibling : Unit)
        if (Conflict.empty() && Sibling.getFilePath() == Rep.getFilePath() && overlap(Rep, Sibling))
          Conflict = conflictReason(Texts, Rep, Sibling, &F, F);
      if (!Conflict.empty())
        break;
      Unit.push_back(Rep);
    }

    // Replacements is the final judge; stage the unit so a late failure leaves nothing behind.
    std::map<std::string, clang::tooling::Replacements> Staged;
    if (Conflict.empty()) {
      for (const Replacement &Rep : Unit) {
        std::string File = Rep.getFilePath().str();
        if (!Staged.count(File))
          Staged[File] = Set.ByFile[File];
        if (llvm::Error Err = Staged[File].add(Rep)) {
          Conflict = "its edit at " + where(Texts, Rep) +
                     " cannot join the others: " + llvm::toString(std::move(Err));
          break;
        }
      }
    }

    if (!Conflict.empty()) {
      Set.Refused.push_back(where(F.Pos) + ": " + Kind + ": " + Conflict + "; step not migrated");
      continue;
    }
    for (auto &[File, Reps] : Staged)
      Set.ByFile[File] = std::move(Reps);
    for (const Replacement &Rep : Unit)
      Accepted[Rep.getFilePath().str()].push_back({Rep, &F});
  }
  // A file whose every unit was refused has no business in the set.
  for (auto It = Set.ByFile.begin(); It != Set.ByFile.end();)
    It = It->second.empty() ? Set.ByFile.erase(It) : std::next(It);
  return Set;
}

} // namespace ampmigrate
