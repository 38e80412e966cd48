// Plans every training step of a translation unit (planMigrations): one StepPlanner per step,
// then the steps that must migrate together (a shared scaler, the halves of a split step) are
// settled across plans.
#include "StepPlanner.h"
#include "ampmigrate/EditMerge.h"

using namespace clang;

namespace ampmigrate {

std::vector<MigrationPlan> planMigrations(ASTContext &Ctx, const RuleSet &Rules,
                                          const TranslationUnitAnalysis &TU,
                                          const PlannerOptions &Opts) {
  std::vector<MigrationPlan> Plans;
  if (TU.Functions.empty())
    return Plans;
  for (const FunctionAnalysis &FA : TU.Functions) {
    llvm::StringSet<> Used = namesIn(FA.Function);
    for (const TrainingStep &T : FA.Steps) {
      const TargetApi Tgt = spelledTarget(Ctx, Rules.Target, FA.Function);
      StepPlanner P(Ctx, Rules, FA, T, Opts, Used, Tgt, TU);
      Plans.push_back(P.plan());
    }
  }
  // Steps that share a scaler declared outside their function migrate together or not at all.
  // So do steps whose scaler flows through a declaration another plan changes (a parameter, a
  // member, a global): a plan in two groups carries a block from one to the other.
  std::map<const ValueDecl *, std::vector<MigrationPlan *>> ByScaler;
  auto Shared = [](const ValueDecl *D) {
    const auto *VD = dyn_cast<VarDecl>(D);
    return isa<FieldDecl>(D) || (VD && (isa<ParmVarDecl>(VD) || !VD->isLocalVarDecl()));
  };
  for (MigrationPlan &P : Plans) {
    std::set<const ValueDecl *> Keys;
    if (P.Step->Scaler.Decl && Shared(P.Step->Scaler.Decl))
      Keys.insert(cast<ValueDecl>(P.Step->Scaler.Decl->getCanonicalDecl()));
    for (const ValueDecl *H : P.ScalerHolders)
      if (Shared(H))
        Keys.insert(cast<ValueDecl>(H->getCanonicalDecl()));
    for (const ValueDecl *K : Keys)
      ByScaler[K].push_back(&P);
  }
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (auto &[D, Group] : ByScaler) {
      const MigrationPlan *Blocked = nullptr;
      for (MigrationPlan *P : Group)
        if (!P->Blockers.empty())
          Blocked = P;
      if (!Blocked)
        continue;
      for (MigrationPlan *P : Group)
        if (P->Blockers.empty()) {
          P->Blockers.push_back({P->Step->Scope ? P->Step->Scope->ReportLoc : D->getLocation(),
                                 "another step of the scaler '" + D->getNameAsString() +
                                     "' cannot be migrated, and the scaler's type is shared"});
          P->Edits.clear();
          Changed = true;
        }
    }
  }
  // The halves of a step split over two methods: one fix holding both halves' edits, on the
  // scaling half (the shared scaler member blocked both above when one was blocked).
  for (MigrationPlan &P : Plans) {
    if (!P.SplitOther || P.Step->Backwards.empty() || !P.Blockers.empty())
      continue;
    for (MigrationPlan &Q : Plans) {
      if (Q.Step != P.SplitOther || !Q.Blockers.empty())
        continue;
      EditMerge Joined;
      std::optional<EditOverlap> O = Joined.add(P.Edits);
      if (!O)
        O = Joined.add(Q.Edits);
      if (O) {
        std::string Why = "the edits of the two halves of this step collide (" + overlapText(*O) +
                          "); migrate this step by hand";
        P.Blockers.push_back({P.Step->Backwards.front()->Backward->getBeginLoc(), Why});
        Q.Blockers.push_back({Q.Step->Steps.empty() ? Q.Function->Function->getLocation()
                                                    : Q.Step->Steps.front()->Call->getBeginLoc(),
                              Why});
        P.Edits.clear();
        Q.Edits.clear();
        continue;
      }
      P.Edits = Joined.edits();
      Q.Edits.clear();
      Q.JoinedInto = &P;
    }
  }
  return Plans;
}

} // namespace ampmigrate
