// A step split over two methods of one class: the grads travel in a new member.
#include "Naming.h"
#include "StepShape.h"

#include <set>

using namespace clang;

namespace ampmigrate {

namespace {

// The grads travel as a new member of the class. `.grad` accumulated until a zero_grad(); the
// member does the same: each backward's grads are added to it (amp::accumulate_grads) and each
// zero_grad() of the optimizer or the model, in either method, clears it. Exact when no other
// method of the class clears or reads `.grad`, which is checked.
class SplitPlanner : public ShapeConcern {
public:
  using ShapeConcern::ShapeConcern;

  /// The checks of one half, and its shape; false (with a blocker) when it is refused.
  bool plan();

private:
  /// Why the scaling half has no forward region: where its loss comes from; set ByHand when
  /// moving the halves together would not help (the forward is in another function).
  std::string forwardElsewhere(bool &ByHand, const TrainingStep &Scaling, const FunctionAnalysis &In) const;

  /// A statement of another method of the class that calls zero_grad() or reads or writes .grad
  /// (described), or "".
  std::string otherGradUse(const clang::CXXRecordDecl *Class, const SplitStep &S,
                           const std::set<const clang::CallExpr *> &Clears) const;
};

} // namespace

ConcernPlan<StepShape> planSplitShape(const StepContext &C, const SplitStep &S, llvm::StringSet<> &Names) {
  StepFacts Building;
  Building.Split = S;
  return planShapeWith<SplitPlanner>(C, std::move(Building), Names);
}

bool SplitPlanner::plan() {
  const SplitStep &S = *Out.Split;
  bool Scaling = S.ScalingHalf == &T;
  SourceLocation Here = Scaling ? T.Backwards.front()->Backward->getBeginLoc()
                                : T.Steps.front()->Call->getBeginLoc();
  auto Refuse = [&](const std::string &WhyNot) {
    block(Here, splitStepReason(S, Scaling, SM, WhyNot));
    return false;
  };
  auto RefuseByHand = [&](const std::string &WhyNot) {
    block(Here, splitStepReason(S, Scaling, SM, WhyNot, "migrate this step by hand"));
    return false;
  };
  const auto *Method = cast<CXXMethodDecl>(FA.Function);
  const CXXRecordDecl *Class = Method->getParent()->getDefinition();
  const TrainingStep &Stepping = *S.SteppingHalf;
  const TrainingStep &ScalingT = *S.ScalingHalf;
  // Where the scaling half's forward is, when not in its method: said first, as it decides.
  if (!ScalingT.Scope) {
    bool ByHand = false;
    std::string Why = forwardElsewhere(ByHand, ScalingT, *S.Scaling);
    return ByHand ? RefuseByHand(Why) : Refuse(Why);
  }
  if (!Class || !S.Caller) {
    if (!S.Chained)
      return Refuse("no method of the class in this file calls both");
    return Refuse("'" + S.ChainedFrom->Function->getNameAsString() + "' calls '" +
                  S.Chained->getDirectCallee()->getNameAsString() + "' itself (" +
                  lineText(SM, S.Chained->getBeginLoc()) +
                  "), and the rewrite carries a split step only when a third method calls both");
  }
  if (Stepping.Steps.size() != 1 || !ScalingT.Unscales.empty() || !ScalingT.Updates.empty() ||
      ScalingT.mixed() || Stepping.mixed() || ScalingT.Backwards.size() != 1)
    return Refuse("a split step with several optimizers, several backwards or a plain path beside the scaled one is not rewritten yet");
  const ScalerCall *Step = Stepping.Steps.front();
  const auto *OptField = dyn_cast_or_null<FieldDecl>(Step->Optimizer.Decl);
  const auto *ScalerField = dyn_cast_or_null<FieldDecl>(T.Scaler.Decl);
  if (!OptField || !ScalerField || OptField->getParent() != Class || ScalerField->getParent() != Class)
    return Refuse("the optimizer or the scaler is not a member of the class");
  // The model(s) the scaling half runs, and the optimizer: their zero_grad()s clear the member.
  llvm::SmallVector<ObjectRef, 2> Owners{Step->Optimizer};
  for (const ForwardCall *Fwd : ScalingT.Forwards)
    Owners.push_back(Fwd->Model);
  for (const ZeroGradCall &Z : FA.ZeroGrads)
    if (llvm::is_contained(Owners, Z.Owner))
      Out.SplitZeroGrads.push_back(&Z);
  // The caller's zero_grad() of them (`opt_.zero_grad(); forward_backward(); optimizer_step();`)
  // clears the member too; the scaling half's fix carries that edit.
  std::set<const CallExpr *> CallerClears;
  for (const FunctionAnalysis &Other : TU.Functions)
    if (Other.Function->getCanonicalDecl() == S.Caller->getCanonicalDecl())
      for (const ZeroGradCall &Z : Other.ZeroGrads)
        if (llvm::is_contained(Owners, Z.Owner) && Z.Statement) {
          CallerClears.insert(Z.Call);
          if (Scaling)
            Out.SplitZeroGrads.push_back(&Z);
        }
  // Nothing else in the class may clear or read .grad: the member would not see it.
  if (const std::string Other = otherGradUse(Class, S, CallerClears); !Other.empty())
    return Refuse(Other);
  // The member accumulates (StepFacts::Accumulation is on for a split step: planStep).
  Out.GradsName = freshMemberName(Class);
  if (Tgt.Accumulate.empty())
    return Refuse("the rules name no target.accumulate to sum them");
  if (Scaling) {
    Out.GradFnName = freshName(Names, "grad_fn");
    Out.OptParams = C.optimizerParams(Step);
    Out.AllBackwards.assign(T.Backwards.begin(), T.Backwards.end());
  }
  return true;
}

std::string SplitPlanner::forwardElsewhere(bool &ByHand, const TrainingStep &Scaling, const FunctionAnalysis &In) const {
  std::string Default = "no autocast scope precedes the scaled backward in its method";
  const ImplicitBackward &B = *Scaling.Backwards.front();
  const VarDecl *V = B.ScaleStmt ? nullptr : B.LossVar;
  if (!V || !V->isLocalVarDecl() || !V->getInit())
    return Default;
  const auto *Call = dyn_cast<CallExpr>(strip(V->getInit()));
  const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr;
  if (!Callee)
    return Default;
  std::string Name = "'" + Callee->getNameAsString() + "' (" + lineText(SM, Call->getBeginLoc()) + ")";
  ByHand = true;
  const FunctionDecl *Def = nullptr;
  if (!Callee->hasBody(Def) || !Def->getBody())
    return "its loss comes from " + Name + ", whose body is not in this file: the forward to "
           "hand to " + Tgt.ValueAndGrad + " is in another file";
  bool HoldsScope = llvm::any_of(TU.Functions, [&](const FunctionAnalysis &Other) {
    return Other.Function->getCanonicalDecl() == Callee->getCanonicalDecl() &&
           llvm::any_of(Other.Scopes, [](const AutocastScope &S) { return !S.DisablesAutocast; });
  });
  ByHand = HoldsScope;
  if (HoldsScope)
    return "its loss comes from " + Name + ", which holds the autocast scope, and the rewrite "
           "of a split step needs the scope in '" + In.Function->getNameAsString() + "'";
  return Default;
}

ConcernPlan<PlannedEdits> planSplitMember(const StepContext &C, const StepFacts &F) {
  ConcernPlan<PlannedEdits> P;
  const SourceManager &SM = C.SM;
  const SplitStep &S = *F.Split;
  SourceLocation Here = C.T.Backwards.front()->Backward->getBeginLoc();
  auto Refuse = [&](const std::string &WhyNot) {
    P.Blockers.push_back({Here, splitStepReason(S, /*AtScaling=*/true, SM, WhyNot)});
  };
  const auto *ScalerField = cast<FieldDecl>(C.T.Scaler.Decl);
  // The member, after the scaler's declaration.
  SourceLocation FieldEnd = SM.getExpansionLoc(ScalerField->getEndLoc());
  unsigned FE = SM.getFileOffset(FieldEnd);
  StringRef FBuf = SM.getBufferData(SM.getFileID(FieldEnd));
  size_t NL = FBuf.find('\n', FE);
  if (NL == StringRef::npos || FieldEnd.isMacroID() || !C.whyNotEditable(FieldEnd).empty()) {
    Refuse("the class cannot be given the member: " +
           (C.whyNotEditable(FieldEnd).empty() ? std::string("its scaler member is declared in a macro")
                                               : C.whyNotEditable(FieldEnd)));
    return P;
  }
  unsigned LS = FE;
  while (LS > 0 && FBuf[LS - 1] != '\n')
    --LS;
  std::string Ind;
  for (unsigned I = LS; I < FBuf.size() && (FBuf[I] == ' ' || FBuf[I] == '\t'); ++I)
    Ind += FBuf[I];
  std::string Member = Ind + "std::vector<torch::Tensor> " + F.GradsName + "; // the grads from " +
                       S.Scaling->Function->getNameAsString() + "() to " +
                       S.Stepping->Function->getNameAsString() + "()\n";
  SourceLocation At = SM.getLocForStartOfFile(SM.getFileID(FieldEnd)).getLocWithOffset(NL + 1);
  if (SM.getFileID(FieldEnd) == C.File)
    P.Plan.insertJoined(NL + 1, Member);
  else
    P.Plan.Elsewhere.emplace_back(SM, CharSourceRange::getCharRange(At, At), Member, C.LO);
  return P;
}

std::string SplitPlanner::otherGradUse(const CXXRecordDecl *Class, const SplitStep &S,
                                      const std::set<const CallExpr *> &Clears) const {
  class Uses : public AnalysedBodyVisitor {
  public:
    explicit Uses(const std::set<const CallExpr *> &Clears) : Clears(Clears) {}
    const std::set<const CallExpr *> &Clears;
    const CallExpr *Found = nullptr;
    bool visitStmt(Stmt *S) override {
      const auto *CE = dyn_cast<CallExpr>(S);
      if (!CE || Clears.count(CE))
        return true;
      const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
      const CXXMethodDecl *M = MC ? MC->getMethodDecl() : nullptr;
      if (!Found && ((M && M->getIdentifier() && M->getName() == "zero_grad") || isGradAccessor(CE)))
        Found = CE;
      return true;
    }
  };
  for (const CXXMethodDecl *M : Class->methods()) {
    const FunctionDecl *Def = nullptr;
    if (!M->hasBody(Def) || !Def->getBody())
      continue;
    if (Def->getCanonicalDecl() == S.Scaling->Function->getCanonicalDecl() ||
        Def->getCanonicalDecl() == S.Stepping->Function->getCanonicalDecl())
      continue;
    Uses U(Clears);
    U.walk(Def->getBody());
    if (U.Found)
      return "`" + firstLine(C.text(U.Found->getSourceRange())) + "` in '" + Def->getNameAsString() +
             "' (" + C.where(U.Found->getBeginLoc()) + ") clears or touches .grad outside the two "
             "methods, which the member would not follow";
  }
  return "";
}

} // namespace ampmigrate
