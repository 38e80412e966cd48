// The scaler class as spelled in declarations and constructions (type locations, make_shared/make_unique).
#pragma once

#include "StepContext.h"

namespace ampmigrate {

class TypeLocFinder : public AstVisitor {
public:
  const clang::CXXRecordDecl *Target;
  std::vector<clang::SourceRange> Ranges;
  explicit TypeLocFinder(const clang::CXXRecordDecl *T) : Target(T) { WrapsTypeLocs = true; }
  bool traverseTypeLoc(clang::TypeLoc TL) override {
    if (TL.getAs<clang::ElaboratedTypeLoc>() && matches(TL.getType())) {
      Ranges.push_back(TL.getSourceRange());
      return true; // don't descend: the qualifier is part of the range
    }
    return descend(TL);
  }
  bool visitTypeLoc(clang::TypeLoc TL) override {
    if ((TL.getAs<clang::RecordTypeLoc>() || TL.getAs<clang::TypedefTypeLoc>()) && matches(TL.getType()))
      Ranges.push_back(TL.getSourceRange());
    return true;
  }
  bool matches(clang::QualType QT) const {
    const clang::CXXRecordDecl *RD = QT->getAsCXXRecordDecl();
    return RD && RD->getCanonicalDecl() == Target->getCanonicalDecl();
  }
};

class ConstructFinder : public AstVisitor {
public:
  const clang::CXXRecordDecl *Target;
  std::vector<const clang::CXXConstructExpr *> Constructs;
  std::vector<const clang::CallExpr *> MakeCalls; ///< std::make_shared<T>(...) / make_unique<T>(...)
  explicit ConstructFinder(const clang::CXXRecordDecl *T) : Target(T) {}
  bool visitStmt(clang::Stmt *S) override {
    if (const auto *E = llvm::dyn_cast<clang::CXXConstructExpr>(S)) {
      if (E->getConstructor()->getParent()->getCanonicalDecl() == Target->getCanonicalDecl() &&
          !E->getConstructor()->isCopyOrMoveConstructor())
        Constructs.push_back(E);
      return true;
    }
    if (const auto *E = llvm::dyn_cast<clang::CallExpr>(S))
      noteMakeCall(E);
    return true;
  }

private:
  void noteMakeCall(const clang::CallExpr *E) {
    const clang::FunctionDecl *FD = E->getDirectCallee();
    if (!FD || !FD->getIdentifier())
      return;
    llvm::StringRef N = FD->getName();
    if (N != "make_shared" && N != "make_unique")
      return;
    if (const clang::TemplateArgumentList *TA = FD->getTemplateSpecializationArgs())
      if (TA->size() >= 1 && TA->get(0).getKind() == clang::TemplateArgument::Type)
        if (const clang::CXXRecordDecl *RD = TA->get(0).getAsType()->getAsCXXRecordDecl())
          if (RD->getCanonicalDecl() == Target->getCanonicalDecl())
            MakeCalls.push_back(E);
  }
};

} // namespace ampmigrate
