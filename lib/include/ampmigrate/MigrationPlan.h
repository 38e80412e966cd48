// Plans the rewrite of training steps into the explicit-gradient auto_mixed_precision form.
#pragma once

#include "ampmigrate/AmpLevel.h"
#include "ampmigrate/TrainingStep.h"
#include "clang/Tooling/Core/Replacement.h"
#include <vector>

namespace ampmigrate {


/// A reason a step cannot be rewritten safely, with where it applies.
struct Blocker {
  clang::SourceLocation Loc;
  std::string Reason;
};

/// The edits of one training step, planned together and applied all-or-nothing.
struct MigrationPlan {
  const TrainingStep *Step = nullptr;
  const FunctionAnalysis *Function = nullptr;
  std::vector<Blocker> Blockers; ///< non-empty: not rewritten
  std::vector<clang::tooling::Replacement> Edits;
  /// Gradient accumulation: micro-step grads are summed, zero_grad() clears the sum.
  bool Accumulates = false;
  /// The autocast scope is in a function the step calls for its loss (`auto loss = f(batch);`):
  /// that function and its scope, edited with the step.
  const FunctionAnalysis *CalleeFunction = nullptr;
  const AutocastScope *CalleeScope = nullptr;
  /// The declarations outside the step's function whose type the plan changes to the target
  /// scaler (parameters, members, globals the scaler flows through): steps sharing one migrate
  /// together or not at all.
  std::vector<const clang::ValueDecl *> ScalerHolders;
  /// Other scalers declared in the same statement as this step's scaler (`GradScaler a, b;`): the
  /// plan changes their type too, so their steps migrate with this one or not at all.
  std::vector<const clang::VarDecl *> ScalerSiblings;
  /// A step split over two methods of a class: the other half. The plans of both halves are
  /// joined by planMigrations: the scaling half's plan holds every edit and the stepping half's
  /// plan has JoinedInto set; or both are blocked.
  const TrainingStep *SplitOther = nullptr;
  const MigrationPlan *JoinedInto = nullptr;
  /// The models this step converts once before a loop: (offset in the step's file, declaration
  /// line). planMigrations gives every step of a function that inserts at one offset the same
  /// text, the lines of all of them, so that their edits merge.
  std::vector<std::pair<unsigned, std::string>> LoopConversions;
  bool ok() const { return Blockers.empty() && !Edits.empty(); }
};

struct PlannerOptions {
  AmpLevel Level = AmpLevel::O2;
};

/// Plans every step of a translation unit. Steps that share a scaler declared outside one
/// function are blocked together when any of them is blocked (its type changes for all uses).
std::vector<MigrationPlan> planMigrations(clang::ASTContext &Ctx, const RuleSet &Rules,
                                          const TranslationUnitAnalysis &TU,
                                          const PlannerOptions &Opts);

} // namespace ampmigrate
