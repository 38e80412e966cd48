// Gives each training step's edits to one surviving finding of the step: the one place where
// fixes meet findings (after NOLINT, for every front end).
#include "ampmigrate/Finding.h"

#include "llvm/ADT/STLExtras.h"
#include <set>
#include <tuple>

namespace ampmigrate {

void attachFixes(std::vector<Finding> &Findings, const std::vector<StepFix> &Fixes,
                 bool EachEditOnce) {
  using EditKey = std::tuple<std::string, unsigned, unsigned, std::string>;
  std::set<EditKey> Given;
  // Leads in file order, so that a shared edit goes to the first of them.
  std::vector<std::pair<Finding *, const StepFix *>> Leads;
  for (const StepFix &Fix : Fixes) {
    Finding *Lead = nullptr;
    for (Finding &F : Findings)
      if (F.StepId == Fix.StepId && F.Fixable &&
          (!Lead || std::tie(F.Pos.File, F.Pos.Offset) < std::tie(Lead->Pos.File, Lead->Pos.Offset)))
        Lead = &F;
    if (Lead)
      Leads.push_back({Lead, &Fix});
  }
  llvm::stable_sort(Leads, [](const auto &A, const auto &B) {
    return std::tie(A.first->Pos.File, A.first->Pos.Offset) <
           std::tie(B.first->Pos.File, B.first->Pos.Offset);
  });
  for (auto &[Lead, Fix] : Leads)
    for (const clang::tooling::Replacement &R : Fix->Edits) {
      EditKey K{R.getFilePath().str(), R.getOffset(), R.getLength(), R.getReplacementText().str()};
      if (EachEditOnce && !Given.insert(K).second)
        continue;
      if (!llvm::is_contained(Lead->Fixes, R))
        Lead->Fixes.push_back(R);
    }
}

} // namespace ampmigrate
