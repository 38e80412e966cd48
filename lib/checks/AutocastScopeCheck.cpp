// amp-autocast-scope: every autocast scope (call pair, RAII guard, macro pair, lone enable).
#include "ampmigrate/Engine.h"
#include "ampmigrate/SourceText.h"
#include "ampmigrate/StepFinder.h"

using namespace clang;
namespace ampmigrate {

static std::string scopeMessage(const AutocastScope &S, const RuleSet &Rules) {
  std::string Target = Rules.Target.Convert;
  if (S.Shape == AutocastScope::Kind::Guard) {
    std::string Cls = S.GuardVar->getType().getUnqualifiedType().getAsString();
    if (S.DisablesAutocast)
      return "guard '" + Cls + "' disables autocast for a nested region; under " + Target +
             " the region's precision follows the converted model";
    return "autocast scope opened by guard '" + Cls + "'; convert the model once with " + Target +
           " instead";
  }
  std::string Fn = S.Enable ? qualifiedName(S.Enable->Call->getDirectCallee()) : "";
  if (S.Shape == AutocastScope::Kind::MacroPair)
    return "autocast scope opened by a macro (expands to '" + Fn + "'); convert the model once with " +
           Target + " instead";
  if (S.DisablesAutocast)
    return "'" + Fn + "' disables autocast for a nested region";
  return "autocast scope enabled with '" + Fn + "'; convert the model once with " + Target +
         " instead";
}

static std::string inferenceMessage(const AutocastScope &S, const CheckInput &In) {
  std::string Opened;
  if (S.Shape == AutocastScope::Kind::Guard)
    Opened = "by guard '" + S.GuardVar->getType().getUnqualifiedType().getAsString() + "' ";
  else if (S.Enable)
    Opened = "with '" + qualifiedName(S.Enable->Call->getDirectCallee()) + "' ";
  std::string Why = "no backward() runs in this function, in any function of this file that "
                    "calls it, or on what it returns";
  if (S.NoGradGuard && !In.Function.InferenceOnly)
    Why = "'" + S.NoGradGuard->getType().getUnqualifiedType().getAsString() + " " +
          S.NoGradGuard->getName().str() + "' before it turns gradient recording off and nothing "
          "computed under it is differentiated";
  return "autocast scope opened " + Opened + "in inference code: " + Why +
         ", so there is no training step to migrate; keep the scope for inference, or convert the "
         "model once with " + In.Rules.Target.Convert + " where it is created";
}

/// Whether the function clears autocast's cast cache (or switches it) anywhere.
static bool handlesCastCache(const FunctionAnalysis &FA) {
  return llvm::any_of(FA.AutocastCalls,
                      [](const AutocastCall &C) { return C.Rule->Role == AutocastRole::Cache; });
}

void checkAutocastScope(const CheckInput &In, FindingSink &Out) {
  for (const AutocastScope &S : In.Function.Scopes) {
    // A region that turns autocast off is reported only nested in a region of this function that
    // turns it on (where the migration changes what it guards). Alone, as it stays in migrated
    // code, it is not a training scope.
    if (S.DisablesAutocast &&
        !llvm::any_of(In.Function.Scopes, [&](const AutocastScope &O) {
          return !O.DisablesAutocast && O.Begin <= S.Begin && S.Begin <= O.End;
        }))
      continue;
    if (isInferenceScope(In, S)) {
      Out.report("amp-autocast-inference", S.ReportLoc,
                 inferenceMessage(S, In));
      continue;
    }
    Finding *F = Out.report("amp-autocast-scope", S.ReportLoc, scopeMessage(S, In.Rules));
    const TrainingStep *Unscaled = nullptr, *Mixed = nullptr;
    for (const TrainingStep &T : In.Function.Steps)
      if (T.Scope == &S) {
        markStep(F, In, &T);
        if (T.Unscaled)
          Unscaled = &T;
        if (T.mixed())
          Mixed = &T;
      }
    // The scope of a step in another function that calls this one for its loss.
    for (const MigrationPlan *P : In.CalleePlans)
      if (P->CalleeScope == &S && F) {
        F->StepId = stepIdOf(In.Ctx, *P->Function, *P->Step);
        F->Fixable = P->ok();
        if (P->Step->Unscaled && !Unscaled)
          Unscaled = P->Step;
      }
    // libtorch keeps the casts autocast makes of leaf tensors (the weights) until clear_cache();
    // the migrated model casts afresh in each forward.
    const std::string Why =
        "libtorch keeps the casts made of the weights in "
        "this scope, and later scopes reuse them after the optimizer has changed the weights; "
        "the migrated model casts afresh in each forward, so its losses can differ slightly from "
        "this program's (they equal those of this program with clear_cache() after the scope)";
    for (const AutocastScope::Hole &H : S.Holes)
      Out.note(F, H.Off->Call->getBeginLoc(),
               "a hole in this scope: autocast is turned off here, inside the loop, and on again at " +
                   lineText(In.Ctx.getSourceManager(), H.On->Call->getBeginLoc()));
    if (F && S.Disable) {
      std::string Ends = "the scope ends here";
      if (!S.DisablesAutocast && !handlesCastCache(In.Function))
        Ends += ", without at::autocast::clear_cache(): " + Why;
      Out.note(F, S.Disable->MacroUse.isValid() ? S.Disable->MacroUse : S.Disable->Call->getBeginLoc(),
               Ends);
    }
    // A guard's scope ends with its block (or its end call), and its destructor decides: said
    // only when the destructor is in sight and never clears the cache.
    if (F && S.Shape == AutocastScope::Kind::Guard && !S.DisablesAutocast &&
        !handlesCastCache(In.Function) &&
        guardClearsCache(S.GuardVar->getType()->getAsCXXRecordDecl(), In.Rules) ==
            std::optional<bool>(false)) {
      SourceLocation At = !S.GuardEnds.empty() ? S.GuardEnds.front()->getBeginLoc() : S.GuardBlockEnd;
      if (At.isValid())
        Out.note(F, At, "the scope of guard '" + S.GuardVar->getName().str() + "' ends here, and '" +
                            S.GuardVar->getType().getUnqualifiedType().getAsString() +
                            "' does not call at::autocast::clear_cache() when it ends: " + Why);
    }
    if (F && Unscaled)
      Out.note(F, Unscaled->Backwards.front()->Backward->getBeginLoc(),
               "the loss computed in this scope is backpropagated here, with no loss scaler; the "
               "step becomes " + In.Rules.Target.ValueAndGrad + " and " + In.Rules.Target.Step +
                   "(optimizer, grads)");
    if (F && Mixed)
      Out.note(F, Mixed->Plain.Backwards.front()->Backward->getBeginLoc(),
               "the plain path (no scaler) backpropagates the loss computed in this scope here; "
               "it takes the grads of " + In.Rules.Target.ValueAndGrad + " too" +
                   (Mixed->Plain.Steps.empty()
                        ? std::string()
                        : ", and its step becomes " + In.Rules.Target.Step + "(optimizer, grads)"));
  }
}

} // namespace ampmigrate
