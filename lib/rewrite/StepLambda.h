// A training step that runs inside a lambda (a per-batch `auto step = [&](auto &batch) {...}`, a
// task handed to a thread pool or std::async): whether the whole step is in one lambda, and where
// the model is converted once, outside the lambda, with the captures that carry the converted
// model into it.
#pragma once

#include "ampmigrate/MigrationPlan.h"
#include "RegionDeclarations.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMap.h"
#include <optional>

namespace ampmigrate {

/// The innermost lambda whose body holds `S` (null for the function's own code).
const clang::LambdaExpr *enclosingLambda(const clang::Stmt *S, const clang::ParentMap &PM);

/// Whether every element of the step runs in the lambda of its first scaled backward (or in
/// none): the scope, the other backwards, the unscale_/step/update calls, the clips and the
/// statements touching .grad. The grads that amp::value_and_grad returns live in one body; a step
/// split across a lambda boundary is a blocker naming the element outside, with its location.
std::optional<Blocker> lambdaBoundaryBlocker(const TrainingStep &T, const clang::FunctionDecl *Fn,
                                             const clang::ParentMap &PM,
                                             const clang::ASTContext &Ctx);

/// Where a model that a lambda of the step captures is converted once: before `Anchor` (the
/// statement holding the outermost lambda that the model's declaration precedes; the planner puts
/// the conversion before the outermost loop around it), with `Crossed` the lambdas from that one
/// in to the step's, each of which must capture the converted model. None when the step is not
/// in a lambda, or the model is declared inside the step's lambda (a parameter or local of it).
struct LambdaConversionPoint {
  const clang::Stmt *Anchor = nullptr;
  llvm::SmallVector<const clang::LambdaExpr *, 2> Crossed;
};
std::optional<LambdaConversionPoint> conversionOutsideLambdas(const clang::Stmt *RegionStart,
                                                              const ObjectRef &Model,
                                                              const clang::FunctionDecl *Fn,
                                                              const clang::ParentMap &PM,
                                                              const clang::SourceManager &SM);

/// The edit that makes `LE` capture the variable `Name` by copy (the converted model is a handle
/// whose copies share one conversion, so a copy is safe wherever the lambda runs and however long
/// it lives): nothing to do for a `[=]` default (an empty Text), `[&]` -> `[&, Name]`,
/// `[&model]` -> `[&model, Name]`, `[]` -> `[Name]`. None when the capture list is in a macro.
std::optional<Edit> captureByCopy(const clang::LambdaExpr *LE, llvm::StringRef Name,
                                  const clang::SourceManager &SM);

} // namespace ampmigrate
