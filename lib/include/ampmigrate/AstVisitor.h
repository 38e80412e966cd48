// One walker for every AST walk of the analysis and the planner (template instantiations are not
// entered; StepFinder reaches them from their patterns): the callbacks are virtual and
// the traversal (clang's RecursiveASTVisitor) is instantiated once, in AstVisitor.cpp, instead of
// once per walk (each instantiation is thousands of functions: most of the engine's build time).
#pragma once

#include "clang/AST/DeclBase.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/TypeLoc.h"

namespace ampmigrate {

/// What a walk sees. Subclasses override the callbacks they need; each node reaches its
/// callback once, before what is under it (pre-order, in source order), as RecursiveASTVisitor's
/// Visit* functions do: `visitStmt` gets every statement and expression (a subclass tells them
/// apart with dyn_cast), `visitDecl` every declaration, `visitTypeLoc` every type as written.
/// Returning false from any callback ends the walk.
class AstVisitor {
public:
  /// How a lambda expression's body is entered.
  enum class Lambdas {
    AsWritten, ///< as RecursiveASTVisitor does: the call operator as written
    Analysed,  ///< through the body the analysis reads (see analysedLambdaBody): its parameters,
               ///< capture initialisers and that body
  };

  explicit AstVisitor(Lambdas L = Lambdas::AsWritten) : LambdaBodies(L) {}
  virtual ~AstVisitor();

  /// Walks `S` (or `D`, `TL`) and everything under it. Null is walked as nothing.
  bool walk(const clang::Stmt *S);
  bool walk(const clang::Decl *D);
  bool walk(clang::TypeLoc TL);

protected:
  virtual bool visitStmt(clang::Stmt *) { return true; }
  virtual bool visitDecl(clang::Decl *) { return true; }
  virtual bool visitTypeLoc(clang::TypeLoc) { return true; }

  /// Around-hooks, called for each node of their kind only when the matching Wraps* flag is set
  /// (a subclass that skips subtrees or keeps state across one): the default walks the node and
  /// what is under it; an override calls `descend` to do so, or returns without it to skip it.
  virtual bool traverseStmt(clang::Stmt *S) { return descend(S); }
  virtual bool traverseDecl(clang::Decl *D) { return descend(D); }
  virtual bool traverseTypeLoc(clang::TypeLoc TL) { return descend(TL); }
  bool descend(clang::Stmt *S);
  bool descend(clang::Decl *D);
  bool descend(clang::TypeLoc TL);

  bool WrapsStmts = false;
  bool WrapsDecls = false;
  bool WrapsTypeLocs = false;
  /// Whether a lambda's call operator is entered where the walk reaches it as a declaration
  /// (RecursiveASTVisitor's shouldVisitLambdaBody; a lambda expression's body is entered anyway).
  bool LambdaCallOperators = true;

private:
  friend class Walker;
  Lambdas LambdaBodies;
};

/// The walk of a function body the analysis and the planner share: lambdas through their
/// analysed body, so both see the same statements.
class AnalysedBodyVisitor : public AstVisitor {
public:
  AnalysedBodyVisitor() : AstVisitor(Lambdas::Analysed) {}
};

} // namespace ampmigrate
