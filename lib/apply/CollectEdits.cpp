// Turns the fixes of a report into one edit set per file: each training step's fixes are taken
// whole or refused whole, and an edit several steps or TUs make identically is kept once.
#include "ampmigrate/EditMerge.h"
#include "ampmigrate/Emitters.h"
#include "ampmigrate/FixApplier.h"
#include "ampmigrate/SourceText.h"
#include "llvm/ADT/STLExtras.h"

using clang::tooling::Replacement;

namespace ampmigrate {
namespace {

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

std::string conflictReason(SourceTexts &Texts, const EditOverlap &O, const Finding *TheirStep) {
  if (!O.Detail.empty())
    return "its edit at " + where(Texts, O.Mine) + " cannot join the others: " + O.Detail;
  std::string Other = O.Sibling ? "another edit of the same step"
                                : "an edit of the step at " + where(TheirStep->Pos);
  if (O.Mine.getLength() == 0 && O.Theirs.getLength() == 0)
    return "its insertion at " + where(Texts, O.Mine) + " differs from the insertion there by " +
           Other;
  return "its edit at " + where(Texts, O.Mine) + " overlaps " + Other + " at " +
         where(Texts, O.Theirs);
}

/// An edit past the end of its file (the file changed since it was analysed) would make the
/// whole file fail to apply; refusing its step lets the file's other steps through.
std::string outOfRange(SourceTexts &Texts, llvm::ArrayRef<Replacement> Unit) {
  for (const Replacement &Rep : Unit) {
    const std::string *Text = Texts.get(Rep.getFilePath().str());
    if (Text && Rep.getOffset() + Rep.getLength() > Text->size())
      return "its edit at " + normalizedEditPath(Rep.getFilePath()) + "@" +
             std::to_string(Rep.getOffset()) + " ends past the end of the file (" +
             std::to_string(Text->size()) + " bytes)";
  }
  return "";
}

} // namespace

EditSet collectEdits(const Report &R, SourceTexts &Texts) {
  EditSet Set;
  EditMerge Merge;
  std::vector<const Finding *> UnitLead; // the finding that brought each unit of Merge
  for (const Finding &F : R.Findings) {
    if (F.Fixes.empty())
      continue;
    std::string Refusal;
    if (std::string Why = outOfRange(Texts, F.Fixes); !Why.empty()) {
      Refusal = "edit out of range: " + Why;
    } else {
      UnitLead.push_back(&F);
      if (std::optional<EditOverlap> O = Merge.add(F.Fixes))
        Refusal = "conflicting edits: " + conflictReason(Texts, *O, UnitLead[O->TheirUnit]);
    }
    if (!Refusal.empty())
      Set.Refused.push_back(where(F.Pos) + ": " + Refusal + "; step not migrated");
  }
  Set.ByFile = Merge.takeByFile();
  // A file whose every unit was refused has no business in the set.
  for (auto It = Set.ByFile.begin(); It != Set.ByFile.end();)
    It = It->second.empty() ? Set.ByFile.erase(It) : std::next(It);
  return Set;
}

} // namespace ampmigrate
