// The forward region of a scaled step with no autocast scope (an fp32 forward, issue #38 "Shape 2"):
// chosen by what the loss is computed from, and checked to run without autocast.
#include "RegionPlanner.h"
#include "ModelQueries.h"
#include "ampmigrate/CallSummaries.h"
#include "ampmigrate/ExpressionFacts.h"
#include "ampmigrate/ShapeRecognisers.h"
#include "ampmigrate/SourceText.h"

#include "llvm/ADT/SmallPtrSet.h"
#include <deque>

using namespace clang;

namespace ampmigrate {

namespace {

/// Whether `S` declares or may write one of `Needed` (a declaration, an assignment, an in-place
/// method: ExpressionFacts' writeOf).
bool givesValueTo(const Stmt *S, const llvm::SmallPtrSetImpl<const ValueDecl *> &Needed) {
  if (const auto *DS = dyn_cast<DeclStmt>(S))
    for (const Decl *D : DS->decls()) {
      if (const auto *VD = dyn_cast<ValueDecl>(D); VD && Needed.contains(VD))
        return true;
      if (const auto *DD = dyn_cast<DecompositionDecl>(D))
        for (const BindingDecl *B : DD->bindings())
          if (Needed.contains(B))
            return true;
    }
  for (const ValueDecl *D : Needed)
    if (writeOf(S, D))
      return true;
  return false;
}

/// Functions of libtorch and the standard library: their code computes as the caller's autocast
/// state says and opens no scope of its own.
bool isLibraryFunction(const FunctionDecl *FD, const SourceManager &SM) {
  if (SM.isInSystemHeader(SM.getExpansionLoc(FD->getLocation())))
    return true;
  return inLibraryNamespace(FD);
}

/// What the calls of a forward reach: the project functions whose bodies it runs, and the first
/// that turns autocast on or whose body is not in the translation unit.
class ForwardReach : public AnalysedBodyVisitor {
public:
  ForwardReach(const RuleSet &Rules, const SourceManager &SM, ASTContext &Ctx, const CalleeFacts *Callees)
      : Rules(Rules), SM(SM), Ctx(Ctx), Callees(Callees) {}

  /// Walks a statement of the region; `Origin` is what later findings name as reached from.
  void fromRegion(const Stmt *S) {
    Current = nullptr;
    walk(S);
    while (!Pending.empty() && !Autocast && !Unknown && Elsewhere.K == CalleeAnswer::Kind::No) {
      auto [FD, Origin] = Pending.front();
      Pending.pop_front();
      enter(FD, Origin);
    }
  }

  /// The first enable of autocast (a call, or an enabling guard's declaration) and the function
  /// it is in; the first project function with no body; each with the region's call that leads
  /// there.
  const Stmt *Autocast = nullptr;
  const FunctionDecl *AutocastIn = nullptr;
  const FunctionDecl *Unknown = nullptr;
  std::string UnknownName;
  const Stmt *Origin = nullptr;
  /// An enable of autocast in another file of the run (CallSummaries.h): the function, `file:line`.
  CalleeAnswer Elsewhere;

private:
  const RuleSet &Rules;
  const SourceManager &SM;
  ASTContext &Ctx;
  const CalleeFacts *Callees;
  std::deque<std::pair<const FunctionDecl *, const Stmt *>> Pending;
  llvm::SmallPtrSet<const FunctionDecl *, 16> Seen;
  const FunctionDecl *Current = nullptr; ///< the function being walked; null for the region
  const Stmt *CurrentOrigin = nullptr;
  const Stmt *RegionCall = nullptr;

  void enter(const FunctionDecl *FD, const Stmt *From) {
    const FunctionDecl *Def = nullptr;
    if (FD->hasBody(Def) && Def->getBody()) {
      Current = Def;
      CurrentOrigin = From;
      walk(Def->getBody());
      return;
    }
    // A body skipped by the fast path is in a header that names no autocast or scaler token
    // (HeaderBodySkipper): it turns nothing on itself.
    if (hasSkippedBody(FD))
      return;
    // Its body in another file: that file's summary says what it runs.
    CalleeAnswer There{CalleeAnswer::Kind::Unknown, "", ""};
    if (Callees)
      There = Callees->ask(FD, CalleeFact::EnablesAutocast);
    if (There.K == CalleeAnswer::Kind::No)
      return;
    Origin = From;
    if (There.K == CalleeAnswer::Kind::Yes)
      Elsewhere = There;
    else
      Unknown = FD, UnknownName = There.Function.empty() ? qualifiedName(FD) : There.Function;
  }

