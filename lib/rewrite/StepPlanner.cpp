// The planner of one step: feasibility (the checks, which fill the descriptor or find blockers),
// then, for a feasible step, the emitters; their edits assembled into the MigrationPlan.
#include "StepPlanner.h"
#include "StepMeaning.h"
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

} // namespace

std::optional<std::string> StepPlanner::splitsConditional(const std::vector<Edit> &Edits) const {
  if (Edits.empty())
    return std::nullopt;
  std::vector<PPDirective> Ds = conditionalDirectives(SM, File, LO);
  // The conditionals that go whole with the scope (per-version spellings of its calls).
  llvm::erase_if(Ds, [&](const PPDirective &D) {
    return llvm::any_of(VersionGroups, [&](const Edit &G) {
      return D.Offset >= G.Offset && D.Offset < G.Offset + G.Length;
    });
  });
  if (Ds.empty())
    return std::nullopt;
  auto Describe = [&](unsigned At) {
    unsigned Line = SM.getLineNumber(File, At);
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
  if (std::optional<std::string> Why = splitsConditional(Edits)) {
    P.Blockers.push_back({stepLoc(), *Why});
    return P;
  }
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
    if (!versionBranches(R))
      block(R.getBegin(), "AMP code under an inactive preprocessor branch in this function; "
                          "migrate each configuration by hand or run once per configuration");
  flagConditionals();
  if ((Desc.Split = findSplitStep(TU, FA, T)))
    checkSplitHalf();
  else
    feasible();
  return Blockers.empty();
}

void StepPlanner::checkConcerns(const ImplicitBackward &B) {
  for (Blocker &Why : meaningBlockers(Ctx, Rules, FA, T))
    Blockers.push_back(std::move(Why));
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
