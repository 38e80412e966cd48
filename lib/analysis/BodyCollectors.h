// Walks shared by the analysis of a function (FunctionAnalyser.h) and the shape recognisers: the
// statements of a body by kind (BodyCollector), its calls (CallCollector), its autocast calls
// (AutocastCallCollector).
#pragma once

#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/Rules.h"

#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/StmtCXX.h"
#include <utility>
#include <vector>

namespace ampmigrate {

/// Finds the autocast calls in a function body (used for guard recognition).
class AutocastCallCollector : public AstVisitor {
public:
  AutocastCallCollector(const RuleSet &Rules) : Rules(Rules) {}
  bool visitStmt(clang::Stmt *S) override; // ShapeRecognisers.cpp
  const RuleSet &Rules;
  std::vector<std::pair<const clang::CallExpr *, const AutocastFunctionRule *>> Found;
};

/// Every call under a statement, in the order of a plain AstVisitor walk.
class CallCollector : public AstVisitor {
public:
  std::vector<const clang::CallExpr *> Calls;
  bool visitStmt(clang::Stmt *S) override {
    if (const auto *CE = llvm::dyn_cast<clang::CallExpr>(S))
      Calls.push_back(CE);
    return true;
  }
};

class BodyCollector : public AnalysedBodyVisitor {
public:
  std::vector<const clang::CallExpr *> Calls;
  std::vector<const clang::DeclStmt *> Decls;
  std::vector<const clang::ReturnStmt *> Returns;
  std::vector<const clang::LambdaExpr *> Lambdas;
  std::vector<const clang::CXXThrowExpr *> Throws;
  bool visitStmt(clang::Stmt *S) override {
    if (const auto *CE = llvm::dyn_cast<clang::CallExpr>(S))
      Calls.push_back(CE);
    else if (const auto *DS = llvm::dyn_cast<clang::DeclStmt>(S))
      Decls.push_back(DS);
    else if (const auto *RS = llvm::dyn_cast<clang::ReturnStmt>(S))
      Returns.push_back(RS);
    else if (const auto *LE = llvm::dyn_cast<clang::LambdaExpr>(S))
      Lambdas.push_back(LE);
    else if (const auto *TE = llvm::dyn_cast<clang::CXXThrowExpr>(S))
      Throws.push_back(TE);
    return true;
  }
};

} // namespace ampmigrate
