// Fresh names for what the rewrite declares (grads, grad_fn, converted models, members).
#include "Naming.h"
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/GenericLambdas.h"

using namespace clang;

namespace ampmigrate {

namespace {

class NameCollector : public AnalysedBodyVisitor {
public:
  llvm::StringSet<> Names;
  bool visitDecl(Decl *D) override {
    if (const auto *ND = dyn_cast<NamedDecl>(D); ND && ND->getIdentifier())
      Names.insert(ND->getName());
    return true;
  }
  bool visitStmt(Stmt *S) override {
    if (const auto *E = dyn_cast<DeclRefExpr>(S); E && E->getDecl()->getIdentifier())
      Names.insert(E->getDecl()->getName());
    if (const auto *M = dyn_cast<MemberExpr>(S); M && M->getMemberDecl()->getIdentifier())
      Names.insert(M->getMemberDecl()->getName());
    return true;
  }
};

} // namespace

llvm::StringSet<> namesIn(const FunctionDecl *FD) {
  NameCollector NC;
  NC.walk(FD);
  // In a member function a new local must not hide a member of the class (`grad_norm` of the
  // trainer read after the step), its bases' included.
  if (const auto *MD = dyn_cast<CXXMethodDecl>(FD)) {
    auto AddMembers = [&](const CXXRecordDecl *RD) {
      for (const Decl *D : RD->decls())
        if (const auto *ND = dyn_cast<NamedDecl>(D); ND && ND->getIdentifier())
          NC.Names.insert(ND->getName());
      return true;
    };
    const CXXRecordDecl *RD = MD->getParent();
    AddMembers(RD);
    if (RD->hasDefinition())
      RD->forallBases(AddMembers);
  }
  return std::move(NC.Names);
}

std::string freshName(llvm::StringSet<> &Used, StringRef Base) {
  std::string N = Base.str();
  for (int I = 2; Used.contains(N); ++I)
    N = (Base + std::to_string(I)).str();
  Used.insert(N);
  return N;
}

std::string convertedModelBase(const ObjectRef &M) {
  std::string Base = M.IsThis ? "amp_self" : ("amp_" + M.Decl->getName().str());
  // Drop a trailing underscore of member names (net_ -> amp_net).
  if (StringRef(Base).ends_with("_") && Base.size() > 5)
    Base.pop_back();
  return Base;
}

std::string freshMemberName(const CXXRecordDecl *Class) {
  auto Taken = [&](StringRef N) {
    for (const Decl *D : Class->decls())
      if (const auto *ND = dyn_cast<NamedDecl>(D); ND && ND->getIdentifier() && ND->getName() == N)
        return true;
    return false;
  };
  std::string N = "grads_";
  for (int I = 2; Taken(N); ++I)
    N = "grads" + std::to_string(I) + "_";
  return N;
}

} // namespace ampmigrate
