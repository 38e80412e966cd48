// The planning of one step (StepPlanner.h): the feasibility stage, each planner in order handing
// the facts it decides to the next (StepConcerns.h), the descriptor assembled from their slices;
// then, for a step with no blockers, the edit writers, and their edits merged into the MigrationPlan.
#include "StepPlanner.h"
#include "StepConcerns.h"
#include "StepEditWriter.h"
#include "StepMeaning.h"
#include "ampmigrate/EditMerge.h"

using namespace clang;

namespace ampmigrate {

std::vector<PPDirective> conditionalDirectives(const SourceManager &SM, FileID File,
                                             const LangOptions &LO) {
  std::vector<PPDirective> Out;
  StringRef Buffer = SM.getBufferData(File);
  Lexer L(SM.getLocForStartOfFile(File), LO, Buffer.begin(), Buffer.begin(), Buffer.end());
  Token Tok;
  while (!L.LexFromRawLexer(Tok)) {
    if (!Tok.is(tok::hash) || !Tok.isAtStartOfLine())
      continue;
    unsigned At = SM.getFileOffset(Tok.getLocation());
    if (L.LexFromRawLexer(Tok))
      break;
    if (!Tok.is(tok::raw_identifier) || Tok.isAtStartOfLine())
      continue;
    StringRef Name = Tok.getRawIdentifier();
    if (Name == "if" || Name == "ifdef" || Name == "ifndef")
      Out.push_back({At, PPDirective::Open});
    else if (Name == "elif" || Name == "elifdef" || Name == "elifndef" || Name == "else")
      Out.push_back({At, PPDirective::Branch});
    else if (Name == "endif")
      Out.push_back({At, PPDirective::Close});
  }
  return Out;
}

namespace {

/// The branches (the offset of the directive that opened each) that enclose `Offset`, outermost
/// first.
std::vector<unsigned> branchesAt(const std::vector<PPDirective> &Ds, unsigned Offset) {
  std::vector<unsigned> Open;
  for (const PPDirective &D : Ds) {
    if (D.Offset >= Offset)
      break;
    if (D.Kind == PPDirective::Open)
      Open.push_back(D.Offset);
    else if (D.Kind == PPDirective::Branch && !Open.empty())
      Open.back() = D.Offset;
    else if (D.Kind == PPDirective::Close && !Open.empty())
      Open.pop_back();
  }
  return Open;
}

/// Why the step's edits in its own file would split a preprocessor conditional (an edit that
/// replaces a directive, or edits in different branches), else nullopt. The include insertion is
/// not part of the step's structure and is not compared.
std::optional<std::string> splitsConditional(const StepContext &C, const PreprocessorFacts &PP,
                                             const std::vector<Edit> &Edits) {
  const SourceManager &SM = C.SM;
  const StringRef Buffer = C.Buffer;
  if (Edits.empty())
    return std::nullopt;
  std::vector<PPDirective> Ds = conditionalDirectives(SM, C.File, C.LO);
  // The conditionals that go whole with the scope (per-version spellings of its calls).
  llvm::erase_if(Ds, [&](const PPDirective &D) {
    return PP.inVersionGroup(D.Offset);
  });
  if (Ds.empty())
    return std::nullopt;
  auto Describe = [&](unsigned At) {
    unsigned Line = SM.getLineNumber(C.File, At);
    StringRef Text = Buffer.substr(At).split('\n').first.rtrim();
    return "`" + Text.str() + "` at line " + std::to_string(Line);
  };
  const std::string Consequence =
      ", so the rewritten step (one value_and_grad function over the forward, the model "
      "converted once) would compile in one configuration only; migrate by hand (for "
      "`#ifdef USE_AMP` around the autocast calls: a run-time flag migrates, with the level "
      "chosen from it)";
  auto IsInclude = [](const Edit &E) {
    return E.Length == 0 && StringRef(E.Text).ltrim().starts_with("#include");
  };
  auto Ref = llvm::find_if(Edits, [&](const Edit &E) { return !IsInclude(E); });
  if (Ref == Edits.end())
    return std::nullopt;
  const std::vector<unsigned> First = branchesAt(Ds, Ref->Offset);
  for (const Edit &E : Edits) {
    if (IsInclude(E))
      continue;
    // Directives inside a replaced range must come through whole: a balanced conditional (one
    // inside the forward region, moved into the function) that the replacement carries over.
    int Depth = 0;
    const PPDirective *Broken = nullptr;
    for (const PPDirective &D : Ds) {
      if (D.Offset < E.Offset || D.Offset >= E.Offset + E.Length)
        continue;
      Depth += D.Kind == PPDirective::Open ? 1 : D.Kind == PPDirective::Close ? -1 : 0;
      StringRef Line = Buffer.substr(D.Offset).split('\n').first.trim();
      if (Depth < 0 || (D.Kind == PPDirective::Branch && Depth == 0) ||
          !StringRef(E.Text).contains(Line)) {
        Broken = &D;
        break;
      }
    }
    if (!Broken && Depth != 0)
      Broken = &*llvm::find_if(Ds, [&](const PPDirective &D) { return D.Offset >= E.Offset; });
    for (const PPDirective &D : Ds)
      if (&D == Broken)
        return "the rewrite would replace code that holds the preprocessor directive " +
               Describe(D.Offset) + ": part of this step is inside a preprocessor conditional " +
               "and part outside it" + Consequence;
    for (unsigned End : {E.Offset, E.Offset + E.Length}) {
      std::vector<unsigned> Here = branchesAt(Ds, End);
      if (Here == First)
        continue;
      // The first branch the two places do not share.
      size_t K = 0;
      while (K < Here.size() && K < First.size() && Here[K] == First[K])
        ++K;
      unsigned At = K < Here.size() ? Here[K] : First[K];
      return "part of this step is inside the preprocessor conditional " + Describe(At) +
             " and part outside it" + Consequence;
    }
  }
  return std::nullopt;
}

/// What the feasibility stage decided: the blockers in the order the planners found them, the
/// descriptor, and what planMigrations reads of a step besides its edits.
struct Feasibility {
  std::vector<Blocker> Blockers;
  StepDescriptor Desc;
  PreprocessorFacts Preprocessor;
  std::vector<const ValueDecl *> ScalerHolders;
  std::vector<const VarDecl *> ScalerSiblings;
  std::vector<std::pair<unsigned, std::string>> LoopConversions;

