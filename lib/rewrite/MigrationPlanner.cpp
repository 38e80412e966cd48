// Plans every training step of a translation unit (planMigrations): one planStep per step,
// then the steps that must migrate together (a shared scaler, the halves of a split step) are
// settled across plans.
#include "StepPlanner.h"
#include "ampmigrate/EditMerge.h"
#include "clang/Basic/SourceManager.h"

using namespace clang;

namespace ampmigrate {

/// Steps of one function that convert models before the same loop (a GAN's two steps, each
/// running both networks) insert their declarations at one offset: each step's insertion there
/// becomes the declarations of all the steps still planned, in the order the steps declared them,
/// so that the edits are identical and merge (a model converted twice is one conversion: the
/// runtime's auto_mixed_precision is idempotent per module, and a conversion alone changes nothing
/// until its forward runs). A step whose insertion at that offset holds more than its
/// conversions keeps it: the overlap then refuses the later one, as before.
static void joinLoopConversions(const SourceManager &SM, std::vector<MigrationPlan> &Plans) {
  std::map<std::pair<const FunctionAnalysis *, unsigned>, std::vector<std::string>> Lines;
  for (const MigrationPlan &P : Plans)
    if (P.Blockers.empty())
      for (const auto &[At, Line] : P.LoopConversions) {
        std::vector<std::string> &L = Lines[{P.Function, At}];
        if (!llvm::is_contained(L, Line))
          L.push_back(Line);
      }
  for (MigrationPlan &P : Plans) {
    if (!P.Blockers.empty())
      continue;
    std::map<unsigned, std::string> Own;
    for (const auto &[At, Line] : P.LoopConversions)
      Own[At] += Line;
    if (Own.empty())
      continue;
    OptionalFileEntryRef FE = SM.getFileEntryRefForID(
        SM.getFileID(SM.getExpansionLoc(P.Function->Function->getBody()->getBeginLoc())));
    if (!FE)
      continue;
    for (const auto &[At, Text] : Own) {
      std::string All;
      for (const std::string &Line : Lines[{P.Function, At}])
        All += Line;
      if (All == Text)
        continue;
      for (tooling::Replacement &R : P.Edits) {
        size_t Pos;
        if (R.getFilePath() != FE->getName() || R.getOffset() != At || R.getLength() != 0 ||
            (Pos = R.getReplacementText().find(Text)) == StringRef::npos)
          continue;
        std::string New = R.getReplacementText().str();
        New.replace(Pos, Text.size(), All);
        R = tooling::Replacement(R.getFilePath(), At, 0, New);
        break;
      }
    }
  }
}

/// The steps of a template instantiated several times: one plan per instantiation, all editing
/// the template's one source. They stand only together and only alike: a step every
/// instantiation has, planned to the same edits; otherwise each is reported.
static void settleInstantiations(std::vector<MigrationPlan> &Plans) {
  std::map<std::pair<const FunctionDecl *, unsigned>, std::vector<MigrationPlan *>> Groups;
  for (MigrationPlan &P : Plans)
    if (P.Function->Pattern)
      Groups[{P.Function->Pattern, P.Step->Begin}].push_back(&P);
  auto BlockAll = [](std::vector<MigrationPlan *> &Group, const std::string &Why) {
    for (MigrationPlan *P : Group) {
      if (P->Blockers.empty()) {
        SourceLocation L = !P->Step->Steps.empty() ? P->Step->Steps.front()->Call->getBeginLoc()
                           : !P->Step->Backwards.empty() ? P->Step->Backwards.front()->Backward->getBeginLoc()
                                                          : P->Function->Function->getLocation();
        P->Blockers.push_back({L, Why});
      }
      P->Edits.clear();
    }
  };
  for (auto &[Key, Group] : Groups) {
    unsigned Expected = Group.front()->Function->Instantiations;
    if (Group.size() != Expected) {
      BlockAll(Group, "this template is instantiated " + std::to_string(Expected) +
                          " times in this file and only " + std::to_string(Group.size()) +
                          " of its instantiations run this step as recognised; its one source "
                          "cannot be rewritten for all of them: migrate this step by hand");
      continue;
    }
    const MigrationPlan *Blocked = nullptr;
    for (const MigrationPlan *P : Group)
      if (!P->Blockers.empty() && !Blocked)
        Blocked = P;
    if (Blocked) {
      bool All = llvm::all_of(Group, [](const MigrationPlan *P) { return !P->Blockers.empty(); });
      if (!All)
        BlockAll(Group, "another instantiation of this template cannot be migrated (" +
                            Blocked->Blockers.front().Reason + "); its one source is rewritten "
                            "for all of them or for none");
      continue;
    }
    auto Sorted = [](const MigrationPlan *P) {
      std::vector<std::tuple<std::string, unsigned, unsigned, std::string>> Out;
      for (const tooling::Replacement &R : P->Edits)
        Out.emplace_back(normalizedEditPath(R.getFilePath()), R.getOffset(), R.getLength(),
                         R.getReplacementText().str());
      llvm::sort(Out);
      return Out;
    };
    auto First = Sorted(Group.front());
    if (!llvm::all_of(Group, [&](const MigrationPlan *P) { return Sorted(P) == First; }))
      BlockAll(Group, "the " + std::to_string(Expected) + " instantiations of this template need "
                      "different rewrites of its one source (the types of its template arguments "
                      "change what the step becomes): migrate this step by hand");
  }
}

std::vector<MigrationPlan> planMigrations(ASTContext &Ctx, const RuleSet &Rules,
                                          const TranslationUnitAnalysis &TU,
                                          const PlannerOptions &Opts) {
  std::vector<MigrationPlan> Plans;
  if (TU.Functions.empty())
    return Plans;
  for (const FunctionAnalysis &FA : TU.Functions) {
    FunctionPlanning Shared{namesIn(FA.Function), {}};
    for (const TrainingStep &T : FA.Steps) {
      const TargetApi Tgt = spelledTarget(Ctx, Rules.Target, FA.Function);
      Plans.push_back(planStep(Ctx, Rules, FA, T, Opts, Shared, Tgt, TU));
    }
  }
  settleInstantiations(Plans);
  // Steps that share a scaler declared outside their function migrate together or not at all.
  // So do steps whose scaler flows through a declaration another plan changes (a parameter, a
  // member, a global): a plan in two groups carries a block from one to the other.
  std::map<const ValueDecl *, std::vector<MigrationPlan *>> ByScaler;
  auto Shared = [](const ValueDecl *D) {
    const auto *VD = dyn_cast<VarDecl>(D);
    return isa<FieldDecl>(D) || (VD && (isa<ParmVarDecl>(VD) || !VD->isLocalVarDecl()));
  };
  // Scalers declared in one statement change type together: each must be the scaler of a step.
  for (MigrationPlan &P : Plans)
    for (const VarDecl *S : P.ScalerSiblings)
      if (P.Blockers.empty() &&
          llvm::none_of(Plans, [&](const MigrationPlan &Q) { return Q.Step->Scaler.Decl == S; })) {
        P.Blockers.push_back({P.Step->Scaler.Decl->getLocation(),
                              "the scaler is declared in one statement with '" + S->getNameAsString() +
                                  "', whose type would change with it, and no training step uses '" +
                                  S->getNameAsString() + "' as its scaler; declare the scaler in a "
                                  "statement of its own"});
        P.Edits.clear();
      }
  for (MigrationPlan &P : Plans) {
    std::set<const ValueDecl *> Keys;
    // The statement declaring several scalers: keyed by its first declarator.
    if (!P.ScalerSiblings.empty()) {
      const ValueDecl *First = P.Step->Scaler.Decl;
      for (const VarDecl *S : P.ScalerSiblings)
        if (S->getLocation() < First->getLocation())
          First = S;
      Keys.insert(First);
    }
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
  joinLoopConversions(Ctx.getSourceManager(), Plans);
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
