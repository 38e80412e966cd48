// Statements touching .grad between the backward and step(): rewritten (loops, all-reduce) or blocking.
#include "StepEditWriter.h"
#include "StepConcerns.h"

using namespace clang;

namespace ampmigrate {

namespace {

const CXXMemberCallExpr *memberCall(const Expr *E, StringRef Name) {
  const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(E ? E->IgnoreImplicit()->IgnoreParenImpCasts() : nullptr);
  const CXXMethodDecl *MD = MC ? MC->getMethodDecl() : nullptr;
  return MD && MD->getIdentifier() && MD->getName() == Name ? MC : nullptr;
}

/// `p.grad()` / `p.mutable_grad()` of the loop variable.
bool isGradOf(const Expr *E, const VarDecl *P) {
  const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(E ? E->IgnoreImplicit()->IgnoreParenImpCasts() : nullptr);
  if (!MC || !isGradAccessor(MC))
    return false;
  const auto *DRE = dyn_cast<DeclRefExpr>(MC->getImplicitObjectArgument()->IgnoreParenImpCasts());
  return DRE && DRE->getDecl() == P;
}

/// An element-wise loop over the step's parameters that touches nothing of them but their
/// gradients:
///   for (auto &p : model->parameters()) { if (p.grad().defined()) p.grad().div_(world); }
/// Each iteration works on one gradient alone, so the loop carries over to the explicit grads
/// one for one, whatever their order: `for (auto &p_grad : grads) { ... p_grad.div_(world); }`.
struct GradLoop {
  const CXXForRangeStmt *Loop = nullptr;
  std::vector<const CXXMemberCallExpr *> Accessors;
  std::string Grads;
};

/// Every `.grad()`/`.mutable_grad()` call in a statement, and whether all are on `P`.
class GradAccessors : public AnalysedBodyVisitor {
public:
  explicit GradAccessors(const VarDecl *P) : P(P) {}
  const VarDecl *P;
  std::vector<const CXXMemberCallExpr *> OnP;
  bool Others = false; ///< a grad accessor on something else, or `P` used another way
  bool visitStmt(Stmt *S) override {
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(S); MC && isGradAccessor(MC)) {
      if (isGradOf(MC, P))
        OnP.push_back(MC);
      else
        Others = true;
    } else if (const auto *E = dyn_cast<DeclRefExpr>(S); E && E->getDecl() == P) {
      ++Uses;
    }
    return true;
  }
  unsigned Uses = 0;
};

/// A data-parallel gradient all-reduce over the step's parameters, as libtorch projects write
/// it (there is no DDP in C++):
///   for (auto &p : model->parameters()) {
///     std::vector<torch::Tensor> bufs{p.grad()};   // or allreduce on {p.grad()} directly
///     pg->allreduce(bufs)->wait();                  // default options: SUM
///     p.grad().div_(world);                         // optional; world = pg->getSize()
///   }
/// becomes `amp::all_reduce_grads(grads, pg)` (average when it divides by the group's size).
/// Anything else in the loop, other options, or another divisor: no match (reported).
struct GradAllReduce {
  std::string Group;
  bool Average = false;
};

/// Whether an expression holds exactly one `p.grad()` and nothing else that computes.
class GradOnly : public AnalysedBodyVisitor {
public:
  const VarDecl *P;
  int Grads = 0, Other = 0;
  explicit GradOnly(const VarDecl *P) : P(P) { WrapsStmts = true; }
  /// A member call is counted, not entered.
  bool traverseStmt(Stmt *S) override {
    const auto *MC = dyn_cast<CXXMemberCallExpr>(S);
    if (!MC)
      return descend(S);
    if (isGradOf(MC, P))
      ++Grads;
    else
      ++Other;
    return true;
  }
  bool visitStmt(Stmt *S) override {
    if (isa<CallExpr>(S))
      ++Other;
    return true;
  }
};

/// The statements touching `.grad` in the step's gradient window, each refused or carried over
/// onto the grads (Out).
class GradAccessPlanner : public StepConcern {
public:
  GradAccessPlanner(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers,
                    llvm::StringSet<> &Names, std::vector<GradAccessEdit> &Out)
      : StepConcern(C, F, Blockers), Names(Names), Out(Out) {}

  /// Statements between the backward and step() that touch `.grad`: the explicit grads never
  /// reach it, so such a statement would silently act on nothing after the rewrite. Each one is
  /// refused, or carried over onto the grads.
  void checkGradAccesses();

private:
  llvm::StringSet<> &Names;
  std::vector<GradAccessEdit> &Out;