  /// A planner's blockers join the step's, in order; its slice is returned.
  template <class Slice> Slice take(ConcernPlan<Slice> P) {
    std::move(P.Blockers.begin(), P.Blockers.end(), std::back_inserter(Blockers));
    return std::move(P.Plan);
  }
};

/// The forward region: its slice into the descriptor, its facts (accumulation, extent) on.
void planRegionInto(const StepContext &C, StepFacts &Facts, FunctionPlanning &Shared, Feasibility &R) {
  Facts.Refused = !R.Blockers.empty();
  RegionPlan Region = R.take(planRegion(C, Facts, Shared, *C.T.Backwards.front()));
  Facts.Accumulation = Region.Accumulation;
  Facts.Region = Region.Extent;
  R.Desc.Accumulation = Region.Accumulation;
  R.Desc.Callee = std::move(Region.Callee);
  R.Desc.Region = std::move(Region.Region);
  R.Desc.Lambda = std::move(Region.Lambda);
  R.LoopConversions = std::move(Region.LoopConversions);
}

void planScalerTypeInto(const StepContext &C, const StepFacts &Facts, Feasibility &R) {
  ScalerTypePlan Type = R.take(planScalerType(C, Facts));
  R.Desc.ScalerType = std::move(Type.Edits);
  R.ScalerHolders = std::move(Type.Holders);
  R.ScalerSiblings = std::move(Type.Siblings);
}

/// The concerns of a step in one function, in the order the edit writers write them (so the first
/// blocker is the one the planner has always reported); a refused concern does not stop the next
/// one's checks, so a step reports all its reasons.
void planConcerns(const StepContext &C, StepFacts &Facts, FunctionPlanning &Shared, Feasibility &R) {
  const TrainingStep &T = C.T;
  R.take(ConcernPlan<bool>{true, meaningBlockers(C.Ctx, C.Rules, C.FA, T)});
  planRegionInto(C, Facts, Shared, R);
  R.Desc.Calls = R.take(T.Unscaled ? planOptimizerSteps(C, Facts, T.Steps) : planScalerCalls(C, Facts));
  if (T.mixed()) {
    R.Desc.PlainSteps = R.take(planOptimizerSteps(C, Facts, T.Plain.Steps));
    R.Desc.MixedBackwards = R.take(planMixedBackwards(C, Facts));
  }
  R.Desc.Clips = R.take(planClips(C, Facts, Shared.UsedNames));
  R.Desc.GradAccesses = R.take(planGradAccesses(C, Facts, Shared.UsedNames));
  R.Desc.ZeroGrads = R.take(planZeroGrads(C, Facts));
  if (!T.Unscaled)
    planScalerTypeInto(C, Facts, R);
  R.Desc.Include = planInclude(C);
}

/// The concerns of one half of a step split over two methods: the scaling half's region and the
/// member holding the grads, the stepping half's scaler calls.
void planSplitConcerns(const StepContext &C, StepFacts &Facts, FunctionPlanning &Shared, Feasibility &R) {
  bool Scaling = Facts.Split->ScalingHalf == &C.T;
  if (Scaling)
    planRegionInto(C, Facts, Shared, R);
  else
    R.Desc.Calls = R.take(planScalerCalls(C, Facts));
  R.Desc.Clips = R.take(planClips(C, Facts, Shared.UsedNames));
  R.Desc.GradAccesses = R.take(planGradAccesses(C, Facts, Shared.UsedNames));
  R.Desc.ZeroGrads = R.take(planZeroGrads(C, Facts));
  planScalerTypeInto(C, Facts, R);
  if (!Scaling)
    return;
  R.Desc.Include = planInclude(C);
  R.Desc.SplitMember = R.take(planSplitMember(C, Facts));
}

/// The feasibility stage: the preprocessor, the step's shape (or a split half's), then its
/// concerns; every blocker is found here, before any edit text is written.
Feasibility decide(const StepContext &C, FunctionPlanning &Shared) {
  Feasibility R;
  // A template (or generic lambda) nothing here instantiates: what its unresolved calls do is not
  // known, so neither is what the step holds; that is the one reason given (any other would rest
  // on a guess).
  if (unresolvedAt(C.SM, C.FA, C.T.Begin)) {
    SourceLocation At = C.T.Scope ? C.T.Scope->ReportLoc : C.stepLoc();
    R.Blockers.push_back({At, uninstantiatedReason(C.Ctx, C.FA, "this step", C.T.Begin)});
    return R;
  }
  StepFacts Facts;
  Facts.Preprocessor = R.take(planPreprocessor(C));
  R.Preprocessor = Facts.Preprocessor;
  std::optional<SplitStep> Split = findSplitStep(C.TU, C.FA, C.T);
  ConcernPlan<StepShape> Shape = Split ? planSplitShape(C, *Split, Shared.UsedNames)
                                       : planStepShape(C, !R.Blockers.empty(), Shared.UsedNames);
  bool ShapeRefused = !Shape.Blockers.empty();
  static_cast<StepShape &>(Facts) = R.take(std::move(Shape));
  // A split step's grads are a member that accumulates (from the moment it has a name).
  if (Split && !Facts.GradsName.empty())
    Facts.Accumulation.On = true;
  R.Desc.Accumulation = Facts.Accumulation;
  if (!ShapeRefused) {
    if (Split)
      planSplitConcerns(C, Facts, Shared, R);
    else
      planConcerns(C, Facts, Shared, R);
  }
  static_cast<StepShape &>(R.Desc) = Facts;
  return R;
}

} // namespace

MigrationPlan planStep(ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
                       const TrainingStep &T, const PlannerOptions &Opts, FunctionPlanning &Shared,
                       const TargetApi &Tgt, const TranslationUnitAnalysis &TU) {
  const StepContext C(Ctx, Rules, FA, T, Opts, Tgt, TU);
  Feasibility R = decide(C, Shared);
  const StepDescriptor &Desc = R.Desc;
  MigrationPlan P;
  P.Step = &T;
  P.Function = &FA;
  P.Accumulates = Desc.Accumulation.On;
  P.CalleeFunction = Desc.CalleeFA;
  P.CalleeScope = Desc.CalleeScope;
  P.Blockers = std::move(R.Blockers);
  P.ScalerHolders = std::move(R.ScalerHolders);
  P.ScalerSiblings = std::move(R.ScalerSiblings);
  P.LoopConversions = std::move(R.LoopConversions);
  if (Desc.Split)
    P.SplitOther = Desc.Split->ScalingHalf == &T ? Desc.Split->SteppingHalf : Desc.Split->ScalingHalf;
  if (!P.Blockers.empty())
    return P;
  std::vector<Edit> Edits;
  std::map<unsigned, std::string> Insertions;
  std::vector<tooling::Replacement> OtherFileEdits;
  EditSink Out(Edits, Insertions, OtherFileEdits);
  StepEditWriter(Desc, Tgt, Out).write();
  for (const auto &[At, Text] : Insertions)
    Edits.push_back({At, 0, Text});
  // After emission, two checks over the edits as a whole: whether they would split a
  // preprocessor conditional (which needs the edits' text: a directive inside a replaced range
  // must be carried over by the replacement), and whether they collide (EditMerge, the one rule
  // for conflicts). Both read the emitted edits; neither is a concern's decision.
  if (std::optional<std::string> Why = splitsConditional(C, R.Preprocessor, Edits)) {
    P.Blockers.push_back({C.stepLoc(), *Why});
    return P;
  }
  std::vector<tooling::Replacement> Unit;
  for (const Edit &E : Edits)
    Unit.emplace_back(C.FilePath, E.Offset, E.Length, E.Text);
  Unit.insert(Unit.end(), OtherFileEdits.begin(), OtherFileEdits.end());
  if (std::optional<EditOverlap> O = mergeUnit(Unit, P.Edits))
    P.Blockers.push_back({C.stepLoc(), "the rewrite's own edits collide (" + overlapText(*O) +
                                           "); migrate this step by hand"});
  return P;
}

StepAssessment assessStep(ASTContext &Ctx, const RuleSet &Rules, const TranslationUnitAnalysis &TU,
                          const FunctionAnalysis &FA, const TrainingStep &T, const PlannerOptions &Opts) {
  FunctionPlanning Shared{namesIn(FA.Function), {}};
  const TargetApi Tgt = spelledTarget(Ctx, Rules.Target, FA.Function);
  const StepContext C(Ctx, Rules, FA, T, Opts, Tgt, TU);
  Feasibility R = decide(C, Shared);
  return {std::move(R.Blockers), std::move(R.Desc)};
}

} // namespace ampmigrate
