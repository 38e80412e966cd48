// The analysis of one function (analyseFunction): the body read once, its elements found, its
// scopes built, then grouped into steps; and the structural queries every stage shares.
#include "FunctionAnalyser.h"
#include "ampmigrate/LambdaParents.h"

using namespace clang;

namespace ampmigrate {

FunctionBody::FunctionBody(ASTContext &Ctx, const RuleSet &Rules, const FunctionDecl *FD,
                           const std::vector<SourceRange> &Inactive, const CalleeFacts *Callees)
    : Ctx(Ctx), SM(Ctx.getSourceManager()), Rules(Rules), FD(FD), Inactive(Inactive),
      Callees(Callees), PM(FD->getBody()) {
  graftLambdaBodies(PM, FD->getBody());
  BodyCollector BC;
  BC.walk(FD->getBody());
  Calls = std::move(BC.Calls);
  Decls = std::move(BC.Decls);
  Returns = std::move(BC.Returns);
}

FunctionAnalysis analyseFunction(ASTContext &Ctx, const RuleSet &Rules, const FunctionDecl *FD,
                                 const std::vector<SourceRange> &Inactive, const CalleeFacts *Callees) {
  const FunctionBody Body(Ctx, Rules, FD, Inactive, Callees);
  FunctionAnalysis FA;
  FA.Function = FD;
  // Reserve so that pointers between elements stay valid while we fill the vectors.
  FA.AutocastCalls.reserve(Body.Calls.size());
  FA.ScalerCalls.reserve(Body.Calls.size());
  FA.Clips.reserve(Body.Calls.size());
  FA.ZeroGrads.reserve(Body.Calls.size());
  FA.Forwards.reserve(Body.Calls.size());
  FA.Backwards.reserve(Body.Calls.size());
  FA.PlainBackwards.reserve(Body.Calls.size());
  FA.OptimizerSteps.reserve(Body.Calls.size());
  std::vector<PendingGuard> Guards = ElementFinder(Body, FA).run();
  ScopeBuilder(Body, FA, Guards).run();
  StepGrouper(Body, FA).run();
  findUnresolvedCalls(Body, FA);
  return FA;
}

bool FunctionStage::inLambda(const Stmt *S) const {
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
    if (isa<LambdaExpr>(P))
      return true;
  return false;
}

const LambdaExpr *FunctionStage::enclosingLambda(const Stmt *S) const {
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
    if (const auto *L = dyn_cast<LambdaExpr>(P))
      return L;
  return nullptr;
}

const Stmt *FunctionStage::statementOf(const Stmt *S) const {
  const Stmt *Cur = S;
  for (const Stmt *P = PM.getParent(Cur); P; Cur = P, P = PM.getParent(P)) {
    if (isa<CompoundStmt>(P))
      return Cur;
    if (const auto *If = dyn_cast<IfStmt>(P); If && (If->getThen() == Cur || If->getElse() == Cur))
      return Cur;
    if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P)) {
      // The body of a loop is a statement of its own; a call in the header is not.
      if ((isa<ForStmt>(P) && cast<ForStmt>(P)->getBody() == Cur) ||
          (isa<WhileStmt>(P) && cast<WhileStmt>(P)->getBody() == Cur) ||
          (isa<DoStmt>(P) && cast<DoStmt>(P)->getBody() == Cur) ||
          (isa<CXXForRangeStmt>(P) && cast<CXXForRangeStmt>(P)->getBody() == Cur))
        return Cur;
      return nullptr;
    }
  }
  return nullptr;
}

bool FunctionStage::encloses(const Stmt *Outer, const Stmt *S) const {
  for (const Stmt *P = S; P; P = PM.getParent(P))
    if (P == Outer)
      return true;
  return false;
}

} // namespace ampmigrate