  /// `Why` is set when the statement is such a loop that cannot be carried over (said with it).
  std::optional<GradLoop> matchGradLoop(const clang::Stmt *S, std::string &Why) const;
  /// `for (auto &p : X.parameters())` -> `for (auto &p_grad : grads)`, each `p.grad()` ->
  /// `p_grad`.
  void checkGradLoop(const GradLoop &L);
  /// The process group an `allreduce` is called on, as written, when it is an intrusive_ptr
  /// (what amp::ProcessGroupRef takes); "" otherwise.
  std::string groupOf(const clang::CXXMemberCallExpr *Call) const;
  /// `X` is the group's size: `<group>->getSize()`, or a variable initialised from it.
  bool isGroupSize(const clang::Expr *X, llvm::StringRef Group) const;
  std::optional<GradAllReduce> matchGradAllReduce(const clang::Stmt *S) const;
};

} // namespace

ConcernPlan<std::vector<GradAccessEdit>> planGradAccesses(const StepContext &C, const StepFacts &F,
                                                          llvm::StringSet<> &Names) {
  ConcernPlan<std::vector<GradAccessEdit>> P;
  GradAccessPlanner(C, F, P.Blockers, Names, P.Plan).checkGradAccesses();
  return P;
}

void GradAccessPlanner::checkGradAccesses() {
  // The statement of its block that holds a call, as the reports name it.
  auto HolderOf = [&](const CallExpr *CE) {
    const Stmt *Holder = CE;
    for (const Stmt *P = PM.getParent(Holder); P && !isa<CompoundStmt>(P); P = PM.getParent(P))
      Holder = P;
    return Holder;
  };
  for (const CallExpr *CE : T.GradReadsAfter) {
    const Stmt *Holder = HolderOf(CE);
    if (!isGradAccessor(CE)) { // the step's optimizer stepped on .grad after the step
      block(CE->getBeginLoc(),
            "`" + firstLine(C.text(CE->getSourceRange())) + "` steps the optimizer on .grad after "
                "the step (" + C.where(CE->getBeginLoc()) + "; the fp32 path of the same "
                "backward?); the explicit grads of " + Tgt.ValueAndGrad + " never reach .grad, "
                "so it would step on none: migrate this step by hand");
      return;
    }
    block(CE->getBeginLoc(),
          "`" + firstLine(C.text(Holder->getSourceRange())) + "` uses .grad after the step (" +
              C.where(CE->getBeginLoc()) + "), where the original's gradients still are; the "
              "explicit grads of " + Tgt.ValueAndGrad + " never reach .grad, so it would find "
              "none: read the step's grads there instead (the list of the optimizer's "
              "parameters, in order), or migrate this step by hand");
    return;
  }
  for (const auto &[CE, Read] : T.GradHelpersAfter) {
    const Stmt *Holder = HolderOf(CE);
    block(CE->getBeginLoc(),
          "`" + firstLine(C.text(Holder->getSourceRange())) + "` calls `" +
              CE->getDirectCallee()->getNameAsString() + "`, which reads .grad (`" +
              firstLine(C.text(Read->getSourceRange())) + "`, " + C.where(Read->getBeginLoc()) +
              ") after the step, where the original's gradients still are; the explicit grads "
              "of " + Tgt.ValueAndGrad + " never reach .grad, so it would find none: hand it "
              "the step's grads instead, or migrate this step by hand");
    return;
  }
  for (const TrainingStep::ElsewhereHelper &H : T.GradHelpersElsewhere) {
    const Stmt *Holder = HolderOf(H.Call);
    std::string Named = "`" + firstLine(C.text(Holder->getSourceRange())) + "` calls '" + H.Function + "'";
    if (!H.Where.empty())
      block(H.Call->getBeginLoc(),
            Named + ", which reads .grad in another file of the project (" + H.Where + ") after the "
            "step, where the original's gradients still are; the explicit grads of " +
            Tgt.ValueAndGrad + " never reach .grad, so it would find none: hand it the step's "
            "grads instead, or migrate this step by hand");
    else
      block(H.Call->getBeginLoc(),
            Named + " after the step, handing it the model, optimizer or parameters, and its "
            "body is in no file of this run or of its compilation database: it may read .grad, "
            "which the explicit grads of " + Tgt.ValueAndGrad + " never reach; add the file that "
            "defines it to the compilation database (its summary decides), or migrate this step "
            "by hand");
    return;
  }
  for (const CallExpr *CE : T.GradReadsBefore) {
    const Stmt *Holder = HolderOf(CE);
    block(CE->getBeginLoc(),
          "`" + firstLine(C.text(Holder->getSourceRange())) + "` uses .grad before this step's "
              "backward (" + C.where(CE->getBeginLoc()) + "), where the original finds the last "
              "step's gradients (or the zeros of zero_grad()); the explicit grads of " +
              Tgt.ValueAndGrad + " never reach .grad, so it would find none: move it after the "
              "step and read the step's grads there, or migrate this step by hand");
    return;
  }
  for (const TrainingStep::ElsewhereHelper &H : T.GradHelpersBefore) {
    const Stmt *Holder = HolderOf(H.Call);
    block(H.Call->getBeginLoc(),
          "`" + firstLine(C.text(Holder->getSourceRange())) + "` calls '" + H.Function + "', which "
              "reads .grad (" + H.Where + ") before this step's backward, where the original finds "
              "the last step's gradients (or the zeros of zero_grad()); the explicit grads of " +
              Tgt.ValueAndGrad + " never reach .grad, so it would find none: move it after the "
              "step and hand it the step's grads, or migrate this step by hand");
    return;
  }
  for (const GradAccess &A : T.GradAccesses) {
    std::string Stmt = firstLine(C.text(A.Statement->getSourceRange()));
    // Reports name the statement that holds the access itself.
    std::string Named = firstLine(C.text((A.Holder ? A.Holder : A.Statement)->getSourceRange()));
    std::string Why;
    std::optional<GradAllReduce> AR = matchGradAllReduce(A.Statement);
    if (AR && (!F.PerOptimizer.empty() || F.Accumulation.On || Tgt.AllReduceGrads.empty())) {
      // Not one bucketed collective here; the loop itself may still carry over.
      if (std::optional<GradLoop> L = matchGradLoop(A.Statement, Why)) {
        checkGradLoop(*L);
        continue;
      }
    }
    if (AR) {
      if (!F.PerOptimizer.empty() || F.Accumulation.On || Tgt.AllReduceGrads.empty()) {
        block(A.Access->getBeginLoc(),
              "`" + Stmt + "` all-reduces .grad across ranks; with " +
                  (Tgt.AllReduceGrads.empty() ? std::string("no target.all-reduce-grads in the rules")
                                              : std::string("several optimizers or a gradient accumulation")) +
                  " it is not rewritten yet: migrate this step by hand");
        continue;
      }
      CharSourceRange R = C.stmtRange(A.Statement);
      unsigned B, E;
      if (R.isInvalid() || !C.fileRange(SourceRange(R.getBegin(), R.getBegin()), B, E)) {
        block(A.Access->getBeginLoc(), "the gradient all-reduce is inside a macro");
        continue;
      }
      GradAccessEdit AE;
      AE.What = GradAccessEdit::Kind::AllReduce;
      AE.Begin = SM.getFileOffset(R.getBegin());
      AE.End = SM.getFileOffset(R.getEnd());
      AE.Grads = F.GradsName;
      AE.Group = AR->Group;
      AE.Average = AR->Average;
      Out.push_back(AE);
      continue;
    }
    if (std::optional<GradLoop> L = matchGradLoop(A.Statement, Why)) {
      checkGradLoop(*L);
      continue;
    }
    if (!Why.empty()) { // about the loop itself
      block(A.Access->getBeginLoc(), "`" + Stmt + "` " + Why);
      continue;
    }
    bool Plain = T.Unscaled || T.Plain.contains(C.off(A.Statement->getBeginLoc()));
    std::string Backward = Plain ? "backward()" : "the scaled backward";
    if (A.How == GradAccess::Kind::Elsewhere)
      block(A.Access->getBeginLoc(),
            "`" + Named + "` runs '" + A.Callee + "', which reads or writes .grad in another file "
            "of the project (" + A.Where + "), between " + Backward + " and step(); the explicit "
            "grads of " + Tgt.ValueAndGrad + " never reach .grad, so after the rewrite it would "
            "act on nothing: rewrite it onto the grads or migrate this step by hand");
    else if (A.How == GradAccess::Kind::Indirect && A.Where.empty())
      block(A.Access->getBeginLoc(),
            "`" + Named + "` calls `" + A.Callee + "` through a function pointer or a "
            "std::function between " + Backward + " and step(): what it runs is not known, and it "
            "may read or write .grad, which the explicit grads of " + Tgt.ValueAndGrad + " never "
            "reach: migrate this step by hand");
    else if (A.How == GradAccess::Kind::Indirect)
      block(A.Access->getBeginLoc(),
            "`" + Named + "` runs '" + A.Callee + "', which calls through a function pointer or a "
            "std::function (" + A.Where + "), between " + Backward + " and step(): what that runs "
            "is not known, and it may read or write .grad, which the explicit grads of " +
                Tgt.ValueAndGrad + " never reach: migrate this step by hand");
    else if (A.How == GradAccess::Kind::Unknown)
      block(A.Access->getBeginLoc(),
            "`" + Named + "` runs '" + A.Callee + "' between " + Backward + " and step(), and its "
            "body is in no file of this run or of its compilation database: it may read or write "
            ".grad, which the explicit grads of " + Tgt.ValueAndGrad + " never reach; add the file "
            "that defines it to the compilation database (its summary decides), name it under "
            "grad-free in the rules if it never touches .grad, or migrate this step by hand");
    else if (A.How == GradAccess::Kind::RunsBackward && A.Callee.empty())
      block(A.Access->getBeginLoc(),
            "`" + Named + "` runs a backward() that is not this step's between " + Backward +
                " and step(): its gradients add to .grad, which the explicit grads of " +
                Tgt.ValueAndGrad + " never reach, so the rewrite would drop them: migrate this "
                "step by hand");
    else if (A.How == GradAccess::Kind::RunsBackward)
      block(A.Access->getBeginLoc(),
            "`" + Named + "` runs '" + A.Callee + "', which runs a backward() (" + A.Where +
                "), between " + Backward + " and step(): its gradients add to .grad, which the "
                "explicit grads of " + Tgt.ValueAndGrad + " never reach, so the rewrite would drop "
                "them: migrate this step by hand");
    else if (A.How == GradAccess::Kind::ChangesObject)
      block(A.Access->getBeginLoc(),
            "`" + Named + "` changes the step's model or optimizer ('" + A.Callee + "') between " +
                Backward + " and step(): the original's step() then works on what it leaves "
                "(its parameters and their .grad), the rewrite's step() on the explicit grads "
                "taken before it: migrate this step by hand");
    else if (A.How == GradAccess::Kind::GradAccessor && !A.Callee.empty())
      block(A.Access->getBeginLoc(),
            "`" + Named + "` runs '" + A.Callee + "', which reads or writes .grad (" + A.Where +
                "), between " + Backward + " and step(); the explicit grads of " + Tgt.ValueAndGrad +
                " never reach .grad, so after the rewrite it would act on nothing: rewrite it onto "
                "the grads or migrate this step by hand");
    else if (A.How == GradAccess::Kind::GradAccessor)
      block(A.Access->getBeginLoc(),
            "`" + Named + "` reads or writes .grad between " + Backward + " and step(); the "
            "explicit grads of " + Tgt.ValueAndGrad + " never reach .grad, so after the rewrite "
            "it would act on nothing: rewrite it onto the grads or migrate this step by hand");
    else
      block(A.Access->getBeginLoc(),
            "`" + Named + "` hands the parameters (or the model or optimizer) to code that may "
            "read or write .grad between " + Backward + " and step(); the explicit grads of " +
            Tgt.ValueAndGrad + " never reach .grad: rewrite it onto the grads or migrate this "
            "step by hand");
  }
}

