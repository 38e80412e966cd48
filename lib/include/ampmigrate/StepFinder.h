// Finds the AMP elements of every function in scope and groups them into training steps.
#pragma once

#include "ampmigrate/ShapeRecognisers.h"
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
  /// Answers about callees whose bodies are in other files (the run's summaries).
  void useCallees(const CalleeFacts *C) { Callees = C; }

  /// The source text of a range (sourceTextOf), for the planner.
  static std::string textOf(const clang::ASTContext &Ctx, clang::SourceRange R) {
    return sourceTextOf(Ctx, R);
  }

private:
  clang::ASTContext &Ctx;
  const RuleSet &Rules;
  std::function<bool(clang::SourceLocation)> InScope;
  std::vector<clang::SourceRange> Inactive;
  const CalleeFacts *Callees = nullptr;
};

/// Why a scope with a hole (AutocastScope::Holes) of the function `FA` is not rewritten, naming
/// the scope's and the hole's lines and a backward() in the hole.
std::string scopeHoleReason(const FunctionAnalysis &FA, const AutocastScope &S,
                            const clang::SourceManager &SM);

/// Whether a call in a template's definition is left unresolved until an instantiation: its
/// callee, or its type, depends on a template parameter (UninstantiatedTemplates.cpp).
bool isUnresolvedCall(const clang::CallExpr *CE);

/// Whether the file offset `At` of `FA` lies in code whose calls on dependent types are left
/// unresolved (FunctionAnalysis::UnresolvedCalls): anywhere in a template's definition that the
/// translation unit never instantiates, or in a generic lambda nothing calls.
bool unresolvedAt(const clang::SourceManager &SM, const FunctionAnalysis &FA, unsigned At);

/// Why `What` ("this step", "this autocast scope") at the file offset `From`, where unresolvedAt
/// holds, is not migrated: naming the template (or the generic lambda) and its first unresolved
/// call from `From` on.
std::string uninstantiatedReason(const clang::ASTContext &Ctx, const FunctionAnalysis &FA,
                                 llvm::StringRef What, unsigned From);

} // namespace ampmigrate
