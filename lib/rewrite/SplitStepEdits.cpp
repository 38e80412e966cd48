// A step split over two methods of one class: the grads travel in a new member.
#include "StepPlanner.h"

using namespace clang;

namespace ampmigrate {

llvm::ArrayRef<const ZeroGradCall *> StepPlanner::stepZeroGrads() const {
  if (Desc.Split)
    return Desc.SplitZeroGrads;
  return T.ZeroGrads;
}

void StepPlanner::checkSplitHalf() {
  const SplitStep &S = *Desc.Split;
  bool Scaling = S.ScalingHalf == &T;
  SourceLocation Here = Scaling ? T.Backwards.front()->Backward->getBeginLoc()
                                : T.Steps.front()->Call->getBeginLoc();
  auto Refuse = [&](const std::string &WhyNot) {
    block(Here, splitStepReason(S, Scaling, SM, WhyNot));
  };
  const auto *Method = cast<CXXMethodDecl>(FA.Function);
  const CXXRecordDecl *Class = Method->getParent()->getDefinition();
  const TrainingStep &Stepping = *S.SteppingHalf;
  const TrainingStep &ScalingT = *S.ScalingHalf;
  if (!Class || !S.Caller) {
    Refuse("no method of the class in this file calls both");
    return;
  }
  if (Stepping.Steps.size() != 1 || !ScalingT.Unscales.empty() || !ScalingT.Updates.empty() ||
      ScalingT.mixed() || Stepping.mixed() || ScalingT.Backwards.size() != 1) {
    Refuse("a split step with several optimizers, several backwards or a plain path beside the scaled one is not rewritten yet");
    return;
  }
  const ScalerCall *Step = Stepping.Steps.front();
  const auto *OptField = dyn_cast_or_null<FieldDecl>(Step->Optimizer.Decl);
  const auto *ScalerField = dyn_cast_or_null<FieldDecl>(T.Scaler.Decl);
  if (!OptField || !ScalerField || OptField->getParent() != Class || ScalerField->getParent() != Class) {
    Refuse("the optimizer or the scaler is not a member of the class");
    return;
  }
  // The model(s) the scaling half runs, and the optimizer: their zero_grad()s clear the member.
  llvm::SmallVector<ObjectRef, 2> Owners{Step->Optimizer};
  for (const ForwardCall *F : ScalingT.Forwards)
    Owners.push_back(F->Model);
  for (const ZeroGradCall &Z : FA.ZeroGrads)
    if (llvm::is_contained(Owners, Z.Owner))
      Desc.SplitZeroGrads.push_back(&Z);
  // The caller's zero_grad() of them (`opt_.zero_grad(); forward_backward(); optimizer_step();`)
  // clears the member too; the scaling half's fix carries that edit.
  std::set<const CallExpr *> CallerClears;
  for (const FunctionAnalysis &F : TU.Functions)
    if (F.Function->getCanonicalDecl() == S.Caller->getCanonicalDecl())
      for (const ZeroGradCall &Z : F.ZeroGrads)
        if (llvm::is_contained(Owners, Z.Owner) && Z.Statement) {
          CallerClears.insert(Z.Call);
          if (Scaling)
            Desc.SplitZeroGrads.push_back(&Z);
        }
  // Nothing else in the class may clear or read .grad: the member would not see it.
  if (const std::string Other = otherGradUse(Class, S, CallerClears); !Other.empty()) {
    Refuse(Other);
    return;
  }
  Desc.GradsName = memberName(Class);
  Desc.Accumulation.On = true;
  if (Tgt.Accumulate.empty()) {
    Refuse("the rules name no target.accumulate to sum them");
    return;
  }
  if (Scaling) {
    Desc.GradFnName = freshName("grad_fn");
    Desc.OptParams = optimizerParams(Step);
    if (!T.Scope) {
      Refuse("no autocast scope precedes the scaled backward in its method");
      return;
    }
    Desc.AllBackwards.assign(T.Backwards.begin(), T.Backwards.end());
    checkRegion(*T.Backwards.front());
    checkClips();
    checkGradAccesses();
    checkZeroGrads(*T.Backwards.front());
    checkScalerDecl();
    decideInclude();
    // The member, after the scaler's declaration.
    SourceLocation FieldEnd = SM.getExpansionLoc(ScalerField->getEndLoc());
    unsigned FE = SM.getFileOffset(FieldEnd);
    StringRef FBuf = SM.getBufferData(SM.getFileID(FieldEnd));
    size_t NL = FBuf.find('\n', FE);
    if (NL == StringRef::npos || FieldEnd.isMacroID() || !whyNotEditable(FieldEnd).empty()) {
      Refuse("the class cannot be given the member: " +
             (whyNotEditable(FieldEnd).empty() ? std::string("its scaler member is declared in a macro")
                                               : whyNotEditable(FieldEnd)));
      return;
    }
    unsigned LS = FE;
    while (LS > 0 && FBuf[LS - 1] != '\n')
      --LS;
    std::string Ind;
    for (unsigned I = LS; I < FBuf.size() && (FBuf[I] == ' ' || FBuf[I] == '\t'); ++I)
      Ind += FBuf[I];
    std::string Member = Ind + "std::vector<torch::Tensor> " + Desc.GradsName + "; // the grads from " +
                         S.Scaling->Function->getNameAsString() + "() to " +
                         S.Stepping->Function->getNameAsString() + "()\n";
    SourceLocation At = SM.getLocForStartOfFile(SM.getFileID(FieldEnd)).getLocWithOffset(NL + 1);
    if (SM.getFileID(FieldEnd) == File)
      Desc.SplitMember.insertJoined(NL + 1, Member);
    else {
      Desc.SplitMember.Elsewhere.emplace_back(SM, CharSourceRange::getCharRange(At, At), Member, LO);
      OtherFilesEdited.insert(SM.getFileID(FieldEnd));
    }
    return;
  }
  checkScalerCalls();
  checkClips();
  checkGradAccesses();
  checkZeroGrads(*ScalingT.Backwards.front());
  checkScalerDecl();
}

std::string StepPlanner::otherGradUse(const CXXRecordDecl *Class, const SplitStep &S,
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
      return "`" + firstLine(text(U.Found->getSourceRange())) + "` in '" + Def->getNameAsString() +
             "' (" + where(U.Found->getBeginLoc()) + ") clears or touches .grad outside the two "
             "methods, which the member would not follow";
  }
  return "";
}

} // namespace ampmigrate
