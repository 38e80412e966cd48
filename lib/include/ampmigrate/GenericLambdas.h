// How the analysis reads a generic lambda (`[&](auto &batch) { ... }`): through its one
// instantiation, where the calls on the `auto` parameter are resolved, not through its pattern,
// where they are dependent and no scaler, model or backward call can be recognised.
#pragma once

#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMap.h"
#include "clang/AST/RecursiveASTVisitor.h"

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

/// A ParentMap of `Body` in which each generic lambda's analysed body (its instantiation) hangs
/// under the LambdaExpr, so that walking up from an instantiated statement reaches the function.
void graftLambdaBodies(clang::ParentMap &PM, const clang::Stmt *Body);

/// A RecursiveASTVisitor that enters each lambda's analysed body (see analysedLambdaBody) and its
/// parameters and capture initialisers; everything the analysis and the planner visit in a
/// function body goes through it, so both see the same statements.
template <class Derived> class AnalysedBodyVisitor : public clang::RecursiveASTVisitor<Derived> {
  using Base = clang::RecursiveASTVisitor<Derived>;

public:
  bool TraverseLambdaExpr(clang::LambdaExpr *LE) {
    Derived &D = static_cast<Derived &>(*this);
    if (!D.WalkUpFromLambdaExpr(LE))
      return false;
    for (clang::Expr *Init : LE->capture_inits())
      if (Init && !D.TraverseStmt(Init))
        return false;
    if (!D.shouldVisitLambdaBody())
      return true;
    const clang::CXXMethodDecl *Op = analysedCallOperator(LE);
    if (Op)
      for (clang::ParmVarDecl *P : Op->parameters())
        if (!D.TraverseDecl(P))
          return false;
    const clang::CompoundStmt *Body = analysedLambdaBody(LE);
    return !Body || D.TraverseStmt(const_cast<clang::CompoundStmt *>(Body));
  }
};

} // namespace ampmigrate
