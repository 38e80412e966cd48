// The planner of one step: runs the stages in order and assembles the MigrationPlan from their edits.
#include "StepPlanner.h"

using namespace clang;

namespace ampmigrate {

StepPlanner::StepPlanner(ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
            const TrainingStep &T, const PlannerOptions &Opts, llvm::StringSet<> &UsedNames,
            const TargetApi &Tgt, const TranslationUnitAnalysis &TU)
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
  P.CalleeFunction = CalleeFA;
  P.CalleeScope = CalleeScope;
  P.Blockers = std::move(Blockers);
  P.ScalerHolders = FlowHolders;
  if (Split)
    P.SplitOther = Split->ScalingHalf == &T ? Split->SteppingHalf : Split->ScalingHalf;
  if (P.Blockers.empty()) {
    std::set<std::tuple<unsigned, unsigned, std::string>> Seen;
    for (const Edit &E : Edits)
      if (Seen.insert({E.Offset, E.Length, E.Text}).second)
        P.Edits.emplace_back(FilePath, E.Offset, E.Length, E.Text);
    std::set<std::tuple<std::string, unsigned, unsigned, std::string>> SeenElsewhere;
    for (const tooling::Replacement &R : OtherFileEdits)
      if (SeenElsewhere.insert({R.getFilePath().str(), R.getOffset(), R.getLength(),
                                R.getReplacementText().str()}).second)
        P.Edits.push_back(R);
  }
  return P;
}

const std::string &StepPlanner::gradsFor(const ObjectRef &Optimizer) const {
  for (const auto &[O, Name] : PerOptimizer)
    if (O == Optimizer)
      return Name;
  return GradsName;
}

} // namespace ampmigrate
