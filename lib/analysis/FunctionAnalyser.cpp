// The analysis of one function (FunctionAnalyser): its elements found, then grouped into steps.
#include "FunctionAnalyser.h"
#include "ampmigrate/LambdaParents.h"

using namespace clang;

namespace ampmigrate {

FunctionAnalyser::FunctionAnalyser(ASTContext &Ctx, const RuleSet &Rules, const FunctionDecl *FD,
                                   const std::vector<SourceRange> &Inactive)
    : Ctx(Ctx), SM(Ctx.getSourceManager()), Rules(Rules), FD(FD), Inactive(Inactive),
      PM(FD->getBody()) {
  FA.Function = FD;
  graftLambdaBodies(PM, FD->getBody());
}

FunctionAnalysis FunctionAnalyser::run() {
  BodyCollector BC;
  BC.walk(FD->getBody());
  Lambdas = BC.Lambdas;
  Returns = BC.Returns;
  AllCalls = BC.Calls;
  // Reserve so that pointers between elements stay valid while we fill the vectors.
  FA.AutocastCalls.reserve(BC.Calls.size());
  FA.ScalerCalls.reserve(BC.Calls.size());
  FA.Clips.reserve(BC.Calls.size());
  FA.ZeroGrads.reserve(BC.Calls.size());
  FA.Forwards.reserve(BC.Calls.size());
  FA.Backwards.reserve(BC.Calls.size());
  FA.PlainBackwards.reserve(BC.Calls.size());
  FA.OptimizerSteps.reserve(BC.Calls.size());
  for (const CallExpr *CE : BC.Calls)
    classifyCall(CE);
  for (const DeclStmt *DS : BC.Decls)
    classifyDecl(DS);
  findImplicitBackwards();
  findPlainBackwards();
  buildScopes();
  collectInactive();
  groupSteps();
  groupUnscaledSteps();
  return std::move(FA);
}

bool FunctionAnalyser::inLambda(const Stmt *S) const {
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
    if (isa<LambdaExpr>(P))
      return true;
  return false;
}

const LambdaExpr *FunctionAnalyser::enclosingLambda(const Stmt *S) const {
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P))
    if (const auto *L = dyn_cast<LambdaExpr>(P))
      return L;
  return nullptr;
}

const Stmt *FunctionAnalyser::statementOf(const Stmt *S) const {
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

} // namespace ampmigrate
