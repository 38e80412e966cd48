#include "ModelQueries.h"

#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/StepFinder.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace clang;
namespace ampmigrate {

namespace {

class QueryFinder : public AstVisitor {
public:
  QueryFinder(const RuleSet &Rules, const CXXRecordDecl *Class) : Rules(Rules), Class(Class) {}

  bool visitStmt(Stmt *S) override {
    const auto *CE = dyn_cast<CallExpr>(S);
    if (!CE)
      return true;
    if (Found)
      return false;
    const FunctionDecl *Callee = CE->getDirectCallee();
    if (!Callee)
      return true;
    if (const AutocastFunctionRule *R = Rules.autocastRule(qualifiedName(Callee));
        R && R->Role == AutocastRole::Query) {
      Found = CE;
      return false;
    }
    // A helper method of the same class: its body runs as part of the forward.
    if (const auto *MD = dyn_cast<CXXMethodDecl>(Callee); MD && MD->getParent() == Class)
      Pending.push_back(MD);
    return true;
  }

  void scan(const FunctionDecl *FD) {
    const FunctionDecl *Def = nullptr;
    if (!FD->hasBody(Def) || !Seen.insert(Def).second || Seen.size() > 32)
      return;
    walk(Def->getBody());
  }

  const RuleSet &Rules;
  const CXXRecordDecl *Class;
  const CallExpr *Found = nullptr;
  std::vector<const CXXMethodDecl *> Pending;
  llvm::SmallPtrSet<const FunctionDecl *, 8> Seen;
};

} // namespace

const CallExpr *autocastQueryInForward(const Expr *Forward, const RuleSet &Rules) {
  const CXXRecordDecl *Class = modelClass(Forward);
  if (!Class)
    return nullptr;
  QueryFinder QF(Rules, Class);
  for (const CXXMethodDecl *MD : Class->methods())
    if (MD->getIdentifier() && MD->getName() == "forward")
      QF.Pending.push_back(MD);
  while (!QF.Pending.empty() && !QF.Found) {
    const CXXMethodDecl *MD = QF.Pending.back();
    QF.Pending.pop_back();
    QF.scan(MD);
  }
  return QF.Found;
}

} // namespace ampmigrate