std::optional<GradLoop> GradAccessPlanner::matchGradLoop(const Stmt *S, std::string &Why) const {
  const auto *FR = dyn_cast<CXXForRangeStmt>(S);
  if (!FR || !FR->getLoopVariable())
    return std::nullopt;
  const CXXMemberCallExpr *Params = parametersCall(FR->getRangeInit());
  ObjectRef Owner = parametersOwner(FR->getRangeInit());
  if (!Params || !Owner || !(T.forwardsModel(Owner) || T.stepsOptimizer(Owner)))
    return std::nullopt;
  const CXXMethodDecl *MD = Params->getMethodDecl();
  if (!MD || MD->getName() != "parameters")
    return std::nullopt;
  const VarDecl *P = FR->getLoopVariable();
  GradAccessors G(P);
  G.walk(FR->getBody());
  if (G.Others || G.OnP.empty())
    return std::nullopt;
  if (G.Uses != G.OnP.size()) {
    Why = "uses the parameter '" + P->getNameAsString() + "' itself, not only its .grad, "
          "between the backward and step(); the explicit grads of " + Tgt.ValueAndGrad +
          " never reach .grad: rewrite it onto the grads or migrate this step by hand";
    return std::nullopt;
  }
  // After unscale_(), amp::GradScaler::step takes only the grads unscale_() unscaled (changed
  // in place) or clips of them: a loop that puts new tensors in their place would be refused
  // by step() at run time (docs/runtime.md, "Which grads step() takes").
  unsigned LoopOff = C.off(FR->getBeginLoc());
  bool AfterUnscale = llvm::any_of(T.Unscales, [&](const ScalerCall *U) {
    return C.off(U->Call->getBeginLoc()) < LoopOff;
  });
  for (const CXXMemberCallExpr *A : G.OnP) {
    const Stmt *Parent = PM.getParent(A);
    while (Parent && isa<ImplicitCastExpr, MaterializeTemporaryExpr, ParenExpr>(Parent))
      Parent = PM.getParent(Parent);
    const auto *OC = dyn_cast_or_null<CXXOperatorCallExpr>(Parent);
    if (AfterUnscale && OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2 &&
        C.within(A, OC->getArg(0))) {
      Why = "puts a new tensor in place of each grad after unscale_(); " + Tgt.ScalerClass +
            "::step takes only the grads unscale_() unscaled, changed in place, or their clip: "
            "change them in place (copy_, mul_, clamp_) or migrate this step by hand";
      return std::nullopt;
    }
  }
  GradLoop L;
  L.Loop = FR;
  L.Accessors = G.OnP;
  if (T.stepsOptimizer(Owner)) {
    L.Grads = F.gradsFor(Owner);
  } else if (!F.PerOptimizer.empty()) {
    Why = "loops over the model's parameters while several optimizers step with one loss; "
          "which optimizer's grads it means is not known: migrate this step by hand";
    return std::nullopt;
  } else {
    L.Grads = F.GradsName;
  }
  return L;
}

