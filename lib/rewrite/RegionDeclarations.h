// The declarations of a forward region that outlive it: the region moves into the function handed
// to amp::value_and_grad, so what the code after the step still names is declared before that
// function and assigned inside it, with the same meaning, or the step is blocked with the reason.
#pragma once

#include "Edit.h"
#include "ampmigrate/Rules.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Stmt.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <optional>
#include <string>
#include <vector>

namespace ampmigrate {

struct RegionDeclarations {
  /// Declarations to put before the function handed to value_and_grad, one per entry, without
  /// indentation or newline (`torch::Tensor loss;`, a `constexpr` declaration moved verbatim).
  std::vector<std::string> Hoisted;
  /// Edits of the region's text: `auto loss = f();` -> `loss = f();`, a structured binding ->
  /// `std::tie(a, b) = f();`, a declaration moved out -> removed.
  std::vector<Edit> Inner;
};

struct RegionDeclarationsBlocked {
  clang::SourceLocation Loc;
  std::string Reason;
};

/// Plans the declarations of `Region` (top-level statements of one block, in order) that are named
/// where `UsedOutside` says a reference lies outside the new function. `Body` is the function body
/// whose references count. Returns the plan, or where and why a declaration cannot be carried out
/// of the region with the same meaning.
std::optional<RegionDeclarationsBlocked>
planRegionDeclarations(clang::ASTContext &Ctx, const RuleSet &Rules,
                       llvm::ArrayRef<const clang::Stmt *> Region, const clang::Stmt *Body,
                       llvm::function_ref<bool(const clang::Expr *)> UsedOutside,
                       RegionDeclarations &Out);

} // namespace ampmigrate
