// How the analysis reads a generic lambda (`[&](auto &batch) { ... }`): through its one
// instantiation, where the calls on the `auto` parameter are resolved, not through its pattern,
// where they are dependent and no scaler, model or backward call can be recognised.
#pragma once

#include "clang/AST/ExprCXX.h"

namespace ampmigrate {

/// The instantiated call operators of a generic lambda that have a body (none for a lambda that
/// is not generic).
unsigned lambdaInstantiations(const clang::LambdaExpr *LE);

/// The call operator the analysis reads for a lambda: the one instantiation of a generic
/// lambda's call operator; otherwise (not generic, never instantiated, or instantiated with
/// several argument types) the lambda's own call operator.
const clang::CXXMethodDecl *analysedCallOperator(const clang::LambdaExpr *LE);
/// Its body.
const clang::CompoundStmt *analysedLambdaBody(const clang::LambdaExpr *LE);

} // namespace ampmigrate
