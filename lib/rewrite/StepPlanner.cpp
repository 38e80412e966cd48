// The planner of one step: feasibility (the checks, which fill the descriptor or find blockers),
// then, for a feasible step, the emitters; their edits assembled into the MigrationPlan.
#include "StepPlanner.h"
#include "StepEmitter.h"
#include "ampmigrate/EditMerge.h"

using namespace clang;

namespace ampmigrate {

StepPlanner::StepPlanner(ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
                         const TrainingStep &T, const PlannerOptions &Opts,
                         FunctionPlanning &Shared, const TargetApi &Tgt,
                         const TranslationUnitAnalysis &TU)
    : Ctx(Ctx), SM(Ctx.getSourceManager()), LO(Ctx.getLangOpts()), Rules(Rules), FA(FA), T(T),
      Opts(Opts), PM(FA.Function->getBody()), Shared(Shared), UsedNames(Shared.UsedNames), Tgt(Tgt),
      TU(TU) {
  graftLambdaBodies(PM, FA.Function->getBody());
}

MigrationPlan StepPlanner::plan() {
  MigrationPlan P;
  P.Step = &T;
  P.Function = &FA;
  bool Feasible = planAll();
  P.Accumulates = Desc.Accumulation.On;
  P.CalleeFunction = Desc.CalleeFA;
  P.CalleeScope = Desc.CalleeScope;
  P.Blockers = std::move(Blockers);
  P.ScalerHolders = FlowHolders;
  P.ScalerSiblings = ScalerSiblings;
  P.LoopConversions = LoopConversions;
  if (Desc.Split)
    P.SplitOther = Desc.Split->ScalingHalf == &T ? Desc.Split->SteppingHalf : Desc.Split->ScalingHalf;
  if (!Feasible)
    return P;
  std::vector<Edit> Edits;
  std::map<unsigned, std::string> Insertions;
  std::vector<tooling::Replacement> OtherFileEdits;
  EditSink Out(Edits, Insertions, OtherFileEdits);
  StepEmitter(Desc, Tgt, Out).emit();
  for (const auto &[At, Text] : Insertions)
    Edits.push_back({At, 0, Text});
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

StepAssessment StepPlanner::assess() {
  planAll();
  return {Blockers, Desc};
}

bool StepPlanner::planAll() {
  const Stmt *Body = FA.Function->getBody();
  File = SM.getFileID(SM.getExpansionLoc(Body->getBeginLoc()));
  FilePath = SM.getFileEntryRefForID(File) ? SM.getFileEntryRefForID(File)->getName().str() : "";
  Buffer = SM.getBufferData(File);

  for (const SourceRange &R : FA.InactiveAmpCode)
    block(R.getBegin(), "AMP code under an inactive preprocessor branch in this function; "
                        "migrate each configuration by hand or run once per configuration");
  if ((Desc.Split = findSplitStep(TU, FA, T)))
    checkSplitHalf();
  else
    feasible();
  return Blockers.empty();
}

void StepPlanner::checkConcerns(const ImplicitBackward &B) {
  checkRegion(B);
  if (T.Unscaled)
    checkOptimizerSteps(T.Steps, Desc.Calls);
  else
    checkScalerCalls();
  if (T.mixed()) {
    checkOptimizerSteps(T.Plain.Steps, Desc.PlainSteps);
    checkMixedBackwards(B);
  }
  checkClips();
  checkGradAccesses();
  checkZeroGrads(B);
  if (!T.Unscaled)
    checkScalerDecl();
  decideInclude();
}

StepAssessment assessStep(ASTContext &Ctx, const RuleSet &Rules, const TranslationUnitAnalysis &TU,
                          const FunctionAnalysis &FA, const TrainingStep &T, const PlannerOptions &Opts) {
  FunctionPlanning Shared{namesIn(FA.Function), {}};
  const TargetApi Tgt = spelledTarget(Ctx, Rules.Target, FA.Function);
  return StepPlanner(Ctx, Rules, FA, T, Opts, Shared, Tgt, TU).assess();
}

const std::string &StepPlanner::gradsFor(const ObjectRef &Optimizer) const {
  for (const auto &[O, Name] : Desc.PerOptimizer)
    if (O == Optimizer)
      return Name;
  return Desc.GradsName;
}

} // namespace ampmigrate
