// Finds the AMP elements of every function in scope and groups them into training steps.
#pragma once

#include "ampmigrate/TrainingStep.h"
#include "clang/Basic/SourceLocation.h"
#include <functional>
#include <optional>

namespace ampmigrate {

class StepFinder {
public:
  /// `InScope` says whether a location belongs to code the user wants analysed (the main file and
  /// the headers matched by --header-filter). `Inactive` lists the preprocessor's skipped ranges.
  StepFinder(clang::ASTContext &Ctx, const RuleSet &Rules,
             std::function<bool(clang::SourceLocation)> InScope,
             std::vector<clang::SourceRange> Inactive = {});
  TranslationUnitAnalysis run();

  /// Source text helpers shared with the planner.
  static std::string textOf(const clang::ASTContext &Ctx, clang::SourceRange R);

private:
  clang::ASTContext &Ctx;
  const RuleSet &Rules;
  std::function<bool(clang::SourceLocation)> InScope;
  std::vector<clang::SourceRange> Inactive;
};

/// Shape recognisers on declarations, shared by the analysis and the planner.
bool isDerivedFromAny(const clang::CXXRecordDecl *RD, const std::vector<std::string> &Names);
bool isTensorType(clang::QualType T, const RuleSet &Rules);
/// A forward's result amp::cast_to_adapter_tensor casts back to fp32: a tensor, a tuple, pair or
/// vector of them, or an aggregate of such fields and scalars.
bool returnsTensors(clang::QualType T, const RuleSet &Rules);
/// A class result with tensor fields that the cast cannot reach (not such an aggregate).
bool holdsUncastTensors(clang::QualType T, const RuleSet &Rules);
bool isScalerClass(const clang::CXXRecordDecl *RD, const RuleSet &Rules);
/// A class whose constructor switches autocast (an RAII guard); sets `Disables` for guards that
/// turn it off.
bool isAutocastGuardClass(const clang::CXXRecordDecl *RD, const RuleSet &Rules, bool *Disables);
/// A guard whose constructor passes one of its parameters to the enable call (`Guard(bool on)`):
/// whether this use turns autocast on, when its argument is a constant; nullopt otherwise.
std::optional<bool> guardUseTurnsOn(const clang::CXXConstructExpr *Use, const RuleSet &Rules);
/// Whether a guard class's destructor clears autocast's cast cache (calls a `cache` rule's
/// function, in its body or in a function of its class that the body calls); nullopt when the
/// destructor's body is not in this translation unit.
std::optional<bool> guardClearsCache(const clang::CXXRecordDecl *RD, const RuleSet &Rules);
std::string qualifiedName(const clang::NamedDecl *D);
/// The `parameters()` / `named_parameters()` call a parameter-list expression names (through
/// temporaries and copies); null for anything else.
const clang::CXXMemberCallExpr *parametersCall(const clang::Expr *E);
/// The object an expression names (a variable, a member, `*this`), through `*`, `->` and holders.
ObjectRef resolveObject(const clang::Expr *E);
/// Whose parameters such an expression names (the model or optimizer of `x.parameters()`).
ObjectRef parametersOwner(const clang::Expr *E);
/// `t.grad()` / `t.mutable_grad()` on a tensor.
bool isGradAccessor(const clang::CallExpr *CE);
/// A `.grad` use reached from a body: `Access` is the `grad()` / `mutable_grad()` call, `Call` the
/// call of the body that leads to it (the access itself when it is in the body). Functions outside
/// system headers are followed, three calls deep.
struct GradUse {
  const clang::CallExpr *Call = nullptr;
  const clang::CallExpr *Access = nullptr;
};
GradUse firstGradUse(const clang::Stmt *Body, const clang::SourceManager &SM);

} // namespace ampmigrate
