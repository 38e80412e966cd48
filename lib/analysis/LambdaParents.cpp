// Parent maps that see generic lambdas as the analysis reads them (LambdaParents.h).
#include "ampmigrate/LambdaParents.h"
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/GenericLambdas.h"

using namespace clang;

namespace ampmigrate {

namespace {
class GenericLambdaFinder : public AnalysedBodyVisitor {
public:
  llvm::SmallVector<const LambdaExpr *, 2> Found;
  bool visitStmt(Stmt *S) override {
    if (const auto *LE = dyn_cast<LambdaExpr>(S); LE && analysedLambdaBody(LE) != LE->getCompoundStmtBody())
      Found.push_back(LE);
    return true;
  }
};
} // namespace

void graftLambdaBodies(ParentMap &PM, const Stmt *Body) {
  if (!Body)
    return;
  GenericLambdaFinder F;
  F.walk(Body);
  // Outer lambdas first: a nested generic lambda's instantiation is found inside the outer
  // one's instantiated body, grafted already.
  for (const LambdaExpr *LE : F.Found) {
    Stmt *Inst = const_cast<CompoundStmt *>(analysedLambdaBody(LE));
    PM.addStmt(Inst);
    PM.setParent(Inst, LE);
  }
}

} // namespace ampmigrate
