// Report assembly: TU results merged, sorted, de-duplicated, finished (NOLINT, fixes attached).
#include "DriverInternal.h"

#include "llvm/ADT/STLExtras.h"
#include <set>
#include <string>
#include <tuple>

namespace ampmigrate {
namespace driver {

/// Adds one TU's digests; a file two TUs read differently gets "" (it is never written).
void mergeDigests(std::map<std::string, std::string> &Into, const std::map<std::string, std::string> &From) {
  for (const auto &[File, Digest] : From) {
    auto [It, New] = Into.try_emplace(File, Digest);
    if (!New && It->second != Digest)
      It->second.clear();
  }
}

/// One consistent report: a header finding seen from several TUs appears once.
void sortAndDeduplicate(Report &R) {
  llvm::sort(R.Findings, [](const Finding &A, const Finding &B) {
    return std::tie(A.Pos.File, A.Pos.Offset, A.Check, A.Message) <
           std::tie(B.Pos.File, B.Pos.Offset, B.Check, B.Message);
  });
  R.Findings.erase(std::unique(R.Findings.begin(), R.Findings.end(),
                               [](const Finding &A, const Finding &B) {
                                 return A.Pos.File == B.Pos.File && A.Pos.Offset == B.Pos.Offset &&
                                        A.Check == B.Check && A.Message == B.Message;
                               }),
                   R.Findings.end());
  llvm::sort(R.Files, [](const FileOutcome &A, const FileOutcome &B) { return A.File < B.File; });
  // A header's step planned from several TUs is one step.
  llvm::stable_sort(R.StepFixes, [](const StepFix &A, const StepFix &B) { return A.StepId < B.StepId; });
  R.StepFixes.erase(std::unique(R.StepFixes.begin(), R.StepFixes.end(),
                                [](const StepFix &A, const StepFix &B) { return A.StepId == B.StepId; }),
                    R.StepFixes.end());
}

} // namespace driver
using namespace driver;

void mergeReport(Report &Into, Report &&Part) {
  for (Finding &F : Part.Findings)
    Into.Findings.push_back(std::move(F));
  for (FileOutcome &F : Part.Files)
    Into.Files.push_back(std::move(F));
  for (StepFix &F : Part.StepFixes)
    Into.StepFixes.push_back(std::move(F));
  Into.UnverifiedSteps.insert(Part.UnverifiedSteps.begin(), Part.UnverifiedSteps.end());
  mergeDigests(Into.ParsedDigests, Part.ParsedDigests);
  sortAndDeduplicate(Into);
}

void finishReport(Report &R, const DriverOptions &Opts) {
  FileTexts Texts(Opts.Overlays);
  size_t Before = R.Findings.size();
  withdrawNoLintFixes(R.Findings, R.StepFixes, Texts, Opts.Engine.CheckEnabled);
  if (R.Findings.size() != Before)
    sortAndDeduplicate(R);
  applyNoLint(R.Findings, Texts);
  attachFixes(R.Findings, R.StepFixes);
  // Only steps that still have a fix (NOLINT may have withdrawn some) are unverified ones.
  std::set<std::string> Kept;
  for (const StepFix &F : R.StepFixes)
    if (R.UnverifiedSteps.count(F.StepId))
      Kept.insert(F.StepId);
  R.UnverifiedSteps = std::move(Kept);
}

} // namespace ampmigrate
