// Where edits meet: units of edits (one training step's, a shared header's) merged into one
// tooling::Replacements per file. The one place that settles duplicates and conflicts, for the
// planner (a step's own edits), verification (the fixes of one translation unit) and application.
#pragma once

#include "clang/Tooling/Core/Replacement.h"
#include "llvm/ADT/ArrayRef.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ampmigrate {

/// Why a unit could not join: its edit `Mine` overlaps `Theirs`, an edit of unit `TheirUnit`
/// (the unit itself when `Sibling`). `Detail` is set when tooling::Replacements refused an edit
/// the overlap rule let through (its own message).
struct EditOverlap {
  clang::tooling::Replacement Mine, Theirs;
  size_t TheirUnit = 0;
  bool Sibling = false;
  std::string Detail;
};

/// Whether two edits of one file cannot both be made: two insertions at one offset (which text
/// comes first is undefined), an insertion strictly inside a replaced range, or two replaced
/// ranges that share a byte. An insertion at either end of a replaced range is fine.
bool editsOverlap(const clang::tooling::Replacement &A, const clang::tooling::Replacement &B);

/// "./a.h" and "a.h" (seen from two translation units) are one file.
std::string normalizedEditPath(llvm::StringRef Path);

class EditMerge {
public:
  /// Adds the edits of one unit, whole or not at all. An edit identical to one already held (by
  /// this or an earlier unit) is kept once. Returns the first overlap when the unit cannot join;
  /// then nothing of it is kept.
  std::optional<EditOverlap> add(llvm::ArrayRef<clang::tooling::Replacement> Unit);

  /// The merged edits, per (normalised) file path.
  const std::map<std::string, clang::tooling::Replacements> &byFile() const { return ByFile; }
  std::map<std::string, clang::tooling::Replacements> takeByFile() { return std::move(ByFile); }
  /// Every merged edit once, in the order the units brought them, with their paths as given.
  const std::vector<clang::tooling::Replacement> &edits() const { return InOrder; }
  /// How many units have been added (the id the next one gets).
  size_t units() const { return Units; }

private:
  struct Held {
    clang::tooling::Replacement Rep;
    size_t Unit;
  };
  std::map<std::string, std::vector<Held>> HeldByFile;
  std::map<std::string, clang::tooling::Replacements> ByFile;
  std::vector<clang::tooling::Replacement> InOrder;
  size_t Units = 0;
};

/// "a.cpp@120+4 -> `x` overlaps a.cpp@118+10 -> ``" (or tooling::Replacements' own message).
std::string overlapText(const EditOverlap &O);

/// A unit's edits merged on their own: `Out` gets them without duplicates, in their order; or
/// the overlap.
std::optional<EditOverlap> mergeUnit(llvm::ArrayRef<clang::tooling::Replacement> Unit,
                                     std::vector<clang::tooling::Replacement> &Out);

} // namespace ampmigrate