void GradAccessPlanner::checkGradLoop(const GradLoop &L) {
  const VarDecl *P = L.Loop->getLoopVariable();
  unsigned HB, HE, RB, RE;
  if (!C.fileRange(SourceRange(P->getBeginLoc(), P->getLocation()), HB, HE) ||
      !C.fileRange(L.Loop->getRangeInit()->getSourceRange(), RB, RE)) {
    block(L.Loop->getBeginLoc(), "the loop over the parameters' .grad is inside a macro");
    return;
  }
  GradAccessEdit AE;
  AE.What = GradAccessEdit::Kind::Loop;
  AE.LoopVar = freshName(Names, P->getName().str() + "_grad");
  AE.Begin = HB;
  AE.End = RE;
  AE.Grads = L.Grads;
  for (const CXXMemberCallExpr *MC : L.Accessors) {
    unsigned B, E;
    if (!C.fileRange(MC->getSourceRange(), B, E)) {
      block(MC->getBeginLoc(), "a .grad access of the loop is inside a macro");
      return;
    }
    AE.Accessors.emplace_back(B, E);
  }
  Out.push_back(AE);
}

void StepEditWriter::writeGradAccesses() const {
  for (const GradAccessEdit &A : D.GradAccesses) {
    if (A.What == GradAccessEdit::Kind::AllReduce) {
      Out.replace(A.Begin, A.End - A.Begin, Tgt.AllReduceGrads + "(" + A.Grads + ", " + A.Group +
                                                (A.Average ? "" : ", /*average=*/false") + ");");
      continue;
    }
    Out.replace(A.Begin, A.End - A.Begin, "auto &" + A.LoopVar + " : " + A.Grads);
    for (const auto &[B, E] : A.Accessors)
      Out.replace(B, E - B, A.LoopVar);
  }
}

