// The planning of one training step (planStep, StepPlanner.cpp): the feasibility stage, a
// sequence of planners that each return a value (StepConcerns.h), then, for a step with no
// blockers, the edit writers (StepEditWriter.h) and the merge of their edits (docs/architecture.md,
// "planning").
#pragma once

#include "Naming.h"
#include "StepDescriptor.h"
#include "ampmigrate/MigrationPlan.h"
#include "ampmigrate/StepFinder.h"

namespace ampmigrate {

/// The target API as the edits in `FD` spell it: globally qualified (`::amp::X`) where another
/// namespace of the target's first name is visible there.
TargetApi spelledTarget(clang::ASTContext &Ctx, const TargetApi &T, const clang::FunctionDecl *FD);

/// The plan of step `T` of `FA`: its edits, or the reasons it is not rewritten. `Shared` is what
/// the steps of `FA` share (the names taken, the models converted before a loop).
MigrationPlan planStep(clang::ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
                       const TrainingStep &T, const PlannerOptions &Opts, FunctionPlanning &Shared,
                       const TargetApi &Tgt, const TranslationUnitAnalysis &TU);

/// Feasibility alone for step `T` of `FA`, as planMigrations would plan it (its names fresh in its
/// function): what a test pins without looking at edits.
StepAssessment assessStep(clang::ASTContext &Ctx, const RuleSet &Rules, const TranslationUnitAnalysis &TU,
                          const FunctionAnalysis &FA, const TrainingStep &T, const PlannerOptions &Opts);

} // namespace ampmigrate
