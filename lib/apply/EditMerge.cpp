// Merges units of edits into one tooling::Replacements per file: duplicates kept once, a unit
// with an overlapping edit refused whole (EditMerge.h).
#include "ampmigrate/EditMerge.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

using clang::tooling::Replacement;
using clang::tooling::Replacements;

namespace ampmigrate {

std::string normalizedEditPath(llvm::StringRef Path) {
  llvm::SmallString<256> P(Path);
  llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
  return std::string(P);
}

bool editsOverlap(const Replacement &A, const Replacement &B) {
  unsigned AB = A.getOffset(), AE = AB + A.getLength();
  unsigned BB = B.getOffset(), BE = BB + B.getLength();
  if (A.getLength() == 0 && B.getLength() == 0)
    return AB == BB;
  if (A.getLength() == 0)
    return BB < AB && AB < BE;
  if (B.getLength() == 0)
    return AB < BB && BB < AE;
  return AB < BE && BB < AE;
}

std::optional<EditOverlap> EditMerge::add(llvm::ArrayRef<Replacement> Raw) {
  const size_t Me = Units++;
  std::vector<Replacement> Unit, Originals;
  for (const Replacement &R : Raw) {
    Replacement Rep(normalizedEditPath(R.getFilePath()), R.getOffset(), R.getLength(),
                    R.getReplacementText());
    if (llvm::is_contained(Unit, Rep))
      continue;
    auto HeldIt = HeldByFile.find(Rep.getFilePath().str());
    if (HeldIt != HeldByFile.end()) {
      if (llvm::any_of(HeldIt->second, [&](const Held &H) { return H.Rep == Rep; }))
        continue;
      for (const Held &H : HeldIt->second)
        if (editsOverlap(Rep, H.Rep))
          return EditOverlap{Rep, H.Rep, H.Unit, false, ""};
    }
    for (const Replacement &Sibling : Unit)
      if (Sibling.getFilePath() == Rep.getFilePath() && editsOverlap(Rep, Sibling))
        return EditOverlap{Rep, Sibling, Me, true, ""};
    Unit.push_back(std::move(Rep));
    Originals.push_back(R);
  }
  // tooling::Replacements is the final judge; stage the unit so that a late refusal leaves
  // nothing of it behind.
  std::map<std::string, Replacements> Staged;
  for (const Replacement &Rep : Unit) {
    std::string File = Rep.getFilePath().str();
    auto [It, New] = Staged.try_emplace(File);
    if (New) {
      auto Old = ByFile.find(File);
      if (Old != ByFile.end())
        It->second = Old->second;
    }
    if (llvm::Error Err = It->second.add(Rep)) {
      EditOverlap O{Rep, Rep, Me, true, llvm::toString(std::move(Err))};
      return O;
    }
  }
  for (auto &[File, Reps] : Staged)
    ByFile[File] = std::move(Reps);
  for (Replacement &Rep : Unit)
    HeldByFile[Rep.getFilePath().str()].push_back({std::move(Rep), Me});
  InOrder.insert(InOrder.end(), Originals.begin(), Originals.end());
  return std::nullopt;
}

static std::string editText(const Replacement &R) {
  return llvm::sys::path::filename(R.getFilePath()).str() + "@" + std::to_string(R.getOffset()) +
         "+" + std::to_string(R.getLength()) + " -> `" + R.getReplacementText().str() + "`";
}

std::string overlapText(const EditOverlap &O) {
  if (!O.Detail.empty())
    return O.Detail;
  return editText(O.Mine) + " overlaps " + editText(O.Theirs);
}

std::optional<EditOverlap> mergeUnit(llvm::ArrayRef<Replacement> Unit, std::vector<Replacement> &Out) {
  EditMerge M;
  if (auto O = M.add(Unit))
    return O;
  Out = M.edits();
  return std::nullopt;
}

} // namespace ampmigrate
