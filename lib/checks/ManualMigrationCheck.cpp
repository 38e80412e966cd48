// amp-manual-migration: what the tool will not rewrite, each with its reason.
#include "ampmigrate/Engine.h"

using namespace clang;
namespace ampmigrate {

void checkManualMigration(const CheckInput &In, FindingSink &Out) {
  for (const MigrationPlan *P : In.Plans)
    for (const Blocker &B : P->Blockers)
      Out.report("amp-manual-migration", B.Loc, "not migrated automatically: " + B.Reason);
  for (const AutocastScope &S : In.Function.Scopes) {
    if (S.DisablesAutocast || isInferenceScope(In, S))
      continue;
    bool InStep = llvm::any_of(In.Function.Steps, [&](const TrainingStep &T) { return T.Scope == &S; }) ||
                  llvm::any_of(In.CalleePlans, [&](const MigrationPlan *P) { return P->CalleeScope == &S; });
    if (InStep)
      continue;
    std::string Why =
        S.Shape == AutocastScope::Kind::Unclosed
            ? "autocast is enabled with no training step in this function (a global or "
              "start-up switch?); convert the model where it is created with " +
                  In.Rules.Target.Convert
            : "no training step (a backward of the loss computed here, then the optimizer's or "
              "the scaler's step) follows this autocast scope in this function; when they are in "
              "another function, move the step into one function or migrate by hand";
    Out.report("amp-manual-migration", S.ReportLoc, "not migrated automatically: " + Why);
  }
}

} // namespace ampmigrate
