// The step's zero_grad() calls: removed, or clearing the summed grads.
#include "StepEditWriter.h"
#include "StepConcerns.h"

using namespace clang;

namespace ampmigrate {

namespace {

/// The step's zero_grad()s outside the region: removed, or clearing the summed grads (Out).
class ZeroGradPlanner : public StepConcern {
public:
  ZeroGradPlanner(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers,
                  std::vector<ZeroGradEdit> &Out)
      : StepConcern(C, F, Blockers), Out(Out) {}

  void checkZeroGrads();

private:
  std::vector<ZeroGradEdit> &Out;
  /// A zero_grad() statement of the step goes (its line when alone on it); kept inside a macro.
  void removeZeroGrad(const ZeroGradCall *Z);
  /// A step() of the step after `Z`, in the gradient window, whose grads `Z` clears.
  const ScalerCall *clearedStepAfter(const ZeroGradCall &Z) const;
};

} // namespace

ConcernPlan<std::vector<ZeroGradEdit>> planZeroGrads(const StepContext &C, const StepFacts &F) {
  ConcernPlan<std::vector<ZeroGradEdit>> P;
  ZeroGradPlanner(C, F, P.Blockers, P.Plan).checkZeroGrads();
  return P;
}

void ZeroGradPlanner::checkZeroGrads() {
  for (const ZeroGradCall *Z : F.stepZeroGrads(T)) {
    unsigned O = C.off(Z->Call->getBeginLoc());
    if (O >= F.Region.Begin && O < F.Region.End)
      continue; // handled with the region
    bool OfStep = llvm::any_of(T.Steps, [&](const ScalerCall *S) { return S->Optimizer == Z->Owner; }) ||
                  llvm::any_of(T.Forwards, [&](const ForwardCall *Fwd) { return Fwd->Model == Z->Owner; }) ||
                  F.Split.has_value();
    if (!OfStep || !Z->Statement)
      continue; // harmless to keep: the explicit grads never read .grad
    // Between the backward and a step() it clears for (a model's: any step; an optimizer's: its
    // own), the original steps on what zero_grad() leaves (zeros, or no grads at all), which the
    // explicit grads would not.
    if (const ScalerCall *Later = clearedStepAfter(*Z)) {
      block(Z->Call->getBeginLoc(),
            "`" + C.text(Z->Statement->getSourceRange()) + "` clears the gradients between the "
            "backward and `" + C.text(Later->Call->getSourceRange()) + "` (" + C.where(Later->Call->getBeginLoc()) +
            "), which then steps on what zero_grad() leaves; the explicit grads of " + Tgt.ValueAndGrad +
            " would still hold the backward's gradients: migrate this step by hand");
      continue;
    }
    if (F.Accumulation.On && O > F.Accumulation.GradsDeclAt) {
      // It ended an accumulation: it clears the summed grads now. With several optimizers the
      // list holds all their grads: their zero_grad() calls must stand together (one clear).
      if (!F.PerOptimizer.empty()) {
        const auto *Block = C.parentCompound(Z->Statement);
        std::vector<const ZeroGradCall *> Run;
        bool Started = false;
        if (Block)
          for (const Stmt *Child : Block->body()) {
            const ZeroGradCall *Here = nullptr;
            for (const ZeroGradCall *K : T.ZeroGrads)
              if (K->Statement == Child)
                Here = K;
            if (Here) {
              Run.push_back(Here);
              Started = Started || Here == Z;
            } else if (Started) {
              break;
            } else {
              Run.clear();
            }
          }
        bool Covers = llvm::all_of(F.PerOptimizer, [&](const auto &PO) {
          return llvm::any_of(Run, [&](const ZeroGradCall *K) { return K->Owner == PO.first; });
        }) || llvm::any_of(Run, [&](const ZeroGradCall *K) {
          return llvm::any_of(T.Forwards, [&](const ForwardCall *F) { return F->Model == K->Owner; });
        });
        if (!Covers) {
          block(Z->Call->getBeginLoc(), "with several optimizers after a gradient accumulation, "
                                        "zero_grad() of some optimizers only: the summed grads of "
                                        "the others would be cleared too");
          continue;
        }
        if (Run.front() != Z) { // the run's first statement clears; the others go
          removeZeroGrad(Z);
          continue;
        }
      }
      CharSourceRange ZR = C.stmtRange(Z->Statement);
      if (ZR.isInvalid() || Z->Statement->getBeginLoc().isMacroID() || SM.getFileID(ZR.getBegin()) != File) {
        block(Z->Call->getBeginLoc(), "zero_grad() is inside a macro");
        continue;
      }
      unsigned ZB = SM.getFileOffset(ZR.getBegin()), ZE = SM.getFileOffset(ZR.getEnd());
      Out.push_back({true, ZB, ZE});
      continue;
    }
    removeZeroGrad(Z);
  }
}

const ScalerCall *ZeroGradPlanner::clearedStepAfter(const ZeroGradCall &Z) const {
  unsigned O = C.off(Z.Call->getBeginLoc());
  if (O <= T.GradientBegin || O >= T.GradientEnd)
    return nullptr;
  bool OfModel = llvm::any_of(T.Forwards, [&](const ForwardCall *Fwd) { return Fwd->Model == Z.Owner; });
  for (const auto *List : {&T.Steps, &T.Plain.Steps})
    for (const ScalerCall *S : *List)
      if (C.off(S->Call->getBeginLoc()) > O && (OfModel || S->Optimizer == Z.Owner))
        return S;
  return nullptr;
}

void ZeroGradPlanner::removeZeroGrad(const ZeroGradCall *Z) {
  Edit E;
  if (C.removal(Z->Statement, E))
    Out.push_back({false, E.Offset, E.Offset + E.Length});
}

void StepEditWriter::writeZeroGrads() const {
  for (const ZeroGradEdit &Z : D.ZeroGrads) {
    if (Z.Clears)
      Out.replace(Z.Begin, Z.End - Z.Begin, D.GradsName + ".clear();");
    else
      Out.remove(Z.Begin, Z.End);
  }
}

} // namespace ampmigrate
