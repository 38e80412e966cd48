// The catalogue of checks: stable ids, one-line summaries and where each is documented.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace ampmigrate {

struct CheckInfo {
  llvm::StringRef Id;      ///< kebab-case, stable
  llvm::StringRef Summary; ///< one line, used by --list-checks and SARIF shortDescription
  bool CanFix;             ///< the check's findings carry (a share of) a rewrite
};

/// Every check the engine knows, in a stable order.
llvm::ArrayRef<CheckInfo> allChecks();
/// The check with this id, or nullptr.
const CheckInfo *findCheck(llvm::StringRef Id);
/// Where a check is documented: "docs/checks/<id>.md" relative to the project (and installed docs).
std::string checkDocPath(llvm::StringRef Id);

} // namespace ampmigrate
