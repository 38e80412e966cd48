// Gradient accumulation: micro-step grads summed into a list that lives as long as .grad did.
#include "StepEditWriter.h"
#include "RegionPlanner.h"
#include "StepLambda.h"

using namespace clang;

namespace ampmigrate {

bool RegionPlanner::checkSplitAfterAccumulation() {
  const ScalerCall *First = nullptr;
  for (const auto *List : {&T.Unscales, &T.Steps})
    for (const ScalerCall *SC : *List)
      if (!First || C.off(SC->Call->getBeginLoc()) < C.off(First->Call->getBeginLoc()))
        First = SC;
  const Stmt *St = First ? First->Call : nullptr;
  while (St && PM.getParent(St) && !isa<CompoundStmt>(PM.getParent(St)))
    St = PM.getParent(St);
  const auto *Block = St ? dyn_cast_or_null<CompoundStmt>(PM.getParent(St)) : nullptr;
  bool AllInside = Block && llvm::all_of(T.Steps, [&](const ScalerCall *SC) { return C.within(SC->Call, Block); }) &&
                   llvm::all_of(T.Unscales, [&](const ScalerCall *SC) { return C.within(SC->Call, Block); });
  unsigned At = St ? C.off(St->getBeginLoc()) : 0;
  if (!AllInside || St->getBeginLoc().isMacroID() || !C.onlySpace(C.lineStart(At), At)) {
    block(T.Steps[1]->Call->getBeginLoc(), "several optimizers step after a gradient accumulation, "
                                            "not all in one block; not rewritten automatically");
    return false;
  }
  Plan.Accumulation.SplitAt = C.lineStart(At);
  Plan.Accumulation.SplitIndent = C.indentAt(At);
  return true;
}

bool RegionPlanner::checkAccumulation(const ImplicitBackward &B, const CompoundStmt *Block) {
  std::vector<const ScalerCall *> Calls;
  for (const auto *List : {&T.Unscales, &T.Steps, &T.Updates})
    Calls.insert(Calls.end(), List->begin(), List->end());
  auto HoldsAll = [&](const Stmt *X) {
    return llvm::all_of(Calls, [&](const ScalerCall *SC) { return C.within(SC->Call, X); });
  };
  // The innermost block holding the backward and every unscale_/step/update.
  const Stmt *CA = Block;
  while (CA && !HoldsAll(CA)) {
    CA = PM.getParent(CA);
    while (CA && !isa<CompoundStmt>(CA))
      CA = PM.getParent(CA);
  }
  if (!CA) {
    block(B.Backward->getBeginLoc(), C.backwardWords() + " and the " +
                                         (T.Unscaled ? "optimizer's" : "scaler's") +
                                         " step() are not in one block of this function");
    return false;
  }
  unsigned BackOff = C.off(B.Backward->getBeginLoc());
  for (const ScalerCall *SC : Calls)
    if (C.off(SC->Call->getBeginLoc()) < BackOff && C.within(SC->Call, CA) && CA != Block) {
      block(SC->Call->getBeginLoc(), canonicalMethod(SC->Kind) + "() comes before " +
                                         C.backwardWords() + " of its step");
      return false;
    }
  bool Nested = CA != Block;
  // Between that block and the backward only loops and plain blocks: a backward under a
  // condition would make the number of summed micro-steps differ from what .grad held.
  for (const Stmt *P = Block; Nested && P && P != CA; P = PM.getParent(P))
    if (!isa<CompoundStmt, ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P)) {
      block(B.Backward->getBeginLoc(),
            C.backwardWords() + " is in a nested block under a condition and " +
                canonicalMethod(T.Steps.front()->Kind) +
                "() is outside it; the grads of a varying number of micro-steps would be "
                "summed, not rewritten automatically");
      return false;
    }
  bool InLoop = false;
  for (const Stmt *P = PM.getParent(CA); P && !isa<LambdaExpr>(P); P = PM.getParent(P))
    if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
      InLoop = true;
  bool ConditionalStep = false;
  for (const ScalerCall *SC : T.Steps) {
    const Stmt *Child = C.childOf(SC->Call, cast<CompoundStmt>(CA));
    if (Child && isa<IfStmt, SwitchStmt, ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(Child))
      ConditionalStep = true;
  }
  // A step() under a condition with the backward on every call and no loop of this body around
  // them: .grad keeps the gradients of each call that skips step() for the next one, unless a
  // zero_grad() of the step on every call clears them.
  bool ClearedEveryCall = llvm::any_of(T.ZeroGrads, [&](const ZeroGradCall *Z) {
    return Z->Statement && PM.getParent(Z->Statement) == CA;
  });
  if (ConditionalStep && !Nested && !InLoop && !ClearedEveryCall) {
    block(T.Steps.front()->Call->getBeginLoc(),
          canonicalMethod(T.Steps.front()->Kind) + "() runs under a condition but the scaled "
          "backward on every call of this " + std::string(enclosingLambda(CA, PM) ? "lambda" : "function") +
          ", and no zero_grad() of the step runs on every call: .grad sums the gradients of the "
          "calls that skip it (a gradient accumulation across calls), which the explicit grads "
          "of one call cannot carry; clear the gradients on every call or migrate by hand");
    return false;
  }
  Plan.Accumulation.On = Nested || (InLoop && ConditionalStep);
  if (!Plan.Accumulation.On)
    return true;
  if (!F.PerOptimizer.empty() && !checkSplitAfterAccumulation())
    return false;
  if (Tgt.Accumulate.empty()) {
    block(B.Backward->getBeginLoc(), "gradient accumulation needs target.accumulate in the rules");
    return false;
  }
  // The list lives as long as `.grad` did: before the outermost loop around the step that the
  // optimizer's declaration precedes; without one, before the statement holding the backward.
  unsigned OptDecl = 0;
  if (const auto *OV = dyn_cast_or_null<VarDecl>(T.Steps.front()->Optimizer.Decl);
      OV && OV->isLocalVarDecl() && !isa<ParmVarDecl>(OV))
    OptDecl = C.off(OV->getLocation());
  const Stmt *Anchor = Conversion.outermostLoop(CA, OptDecl);
  if (!Anchor) {
    if (!Nested) {
      block(T.Steps.front()->Call->getBeginLoc(),
            "step() runs conditionally in a loop (gradient accumulation across iterations) but "
            "the optimizer is declared inside the loop; the summed grads have no place to live");
      return false;
    }
    Anchor = C.childOf(B.BackwardStmt, cast<CompoundStmt>(CA));
  }
  unsigned A = C.off(Anchor->getBeginLoc());
  if (Anchor->getBeginLoc().isMacroID() || !C.onlySpace(C.lineStart(A), A)) {
    block(Anchor->getBeginLoc(), "the loop of the accumulation does not start its line");
    return false;
  }
  Plan.Accumulation.GradsDeclAt = C.lineStart(A);
  Plan.Accumulation.GradsDecl = C.indentAt(A) + "std::vector<torch::Tensor> " + F.GradsName + ";\n";
  return true;
}

void StepEditWriter::writeAccumulationSplit() const {
  if (!D.Accumulation.SplitAt)
    return;
  std::string Names;
  for (const auto &[O, Name] : D.PerOptimizer)
    Names += (Names.empty() ? "" : ", ") + Name;
  Out.insertJoined(*D.Accumulation.SplitAt, D.Accumulation.SplitIndent + "auto [" + Names + "] = " +
                                                Tgt.SplitGrads + "(" + D.GradsName + ", " + D.OptimizerArgs + ");\n");
}

void StepEditWriter::writeAccumulatedGradsDecl() const {
  if (D.Accumulation.On && !D.Accumulation.GradsDecl.empty())
    Out.insertJoined(D.Accumulation.GradsDeclAt, D.Accumulation.GradsDecl);
}

} // namespace ampmigrate
