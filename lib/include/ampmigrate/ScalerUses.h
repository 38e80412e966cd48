// The facts of a scaler's data flow, free of any plan: the types and declarations that hold a
// scaler class, the holder an expression names, and every use of the holders in a translation unit
// (ScalerUseIndex). The planner's scaler type (lib/rewrite/ScalerFlow.cpp) follows the scaler
// through them and decides what may change.
#pragma once

#include "ampmigrate/AstVisitor.h"

#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <map>
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

/// Every use in a translation unit, outside system headers, of the holders of a scaler class: the
/// references to each holder, the calls and constructions that take the class, and the functions
/// whose address is taken (named other than in a call). Walk it over the translation unit.
class ScalerUseIndex : public AnalysedBodyVisitor {
public:
  ScalerUseIndex(const clang::CXXRecordDecl *C, const clang::SourceManager &SM) : Class(C), SM(SM) {
    WrapsDecls = true;
  }

  const clang::CXXRecordDecl *Class;
  const clang::SourceManager &SM;
  /// By canonical declaration.
  std::map<const clang::Decl *, std::vector<const clang::Expr *>> Refs;
  /// CallExpr / CXXConstructExpr, by the callee's canonical declaration.
  std::map<const clang::Decl *, std::vector<const clang::Expr *>> Calls;
  /// A function's address taken.
  std::map<const clang::Decl *, const clang::Expr *> NamedOtherwise;
  llvm::SmallPtrSet<const clang::Expr *, 16> Callees;

  bool traverseDecl(clang::Decl *D) override;
  bool visitStmt(clang::Stmt *S) override;

private:
  bool visitCall(clang::CallExpr *E);
  bool visitConstruct(clang::CXXConstructExpr *E);
  bool visitDeclRef(clang::DeclRefExpr *E);
  bool visitMember(clang::MemberExpr *E);
};

} // namespace ampmigrate
