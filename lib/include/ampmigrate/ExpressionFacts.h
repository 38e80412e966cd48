// What an expression reads and writes: facts about conditions, flags and the objects a planner
// follows, computed from the AST alone (no edits).
#pragma once

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <vector>

namespace ampmigrate {

/// `E` without the nodes clang adds around what is written: parentheses, implicit casts, full
/// expressions' cleanups, materialised and bound temporaries (the single steps of
/// Expr::IgnoreParenImpCasts and Expr::IgnoreImplicit, to a fixpoint); and, where `Also` is
/// given, each further node it looks through (returning its operand; `E` itself when none): a
/// copy, a functional cast, `*`, `std::move`. The one expression stripper of the analysis and the
/// planner. Null stays null.
const clang::Expr *ignoreWrappers(const clang::Expr *E,
                                  llvm::function_ref<const clang::Expr *(const clang::Expr *)> Also = nullptr);

/// A condition that only reads: a variable, a member, `this`, `!x`, `*x`, `x && y`, `x || y`,
/// `x == nullptr` / `x != nullptr`, an optional's or a smart pointer's truth, `->` on one, or a
/// call of a const method without arguments (`scaler.is_enabled()`, `cfg.amp()`).
bool onlyReads(const clang::Expr *E, clang::ASTContext &Ctx);

/// The declarations a condition reads (variables and members).
std::vector<const clang::ValueDecl *> declsRead(const clang::Expr *E);

/// Whether a variable of `Vars` is referred to anywhere under `E` (lambda bodies included).
bool refersToAny(const clang::Expr *E, const llvm::SmallPtrSetImpl<const clang::VarDecl *> &Vars);

/// The expression names `D` (through parentheses, casts, `*`, members of it and `->`).
bool names(const clang::Expr *E, const clang::ValueDecl *D);

/// The first expression in `S` that may write `D`: an assignment to it, ++/--, its address, a
/// non-const reference or pointer argument, a non-const method called on it (reset(),
/// emplace()). Writes through calls of other functions (a member set elsewhere) are not seen.
const clang::Expr *writeOf(const clang::Stmt *S, const clang::ValueDecl *D);

/// Whether two conditions are the same expression (same declarations, same operators).
bool sameCondition(const clang::Expr *A, const clang::Expr *B, clang::ASTContext &Ctx);

} // namespace ampmigrate
