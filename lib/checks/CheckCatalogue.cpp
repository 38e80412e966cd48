// The catalogue of checks (ids, summaries) and the engine that runs them.
#include "ampmigrate/Checks.h"
#include "ampmigrate/Engine.h"
#include "ampmigrate/StepFinder.h"

#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/STLExtras.h"

using namespace clang;
namespace ampmigrate {

static const CheckInfo Catalogue[] = {
    {"amp-autocast-scope", "autocast scope in training code; the converted model applies mixed precision instead", true},
    {"amp-autocast-inference", "autocast scope in inference code (no backward() in the function or its callers in the file): nothing to migrate", false},
    {"amp-autocast-leak", "autocast enabled and never disabled on some path (braces do not end it)", false},
    {"amp-scaler-implicit-grad", "scaler.scale(loss).backward(): gradients flow implicitly into .grad", true},
    {"amp-scaler-unscale", "unscale_(optimizer) without explicit grads", true},
    {"amp-scaler-step", "step(optimizer) without explicit grads", true},
    {"amp-clip-grad-norm", "clipping the parameters' .grad inside a scaled step", true},
    {"amp-zero-grad", "zero_grad() that explicit gradients make redundant", true},
    {"amp-clip-before-unscale", "clipping still-scaled gradients (no unscale_ before it): an existing bug", false},
    {"amp-manual-migration", "AMP code the tool will not rewrite safely, with the reason", false},
};

llvm::ArrayRef<CheckInfo> allChecks() { return Catalogue; }

const CheckInfo *findCheck(llvm::StringRef Id) {
  for (const CheckInfo &C : Catalogue)
    if (C.Id == Id)
      return &C;
  return nullptr;
}

std::string checkDocPath(llvm::StringRef Id) { return ("docs/checks/" + Id + ".md").str(); }

SourcePos FindingSink::position(SourceLocation Loc) const {
  const SourceManager &SM = Ctx.getSourceManager();
  SourcePos P;
  SourceLocation L = SM.getFileLoc(Loc);
  if (L.isInvalid())
    return P;
  PresumedLoc PL = SM.getPresumedLoc(L, /*UseLineDirectives=*/false);
  if (auto FE = SM.getFileEntryRefForID(SM.getFileID(L)))
    P.File = FE->getName().str();
  P.Line = PL.isValid() ? PL.getLine() : 0;
  P.Column = PL.isValid() ? PL.getColumn() : 0;
  P.Offset = SM.getFileOffset(L);
  return P;
}

Finding *FindingSink::report(llvm::StringRef Check, SourceLocation Loc, std::string Message) {
  if (!Opts.CheckEnabled(Check))
    return nullptr;
  Finding F;
  F.Check = Check.str();
  F.Pos = position(Loc);
  F.Message = std::move(Message);
  F.Template = Template;
  F.Uninstantiated = TemplateUninstantiated;
  Findings.push_back(std::move(F));
  return &Findings.back();
}

void FindingSink::note(Finding *F, SourceLocation Loc, std::string Message) {
  if (F)
    F->Notes.push_back({position(Loc), std::move(Message)});
}

const TrainingStep *CheckInput::stepContaining(unsigned Offset) const {
  for (const TrainingStep &S : Function.Steps)
    if (S.Begin <= Offset)
      return &S; // steps are sorted; the last one starting before wins
  return nullptr;
}

std::string stepIdOf(ASTContext &Ctx, const FunctionAnalysis &FA, const TrainingStep &S) {
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation FnLoc = SM.getExpansionLoc(FA.Function->getBeginLoc());
  auto FE = SM.getFileEntryRefForID(SM.getFileID(FnLoc));
  return (FE ? FE->getName().str() : std::string()) + ":" + std::to_string(S.Begin);
}

/// "file:offset" of the body of the template definition `FA` analyses (through an instantiation
/// or in the definition itself), the same in every translation unit; empty for other functions.
static std::string templateIdOf(ASTContext &Ctx, const FunctionAnalysis &FA) {
  const FunctionDecl *Def = FA.Pattern ? FA.Pattern : FA.Function->getTemplateInstantiationPattern();
  if (!Def && FA.Function->isDependentContext())
    Def = FA.Function;
  if (!Def || !Def->getBody())
    return "";
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation At = SM.getExpansionLoc(Def->getBody()->getBeginLoc());
  auto FE = SM.getFileEntryRefForID(SM.getFileID(At));
  return (FE ? FE->getName().str() : std::string()) + ":" + std::to_string(SM.getFileOffset(At));
}

bool isInferenceScope(const CheckInput &In, const AutocastScope &S) {
  // In code whose calls are unresolved (a template never instantiated, a generic lambda never
  // called) whether the scope trains is not known (amp-manual-migration says why).
  return (In.Function.InferenceOnly || S.NoGradGuard) && !S.DisablesAutocast &&
         S.Shape != AutocastScope::Kind::Unclosed && In.CalleePlans.empty() &&
         !unresolvedAt(In.Ctx.getSourceManager(), In.Function, S.Begin);
}

void markStep(Finding *F, const CheckInput &In, const TrainingStep *Step) {
  if (!F || !Step)
    return;
  F->StepId = stepIdOf(In.Ctx, In.Function, *Step);
  const MigrationPlan *P = In.planOf(Step);
  // The stepping half of a step split over two methods is fixed with the scaling half.
  if (P && P->JoinedInto) {
    P = P->JoinedInto;
    F->StepId = stepIdOf(In.Ctx, *P->Function, *P->Step);
  }
  F->Fixable = P && P->ok();
}

EngineResult runChecks(ASTContext &Ctx, const RuleSet &Rules,
                       std::function<bool(SourceLocation)> InScope,
                       const std::vector<SourceRange> &Inactive, const EngineOptions &Opts) {
  std::function<bool(SourceLocation)> Editable = InScope;
  StepFinder SF(Ctx, Rules, std::move(InScope), Inactive);
  CalleeFacts Callees(Opts.RunSummaries);
  SF.useCallees(&Callees);
  TranslationUnitAnalysis TU = SF.run();
  TU.Editable = std::move(Editable);
  std::vector<MigrationPlan> Plans = planMigrations(Ctx, Rules, TU, Opts.Planner);
  FindingSink Sink(Ctx, Opts);
  for (const FunctionAnalysis &FA : TU.Functions) {
    CheckInput In{Ctx, Rules, FA, {}, {}, &Callees};
    Sink.setTemplate(templateIdOf(Ctx, FA),
                     !FA.UnresolvedCalls.empty() && FA.Function->isDependentContext());
    for (const MigrationPlan &P : Plans) {
      if (P.Function == &FA)
        In.Plans.push_back(&P);
      if (P.CalleeFunction == &FA)
        In.CalleePlans.push_back(&P);
    }
    checkAutocastScope(In, Sink); // and amp-autocast-inference
    checkAutocastLeak(In, Sink);
    checkScalerImplicitGrad(In, Sink);
    checkScalerUnscale(In, Sink);
    checkScalerStep(In, Sink);
    checkClipGradNorm(In, Sink);
    checkZeroGrad(In, Sink);
    checkClipBeforeUnscale(In, Sink);
    checkManualMigration(In, Sink);
  }
  EngineResult R;
  R.Findings = Sink.take();
  for (const MigrationPlan &P : Plans)
    if (P.ok())
      R.Fixes.push_back({stepIdOf(Ctx, *P.Function, *P.Step), P.Edits});
  R.UnknownCallees = Callees.unknown();
  R.Summaries = summariseMainFile(Ctx, Rules);
  return R;
}

} // namespace ampmigrate
