// The one RecursiveASTVisitor instantiation of the engine, forwarding to AstVisitor's callbacks.
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/GenericLambdas.h"

#include "clang/AST/RecursiveASTVisitor.h"

using namespace clang;

namespace ampmigrate {

class Walker : public RecursiveASTVisitor<Walker> {
  using Base = RecursiveASTVisitor<Walker>;

public:
  explicit Walker(AstVisitor &V) : V(V) {}

  bool shouldVisitLambdaBody() const { return V.LambdaCallOperators; }

  bool VisitStmt(Stmt *S) { return V.visitStmt(S); }
  bool VisitDecl(Decl *D) { return V.visitDecl(D); }
  bool VisitTypeLoc(TypeLoc TL) { return V.visitTypeLoc(TL); }

  // Without an around-hook, statements keep RecursiveASTVisitor's queue (no recursion per level).
  bool TraverseStmt(Stmt *S, DataRecursionQueue *Queue = nullptr) {
    if (!S || !V.WrapsStmts)
      return Base::TraverseStmt(S, Queue);
    return V.traverseStmt(S);
  }
  bool TraverseDecl(Decl *D) {
    if (!D || !V.WrapsDecls)
      return Base::TraverseDecl(D);
    return V.traverseDecl(D);
  }
  bool TraverseTypeLoc(TypeLoc TL) {
    if (TL.isNull() || !V.WrapsTypeLocs)
      return Base::TraverseTypeLoc(TL);
    return V.traverseTypeLoc(TL);
  }

  bool TraverseLambdaExpr(LambdaExpr *LE) {
    if (V.LambdaBodies != AstVisitor::Lambdas::Analysed)
      return Base::TraverseLambdaExpr(LE);
    if (!WalkUpFromLambdaExpr(LE))
      return false;
    for (Expr *Init : LE->capture_inits())
      if (Init && !TraverseStmt(Init))
        return false;
    if (const CXXMethodDecl *Op = analysedCallOperator(LE))
      for (ParmVarDecl *P : Op->parameters())
        if (!TraverseDecl(P))
          return false;
    const CompoundStmt *Body = analysedLambdaBody(LE);
    return !Body || TraverseStmt(const_cast<CompoundStmt *>(Body));
  }

  bool descend(Stmt *S) { return Base::TraverseStmt(S); }
  bool descend(Decl *D) { return Base::TraverseDecl(D); }
  bool descend(TypeLoc TL) { return Base::TraverseTypeLoc(TL); }

private:
  AstVisitor &V;
};

AstVisitor::~AstVisitor() = default;

bool AstVisitor::walk(const Stmt *S) { return Walker(*this).TraverseStmt(const_cast<Stmt *>(S)); }
bool AstVisitor::walk(const Decl *D) { return Walker(*this).TraverseDecl(const_cast<Decl *>(D)); }
bool AstVisitor::walk(TypeLoc TL) { return Walker(*this).TraverseTypeLoc(TL); }

bool AstVisitor::descend(Stmt *S) { return Walker(*this).descend(S); }
bool AstVisitor::descend(Decl *D) { return Walker(*this).descend(D); }
bool AstVisitor::descend(TypeLoc TL) { return Walker(*this).descend(TL); }

} // namespace ampmigrate