  void follow(const FunctionDecl *FD, const Stmt *At) {
    if (!FD || isLibraryFunction(FD, SM) || !Seen.insert(FD->getCanonicalDecl()).second)
      return;
    Pending.push_back({FD, Current ? CurrentOrigin : At});
  }

  void found(const Stmt *S) {
    if (Autocast)
      return;
    Autocast = S;
    AutocastIn = Current;
    Origin = Current ? CurrentOrigin : S;
  }

  bool visitDecl(Decl *D) override {
    const auto *VD = dyn_cast<VarDecl>(D);
    if (declaresEnablingGuard(VD, Rules))
      found(VD->getInit() ? static_cast<const Stmt *>(VD->getInit()) : nullptr);
    return !Autocast;
  }

  bool visitStmt(Stmt *S) override {
    const auto *CE = dyn_cast<CallExpr>(S);
    if (!CE)
      return true;
    const FunctionDecl *FD = CE->getDirectCallee();
    if (!FD)
      return true;
    if (const AutocastFunctionRule *R = Rules.autocastRule(qualifiedName(FD));
        R && R->Role == AutocastRole::Enable) {
      if (isAutocastEnableCall(CE, Rules, Ctx))
        found(CE);
      return !Autocast;
    }
    // A model's forward: through its holder (`model(x)`, `model->forward(x)`) the module's own
    // class runs it.
    if (const CXXRecordDecl *Model = isa<CXXMemberCallExpr, CXXOperatorCallExpr>(CE) ? modelClass(CE) : nullptr;
        Model && isDerivedFromAny(Model, Rules.ModuleClasses))
      for (const CXXMethodDecl *M : Model->methods())
        if (M->getIdentifier() && M->getName() == "forward")
          follow(M, CE);
    follow(FD, CE);
    return true;
  }
};

} // namespace

const Stmt *RegionPlanner::unscopedRegionStart(const ImplicitBackward &B, const CompoundStmt *Block,
                                               const Stmt *EndStmt) {
  // What the loss is computed from: the scale() arguments of the step's backwards.
  llvm::SmallPtrSet<const ValueDecl *, 16> Needed;
  std::vector<const ValueDecl *> LossVars; // in the order written, for the reason
  std::string LossText;
  for (const ImplicitBackward *Bi : F.AllBackwards) {
    const Expr *Loss = Bi->Scale && Bi->Scale->Call->getNumArgs() ? Bi->Scale->Call->getArg(0) : Bi->Loss;
    if (!Loss)
      continue;
    VariablesRead R;
    R.walk(Loss);
    Needed.insert(R.Found.begin(), R.Found.end());
    LossVars.insert(LossVars.end(), R.Found.begin(), R.Found.end());
    if (LossText.empty())
      LossText = firstLine(C.text(Loss->getSourceRange()));
  }
  // A statement that holds a backward or a call of a step (the previous step's end) bounds the
  // region: what comes before it is not this forward's.
  std::vector<const Stmt *> StepCalls(FA.BackwardCalls.begin(), FA.BackwardCalls.end());
  for (const ScalerCall &SC : FA.ScalerCalls) // a step's end; get_scale() in a log line is not
    if (SC.Kind == ScalerCall::Method::Unscale || SC.Kind == ScalerCall::Method::Step ||
        SC.Kind == ScalerCall::Method::Update)
      StepCalls.push_back(SC.Call);
  for (const ScalerCall &SC : FA.OptimizerSteps)
    StepCalls.push_back(SC.Call);
  for (const ZeroGradCall &Z : FA.ZeroGrads)
    StepCalls.push_back(Z.Call);
  for (const ClipCall &Cl : FA.Clips)
    StepCalls.push_back(Cl.Call);
  auto HoldsStepCall = [&](const Stmt *S) {
    return llvm::any_of(StepCalls, [&](const Stmt *X) { return C.within(X, S); });
  };
  std::vector<const Stmt *> Before;
  for (const Stmt *Child : Block->body()) {
    if (Child == EndStmt)
      break;
    Before.push_back(Child);
  }
  const Stmt *First = nullptr, *Bound = nullptr, *Earlier = nullptr;
  for (auto It = Before.rbegin(); It != Before.rend(); ++It) {
    const Stmt *S = *It;
    if (!Bound && HoldsStepCall(S)) {
      Bound = S;
      continue;
    }
    if (!givesValueTo(S, Needed))
      continue;
    (Bound ? Earlier : First) = S;
    VariablesRead R;
    R.walk(S);
    Needed.insert(R.Found.begin(), R.Found.end());
  }
  if (First)
    return First;
  std::string Why = "no autocast scope precedes this scaled backward in this function, and ";
  if (Bound && Earlier)
    Why += "the loss `" + LossText + "` is computed before `" + firstLine(C.text(Bound->getSourceRange())) +
           "` (" + lineText(SM, Bound->getBeginLoc()) + "), which ends the statements the forward "
           "region can hold";
  else {
    auto Param = llvm::find_if(LossVars, [](const ValueDecl *D) { return isa<ParmVarDecl>(D); });
    Why += "no statement before it in its block computes the loss `" + LossText + "` (" +
           (Param != LossVars.end() ? "`" + (*Param)->getNameAsString() + "` is a parameter of this function"
                                  : std::string("it is computed outside this block")) +
           ")";
  }
  block(B.Backward->getBeginLoc(),
        Why + ", so the forward pass to hand to " + Tgt.ValueAndGrad +
            " is unknown: compute the loss in the backward's block, or migrate this step by hand");
  return nullptr;
}

bool RegionPlanner::checkUnscopedForward(const ForwardRegion &R) {
  ForwardReach Reach(Rules, SM, Ctx, C.TU.Callees);
  for (const Stmt *S : R.Statements)
    Reach.fromRegion(S);
  for (const ImplicitBackward *Bi : F.AllBackwards)
    if (Bi->Scale && Bi->Scale->Call->getNumArgs())
      Reach.fromRegion(Bi->Scale->Call->getArg(0));
  const Stmt *Origin = Reach.Origin;
  std::string Via = Origin ? "`" + firstLine(C.text(Origin->getSourceRange())) + "` (" +
                                 lineText(SM, Origin->getBeginLoc()) + ")"
                           : std::string("the forward");
  if (Reach.Autocast) {
    std::string In = Reach.AutocastIn ? " in '" + qualifiedName(Reach.AutocastIn) + "'" : std::string();
    block(Origin ? Origin->getBeginLoc() : Reach.Autocast->getBeginLoc(),
          "no autocast scope precedes this scaled backward in this function, yet its forward turns "
          "autocast on" + In + " (`" + firstLine(C.text(Reach.Autocast->getSourceRange())) + "` at " +
              C.where(Reach.Autocast->getBeginLoc()) + ", reached from " + Via +
              "): autocast inside the model or a helper of the forward is not a shape the rewrite "
              "carries; migrate this step by hand");
    return false;
  }
  if (Reach.Elsewhere.K == CalleeAnswer::Kind::Yes) {
    block(Origin ? Origin->getBeginLoc() : R.First->getBeginLoc(),
          "no autocast scope precedes this scaled backward in this function, yet its forward turns "
          "autocast on in another file of the project ('" + Reach.Elsewhere.Function + "' at " +
              Reach.Elsewhere.Where + ", reached from " + Via + "): autocast inside the model or "
              "a helper of the forward is not a shape the rewrite carries; migrate this step by hand");
    return false;
  }
  if (Reach.Unknown) {
    block(Origin ? Origin->getBeginLoc() : R.First->getBeginLoc(),
          "no autocast scope precedes this scaled backward in this function, so its forward would "
          "be handed to " + Tgt.ValueAndGrad + " in fp32 (O0); but " + Via + " runs '" +
              Reach.UnknownName + "', whose body is in no file of this run or of its compilation "
              "database: it may turn autocast on itself, so the forward's precision is not known; migrate this step "
              "by hand");
    return false;
  }
  return true;
}

} // namespace ampmigrate
