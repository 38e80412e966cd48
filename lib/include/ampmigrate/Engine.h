// Runs the checks over an analysed translation unit: findings, with each step's fixes on its lead.
#pragma once

#include "ampmigrate/CallSummaries.h"
#include "ampmigrate/Finding.h"
#include "ampmigrate/MigrationPlan.h"
#include "ampmigrate/TrainingStep.h"
#include "llvm/ADT/StringRef.h"
#include <functional>

namespace ampmigrate {

struct EngineOptions {
  PlannerOptions Planner;
  /// Whether a check id is enabled (--checks globs).
  std::function<bool(llvm::StringRef)> CheckEnabled = [](llvm::StringRef) { return true; };
  /// The summaries of the other files of the run (CallSummaries.h): callees whose bodies are
  /// there are judged by them. Null: none known.
  const SummaryIndex *RunSummaries = nullptr;
};

/// What the engine says about one translation unit: findings, and beside them the edits of each
/// fixable step (not yet attached to a finding: see attachFixes).
struct EngineResult {
  std::vector<Finding> Findings;
  std::vector<StepFix> Fixes;
  /// The summaries of the functions defined in the main file, for the other files of the run.
  SummaryIndex Summaries;
  /// The project functions whose bodies the analysis needed and no summary had (by USR).
  std::map<std::string, UnknownCallee> UnknownCallees;
};

/// Analyses the translation unit (restricted by `InScope`), plans the migrations and reports.
EngineResult runChecks(clang::ASTContext &Ctx, const RuleSet &Rules,
                               std::function<bool(clang::SourceLocation)> InScope,
                               const std::vector<clang::SourceRange> &Inactive,
                               const EngineOptions &Opts);

/// Emitted by each check: one finding at a location.
class FindingSink {
public:
  FindingSink(clang::ASTContext &Ctx, const EngineOptions &Opts) : Ctx(Ctx), Opts(Opts) {}
  Finding *report(llvm::StringRef Check, clang::SourceLocation Loc, std::string Message);
  void note(Finding *F, clang::SourceLocation Loc, std::string Message);
  std::vector<Finding> take() { return std::move(Findings); }
  SourcePos position(clang::SourceLocation Loc) const;
  /// The template the function being checked belongs to, given to each finding reported from
  /// now on (Finding::Template, Finding::Uninstantiated).
  void setTemplate(std::string Id, bool Uninstantiated) {
    Template = std::move(Id);
    TemplateUninstantiated = Uninstantiated;
  }

private:
  clang::ASTContext &Ctx;
  const EngineOptions &Opts;
  std::vector<Finding> Findings;
  std::string Template;
  bool TemplateUninstantiated = false;
};

/// What each check sees: the analysis of one function and the plans of its steps.
struct CheckInput {
  clang::ASTContext &Ctx;
  const RuleSet &Rules;
  const FunctionAnalysis &Function;
  /// The plan of each step of the function, in the order of Function.Steps.
  std::vector<const MigrationPlan *> Plans;
  /// Plans of steps in other functions whose autocast scope is in this one (the step calls this
  /// function for its loss).
  std::vector<const MigrationPlan *> CalleePlans;
  /// What the run knows of functions whose bodies are in other files (CallSummaries.h); null: none.
  const CalleeFacts *Callees = nullptr;
  const MigrationPlan *planOf(const TrainingStep *S) const {
    for (const MigrationPlan *P : Plans)
      if (P->Step == S)
        return P;
    return nullptr;
  }
  /// The step whose elements include the given offset range, if any.
  const TrainingStep *stepContaining(unsigned Offset) const;
};

/// An autocast scope of inference code (FunctionAnalysis::InferenceOnly; not a start-up switch,
/// not a region that turns autocast off): amp-autocast-inference reports it, and only it.
bool isInferenceScope(const CheckInput &In, const AutocastScope &S);

/// Marks a finding as part of `Step` (StepId) and fixable when the step's plan is.
void markStep(Finding *F, const CheckInput &In, const TrainingStep *Step);
std::string stepIdOf(clang::ASTContext &Ctx, const FunctionAnalysis &FA, const TrainingStep &S);

// One function per check (lib/checks/<Name>Check.cpp).
void checkAutocastScope(const CheckInput &In, FindingSink &Out);
void checkAutocastLeak(const CheckInput &In, FindingSink &Out);
void checkScalerImplicitGrad(const CheckInput &In, FindingSink &Out);
void checkScalerUnscale(const CheckInput &In, FindingSink &Out);
void checkScalerStep(const CheckInput &In, FindingSink &Out);
void checkClipGradNorm(const CheckInput &In, FindingSink &Out);
void checkZeroGrad(const CheckInput &In, FindingSink &Out);
void checkClipBeforeUnscale(const CheckInput &In, FindingSink &Out);
void checkManualMigration(const CheckInput &In, FindingSink &Out);

} // namespace ampmigrate