std::string GradAccessPlanner::groupOf(const CXXMemberCallExpr *Call) const {
  const auto *Arrow = dyn_cast<CXXOperatorCallExpr>(Call->getImplicitObjectArgument()->IgnoreParenImpCasts());
  if (!Arrow || Arrow->getOperator() != OO_Arrow || Arrow->getNumArgs() != 1)
    return "";
  const Expr *G = Arrow->getArg(0)->IgnoreParenImpCasts();
  const CXXRecordDecl *RD = G->getType().getNonReferenceType()->getAsCXXRecordDecl();
  if (!RD || qualifiedName(RD) != "c10::intrusive_ptr" || !isa<DeclRefExpr, MemberExpr>(G))
    return "";
  return C.text(G->getSourceRange());
}

bool GradAccessPlanner::isGroupSize(const Expr *X, StringRef Group) const {
  // Through implicit conversions, a converting constructor included (int -> c10::Scalar).
  for (int I = 0; I < 4; ++I) {
    X = X->IgnoreImplicit()->IgnoreParenImpCasts();
    if (const auto *CE = dyn_cast<CXXConstructExpr>(X); CE && CE->getNumArgs() == 1)
      X = CE->getArg(0);
    else
      break;
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(X))
    if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()); V && V->getInit())
      X = V->getInit()->IgnoreImplicit()->IgnoreParenImpCasts();
  const CXXMemberCallExpr *Size = memberCall(X, "getSize");
  return Size && groupOf(Size) == Group;
}

