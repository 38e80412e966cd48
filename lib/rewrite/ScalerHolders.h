// What holds a scaler class: the types that hold it, the holder an expression names, a holder's
// declarations. Free of the planner's state; ScalerFlow.cpp follows the scaler with them.
#pragma once

#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include <vector>

namespace ampmigrate {

/// The class itself, a reference or pointer to it, or a wrapper whose first template argument
/// holds it (std::shared_ptr, std::unique_ptr, std::optional).
bool holdsClass(clang::QualType QT, const clang::CXXRecordDecl *Class);

/// A parameter of `FD` holds the class.
bool takesClass(const clang::FunctionDecl *FD, const clang::CXXRecordDecl *Class);

/// The expression as far as the object is the same: through parentheses, implicit casts,
/// temporaries, `*` and `&`, copies and moves of the holder, `std::move`, `.get()`, `.value()`.
const clang::Expr *throughSameObject(const clang::Expr *E, const clang::CXXRecordDecl *Class);

/// The holder an expression names (after throughSameObject), or null.
const clang::ValueDecl *holderOf(const clang::Expr *E, const clang::CXXRecordDecl *Class);

/// Every declaration of a holder: a variable's redeclarations, a parameter in each declaration
/// of its function.
std::vector<const clang::DeclaratorDecl *> declarationsOf(const clang::ValueDecl *H);

} // namespace ampmigrate
