// The planner of one step: runs the stages in order and assembles the MigrationPlan from their edits.
#include "StepPlanner.h"
#include "ampmigrate/EditMerge.h"

using namespace clang;

namespace ampmigrate {

StepPlanner::StepPlanner(ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
                         const TrainingStep &T, const PlannerOptions &Opts,
                         llvm::StringSet<> &UsedNames, const TargetApi &Tgt,
                         const TranslationUnitAnalysis &TU)
    : Ctx(Ctx), SM(Ctx.getSourceManager()), LO(Ctx.getLangOpts()), Rules(Rules), FA(FA), T(T),
      Opts(Opts), PM(FA.Function->getBody()), UsedNames(UsedNames), Tgt(Tgt), TU(TU) {
  graftLambdaBodies(PM, FA.Function->getBody());
}

MigrationPlan StepPlanner::plan() {
  MigrationPlan P;
  P.Step = &T;
  P.Function = &FA;
  planAll();
  if (Accumulate && !GradsDecl.empty())
    insertAt(GradsDeclAt, GradsDecl);
  for (const auto &[At, Text] : Insertions)
    Edits.push_back({At, 0, Text});
  P.Accumulates = Accumulate;
  P.CalleeFunction = Desc.CalleeFA;
  P.CalleeScope = Desc.CalleeScope;
  P.Blockers = std::move(Blockers);
  P.ScalerHolders = FlowHolders;
  if (Desc.Split)
    P.SplitOther = Desc.Split->ScalingHalf == &T ? Desc.Split->SteppingHalf : Desc.Split->ScalingHalf;
  if (!P.Blockers.empty())
    return P;
  std::vector<tooling::Replacement> Unit;
  for (const Edit &E : Edits)
    Unit.emplace_back(FilePath, E.Offset, E.Length, E.Text);
  Unit.insert(Unit.end(), OtherFileEdits.begin(), OtherFileEdits.end());
  // The emitters' edits meet here, as every step's meet when they are applied (EditMerge).
  if (std::optional<EditOverlap> O = mergeUnit(Unit, P.Edits))
    P.Blockers.push_back({stepLoc(), "the rewrite's own edits collide (" + overlapText(*O) +
                                         "); migrate this step by hand"});
  return P;
}

void StepPlanner::planAll() {
  const Stmt *Body = FA.Function->getBody();
  File = SM.getFileID(SM.getExpansionLoc(Body->getBeginLoc()));
  FilePath = SM.getFileEntryRefForID(File) ? SM.getFileEntryRefForID(File)->getName().str() : "";
  Buffer = SM.getBufferData(File);

  for (const SourceRange &R : FA.InactiveAmpCode)
    block(R.getBegin(), "AMP code under an inactive preprocessor branch in this function; "
                        "migrate each configuration by hand or run once per configuration");
  if ((Desc.Split = findSplitStep(TU, FA, T))) {
    planSplitHalf();
    return;
  }
  if (!feasible())
    return;
  emit(*T.Backwards.front());
}

void StepPlanner::emit(const ImplicitBackward &B) {
  planRegion(B);
  if (T.Unscaled)
    planOptimizerSteps(T.Steps);
  else
    planScalerCalls();
  if (T.mixed()) {
    planOptimizerSteps(T.Plain.Steps);
    planMixedBackwards(B);
  }
  planClips();
  planGradAccesses();
  planZeroGrads(B);
  if (!T.Unscaled)
    planScalerDecl();
  planInclude();
}

const std::string &StepPlanner::gradsFor(const ObjectRef &Optimizer) const {
  for (const auto &[O, Name] : Desc.PerOptimizer)
    if (O == Optimizer)
      return Name;
  return Desc.GradsName;
}

} // namespace ampmigrate