std::optional<GradAllReduce> GradAccessPlanner::matchGradAllReduce(const Stmt *S) const {
  const auto *FR = dyn_cast<CXXForRangeStmt>(S);
  if (!FR)
    return std::nullopt;
  // Over the parameters of the step's model or of one of its optimizers.
  ObjectRef Owner = parametersOwner(FR->getRangeInit());
  if (!Owner || !(T.forwardsModel(Owner) || T.stepsOptimizer(Owner)))
    return std::nullopt;
  const VarDecl *P = FR->getLoopVariable();
  std::vector<const Stmt *> Body;
  if (const auto *CS = dyn_cast<CompoundStmt>(FR->getBody()))
    Body.assign(CS->body_begin(), CS->body_end());
  else
    Body.push_back(FR->getBody());
  const VarDecl *Buffer = nullptr;
  GradAllReduce Out;
  bool Reduced = false;
  for (const Stmt *St : Body) {
    if (const auto *DS = dyn_cast<DeclStmt>(St)) { // std::vector<torch::Tensor> bufs{p.grad()};
      const auto *V = DS->isSingleDecl() ? dyn_cast<VarDecl>(DS->getSingleDecl()) : nullptr;
      if (Buffer || Reduced || !V || !V->getInit())
        return std::nullopt;
      GradOnly G(P);
      G.walk(V->getInit());
      if (G.Grads != 1 || G.Other != 0)
        return std::nullopt;
      Buffer = V;
      continue;
    }
    const auto *E = dyn_cast<Expr>(St);
    if (!E)
      return std::nullopt;
    E = E->IgnoreImplicit();
    // pg->allreduce(bufs)->wait();  or  pg->allreduce(bufs);
    const CXXMemberCallExpr *Reduce = memberCall(E, "allreduce");
    if (const CXXMemberCallExpr *Wait = memberCall(E, "wait")) {
      const auto *Arrow = dyn_cast<CXXOperatorCallExpr>(Wait->getImplicitObjectArgument()->IgnoreParenImpCasts());
      if (Arrow && Arrow->getOperator() == OO_Arrow && Arrow->getNumArgs() == 1)
        Reduce = memberCall(Arrow->getArg(0), "allreduce");
    }
    if (Reduce) {
      if (Reduced || Reduce->getNumArgs() < 1)
        return std::nullopt;
      for (unsigned I = 1; I < Reduce->getNumArgs(); ++I)
        if (!isa<CXXDefaultArgExpr>(Reduce->getArg(I)))
          return std::nullopt; // explicit options: maybe not a SUM
      const Expr *Arg = Reduce->getArg(0)->IgnoreImplicit()->IgnoreParenImpCasts();
      const auto *ArgRef = dyn_cast<DeclRefExpr>(Arg);
      if (!(Buffer && ArgRef && ArgRef->getDecl() == Buffer)) {
        GradOnly G(P);
        G.walk(Arg);
        if (G.Grads != 1 || G.Other != 0)
          return std::nullopt;
      }
      Out.Group = groupOf(Reduce);
      if (Out.Group.empty())
        return std::nullopt;
      Reduced = true;
      continue;
    }
    // p.grad().div_(world);  or  p.grad() /= world;
    const Expr *Divisor = nullptr;
    if (const CXXMemberCallExpr *Div = memberCall(E, "div_");
        Div && Div->getNumArgs() == 1 && isGradOf(Div->getImplicitObjectArgument(), P))
      Divisor = Div->getArg(0);
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E);
        OC && OC->getOperator() == OO_SlashEqual && OC->getNumArgs() == 2 && isGradOf(OC->getArg(0), P))
      Divisor = OC->getArg(1);
    if (!Divisor || !Reduced || Out.Average || !isGroupSize(Divisor, Out.Group))
      return std::nullopt;
    Out.Average = true;
  }
  if (!Reduced)
    return std::nullopt;
  return Out;
}

} // namespace ampmigrate
