// Parent maps over a function body that walk up from a generic lambda's analysed body (its one
// instantiation) to the lambda, as the analysis reads it (GenericLambdas.h). Built with the one
// AST walker (AstVisitor.h), so a unit of its own: the walker itself reads GenericLambdas.
#pragma once

#include "clang/AST/ParentMap.h"

namespace ampmigrate {

/// A ParentMap of `Body` in which each generic lambda's analysed body (its instantiation) hangs
/// under the LambdaExpr, so that walking up from an instantiated statement reaches the function.
void graftLambdaBodies(clang::ParentMap &PM, const clang::Stmt *Body);

} // namespace ampmigrate
