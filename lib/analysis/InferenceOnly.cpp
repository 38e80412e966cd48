// The inference-only rule: what each function of a translation unit calls, and which of them
// training code reaches.
#include "InferenceOnly.h"
#include "ampmigrate/CallSummaries.h"
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/ExpressionFacts.h"
#include "ampmigrate/GenericLambdas.h"
#include "ampmigrate/ShapeRecognisers.h"

#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SetVector.h"

using namespace clang;
namespace ampmigrate {

/// The functions a piece of code calls or names (a call's callee, a constructor, a function named
/// without being called), memoised per statement for one translation unit. CallSummary asks it for
/// every argument of every call; without the memo a chain of n operator calls (`a + b + ...`,
/// `os << x << y ...`, `opts()(...)(...)`) was walked once per enclosing call, and each of those
/// walks asked again for its own calls' arguments: exponential in n. With it every statement is
/// walked once (time linear in the size of the code, times the few distinct callees).
class CalleeMemo {
public:
  using Set = llvm::SmallVector<const FunctionDecl *, 4>;

  /// One key for a function, its redeclarations and its template's instantiations.
  static const FunctionDecl *key(const FunctionDecl *F) {
    if (const FunctionDecl *Pattern = F->getTemplateInstantiationPattern())
      F = Pattern;
    return F->getCanonicalDecl();
  }

  /// The function `S` itself calls or names (not what is under it), or null.
  static const FunctionDecl *namedBy(const Stmt *S) {
    if (const auto *CE = dyn_cast<CallExpr>(S)) {
      const FunctionDecl *F = CE->getDirectCallee();
      return F ? key(F) : nullptr;
    }
    if (const auto *CE = dyn_cast<CXXConstructExpr>(S))
      return CE->getConstructor() ? key(CE->getConstructor()) : nullptr;
    if (const auto *DRE = dyn_cast<DeclRefExpr>(S))
      if (const auto *F = dyn_cast<FunctionDecl>(DRE->getDecl()))
        return key(F);
    if (const auto *ME = dyn_cast<MemberExpr>(S))
      if (const auto *F = dyn_cast<FunctionDecl>(ME->getMemberDecl()))
        return key(F);
    return nullptr;
  }

  /// What `S` and everything under it calls or names (a lambda through its analysed body).
  const Set &of(const Stmt *S) {
    if (auto It = Memo.find(S); It != Memo.end())
      return It->second;
    Collector C(*this);
    C.walk(S);
    return Memo[S];
  }

private:
  /// A post-order walk: each statement's set is its own callee and its children's sets, stored as
  /// it finishes; a statement already known is not entered again.
  class Collector : public AnalysedBodyVisitor {
  public:
    explicit Collector(CalleeMemo &M) : M(M) { WrapsStmts = true; }
    bool traverseStmt(Stmt *S) override {
      if (auto It = M.Memo.find(S); It != M.Memo.end()) {
        if (!Frames.empty())
          Frames.back().insert(It->second.begin(), It->second.end());
        return true;
      }
      Frames.emplace_back();
      if (const FunctionDecl *F = namedBy(S))
        Frames.back().insert(F);
      descend(S);
      llvm::SmallSetVector<const FunctionDecl *, 4> Mine = std::move(Frames.back());
      Frames.pop_back();
      if (!Frames.empty())
        Frames.back().insert(Mine.begin(), Mine.end());
      M.Memo[S] = Set(Mine.begin(), Mine.end());
      return true;
    }

  private:
    CalleeMemo &M;
    std::vector<llvm::SmallSetVector<const FunctionDecl *, 4>> Frames;
  };

  llvm::DenseMap<const Stmt *, Set> Memo;
};

namespace {

/// What one function body calls, for the inference-only rule: whether it runs a backward pass,
/// and which functions it calls (lambdas in it count as its own code).
class CallSummary : public AnalysedBodyVisitor {
public:
  CallSummary(const RuleSet &Rules, CalleeMemo &Memo) : Rules(Rules), Memo(Memo) {}
  bool CallsBackward = false;
  const CallExpr *FirstBackward = nullptr;
  llvm::SmallPtrSet<const FunctionDecl *, 8> Callees;
  using Callback = TrainingReach::Callback;
  std::vector<Callback> Callbacks;

  static const FunctionDecl *key(const FunctionDecl *F) { return CalleeMemo::key(F); }

  bool visitStmt(Stmt *S) override {
    if (auto *CE = dyn_cast<CallExpr>(S))
      return visitCall(CE);
    if (const auto *CE = dyn_cast<CXXConstructExpr>(S)) {
      if (const CXXConstructorDecl *Ctor = CE->getConstructor())
        Callees.insert(key(Ctor));
      return true;
    }
    // A function named without being called (a callback, `&f`, `&C::m`) may run from here too.
    if (const auto *DRE = dyn_cast<DeclRefExpr>(S)) {
      if (const auto *F = dyn_cast<FunctionDecl>(DRE->getDecl()))
        Callees.insert(key(F));
      return true;
    }
    if (const auto *ME = dyn_cast<MemberExpr>(S))
      if (const auto *F = dyn_cast<FunctionDecl>(ME->getMemberDecl()))
        Callees.insert(key(F));
    return true;
  }

private:
  bool visitCall(CallExpr *CE) {
    const FunctionDecl *Callee = CE->getDirectCallee();
    if (!Callee) {
      // In a template: `f().backward()` on a dependent type may well be a tensor's.
      const Expr *C = CE->getCallee()->IgnoreParenImpCasts();
      DeclarationName Name;
      if (const auto *DM = dyn_cast<CXXDependentScopeMemberExpr>(C))
        Name = DM->getMember();
      else if (const auto *UM = dyn_cast<UnresolvedMemberExpr>(C))
        Name = UM->getMemberName();
      if (const IdentifierInfo *II = Name.getAsIdentifierInfo(); II && II->getName() == "backward")
        markBackward(CE);
      return true;
    }
    Callees.insert(key(Callee));
    if (isBackward(CE, Callee))
      markBackward(CE);
    addCallbacks(key(Callee), CE->arguments());
    return true;
  }

  /// The first backward pass is what a message names; an optimizer's step, zero_grad() or a
  /// clip only when there is none.
  void markBackward(const CallExpr *CE) {
    CallsBackward = true;
    bool Pass = false;
    if (const FunctionDecl *F = CE->getDirectCallee(); !F)
      Pass = true; // a dependent `.backward()`
    else if (const IdentifierInfo *II = F->getIdentifier())
      Pass = II->getName() == "backward" || II->getName() == "grad";
    if (!FirstBackward || (Pass && !FirstIsPass)) {
      FirstBackward = CE;
      FirstIsPass = Pass;
    }
  }
  bool FirstIsPass = false;

  const RuleSet &Rules;
  CalleeMemo &Memo;
  template <class Args> void addCallbacks(const FunctionDecl *Callee, Args Arguments) {
    Callback CB{Callee, {}};
    for (const Expr *A : Arguments) {
      const Expr *E = A->IgnoreImplicit()->IgnoreParenImpCasts();
      if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(E))
        E = MT->getSubExpr()->IgnoreImplicit();
      if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E))
        E = BT->getSubExpr()->IgnoreImplicit();
      if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
        if (const auto *F = dyn_cast<FunctionDecl>(DRE->getDecl())) {
          CB.Runs.push_back(key(F));
          continue;
        }
        if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()); V && V->getInit())
          E = V->getInit()->IgnoreImplicit();
      }
      if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->getOpcode() == UO_AddrOf)
        if (const auto *DRE = dyn_cast<DeclRefExpr>(U->getSubExpr()->IgnoreParenImpCasts()))
          if (const auto *F = dyn_cast<FunctionDecl>(DRE->getDecl()))
            CB.Runs.push_back(key(F));
      // The code of a lambda runs when the callee runs it; a call's result (in the argument, or
      // in the variable the argument names) is what the callee works on: a loss computed by
      // `forward_loss()` and handed to a step function that calls backward() is trained on.
      const Stmt *Code = E;
      if (const auto *LE = dyn_cast<LambdaExpr>(E))
        Code = analysedLambdaBody(LE);
      if (Code)
        CB.Runs.append(Memo.of(Code));
    }
    if (!CB.Runs.empty())
      Callbacks.push_back(std::move(CB));
  }
  /// A call that only training code makes: a backward pass, and also an optimizer's step() or
  /// zero_grad() or a gradient clip (a training function whose backward runs in a callee of
  /// another file still steps the optimizer here).
  bool isBackward(const CallExpr *CE, const FunctionDecl *Callee) const {
    const IdentifierInfo *II = Callee->getIdentifier();
    if (!II)
      return false;
    if (Rules.clipRule(qualifiedName(Callee)))
      return true;
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
      if ((II->getName() == "step" || II->getName() == "zero_grad") && MC->getMethodDecl() &&
          isDerivedFromAny(MC->getMethodDecl()->getParent(), Rules.OptimizerClasses))
        return true;
      return II->getName() == "backward" && MC->getImplicitObjectArgument() &&
             isTensorType(MC->getImplicitObjectArgument()->getType(), Rules);
    }
    if (II->getName() != "backward" && II->getName() != "grad")
      return false;
    std::string Q = qualifiedName(Callee);
    return Q == "torch::autograd::backward" || Q == "torch::autograd::grad";
  }
};

} // namespace

TrainingReach::TrainingReach(const RuleSet &Rules) : Rules(Rules), Memo(std::make_unique<CalleeMemo>()) {}

TrainingReach::~TrainingReach() = default;

const FunctionDecl *TrainingReach::key(const FunctionDecl *F) { return CalleeMemo::key(F); }

void TrainingReach::summariseCalls(const FunctionDecl *FD) {
  CallSummary CS(Rules, *Memo);
  CS.walk(FD->getBody());
  if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(FD))
    for (const CXXCtorInitializer *Init : Ctor->inits())
      CS.walk(Init->getInit());
  FunctionCalls &Entry = Calls[key(FD)];
  Entry.CallsBackward |= CS.CallsBackward;
  if (!Entry.FirstBackward)
    Entry.FirstBackward = CS.FirstBackward;
  Entry.Callees.insert(CS.Callees.begin(), CS.Callees.end());
  for (Callback &CB : CS.Callbacks)
    Callbacks.push_back(std::move(CB));
}

void TrainingReach::summariseCallees(const SourceManager &SM) {
  llvm::SmallPtrSet<const FunctionDecl *, 32> Visited;
  std::vector<const FunctionDecl *> Work;
  auto Consider = [&](const FunctionDecl *F) {
    if (!Calls.count(F) && Visited.insert(F).second)
      Work.push_back(F);
  };
  size_t CallbacksSeen = 0;
  auto ConsiderCallbacks = [&] {
    for (; CallbacksSeen < Callbacks.size(); ++CallbacksSeen)
      for (const FunctionDecl *F : Callbacks[CallbacksSeen].Runs)
        Consider(F);
  };
  for (const auto &[F, C] : Calls)
    for (const FunctionDecl *Callee : C.Callees)
      Consider(Callee);
  ConsiderCallbacks();
  while (!Work.empty()) {
    const FunctionDecl *F = Work.back();
    Work.pop_back();
    const FunctionDecl *Def = nullptr;
    if (!F->hasBody(Def) || !Def->getBody() || SM.isInSystemHeader(SM.getExpansionLoc(Def->getLocation())) ||
        Calls.count(key(Def)))
      continue;
    summariseCalls(Def);
    for (const FunctionDecl *Callee : Calls[key(Def)].Callees)
      Consider(Callee);
    ConsiderCallbacks();
  }
}

llvm::SmallPtrSet<const FunctionDecl *, 32> TrainingReach::trainingFunctions() const {
  llvm::SmallPtrSet<const FunctionDecl *, 32> Training;
  std::vector<const FunctionDecl *> Work;
  for (const auto &[F, C] : Calls)
    if (C.CallsBackward && Training.insert(F).second)
      Work.push_back(F);
  // What a training function calls trains; so does the code handed to one (a callback).
  for (bool Grew = true; Grew;) {
    while (!Work.empty()) {
      const FunctionDecl *F = Work.back();
      Work.pop_back();
      auto It = Calls.find(F);
      if (It == Calls.end())
        continue;
      for (const FunctionDecl *Callee : It->second.Callees)
        if (Training.insert(Callee).second)
          Work.push_back(Callee);
    }
    Grew = false;
    for (const Callback &CB : Callbacks)
      if (Training.contains(CB.Callee))
        for (const FunctionDecl *F : CB.Runs)
          if (Training.insert(F).second) {
            Work.push_back(F);
            Grew = true;
          }
  }
  return Training;
}

llvm::DenseMap<const FunctionDecl *, const CallExpr *> TrainingReach::backwardRunners() const {
  llvm::DenseMap<const FunctionDecl *, const CallExpr *> Runners;
  for (const auto &[F, C] : Calls)
    if (C.CallsBackward && C.FirstBackward)
      Runners[F] = C.FirstBackward;
  // A caller of a runner runs it too (through the first callee found to): up to a fixed point.
  for (bool Grew = true; Grew;) {
    Grew = false;
    for (const auto &[F, C] : Calls) {
      if (Runners.count(F))
        continue;
      for (const FunctionDecl *Callee : C.Callees)
        if (auto It = Runners.find(Callee); It != Runners.end()) {
          const CallExpr *Via = It->second;
          Runners[F] = Via;
          Grew = true;
          break;
        }
    }
  }
  return Runners;
}

llvm::SmallPtrSet<const FunctionDecl *, 32> TrainingReach::calledFunctions() const {
  llvm::SmallPtrSet<const FunctionDecl *, 32> Called;
  for (const auto &[F, C] : Calls)
    for (const FunctionDecl *Callee : C.Callees)
      if (Callee != F)
        Called.insert(Callee);
  for (const Callback &CB : Callbacks)
    Called.insert(CB.Runs.begin(), CB.Runs.end());
  return Called;
}

namespace {
/// The values a function body gives its variables, its calls and its returns (not a lambda's).
class ValueFlow : public AnalysedBodyVisitor {
public:
  ValueFlow() { WrapsStmts = true; }
  std::vector<std::pair<const VarDecl *, const Expr *>> Values;
  std::vector<const CallExpr *> Calls;
  std::vector<const ReturnStmt *> Returns;

  bool traverseStmt(Stmt *S) override {
    bool Lambda = isa<LambdaExpr>(S);
    LambdaDepth += Lambda;
    bool R = descend(S);
    LambdaDepth -= Lambda;
    return R;
  }
  bool visitStmt(Stmt *S) override {
    if (const auto *RS = dyn_cast<ReturnStmt>(S); RS && !LambdaDepth && RS->getRetValue())
      Returns.push_back(RS);
    else
      addValuesGiven(S, Values);
    if (const auto *CE = dyn_cast<CallExpr>(S); CE && CE->getDirectCallee())
      Calls.push_back(CE);
    return true;
  }

private:
  int LambdaDepth = 0;
};

bool namesLoss(llvm::StringRef Name) { return Name.lower().find("loss") != std::string::npos; }

/// Whether a value of type `T` is an optimizer or a scaler (or a reference, pointer or smart
/// pointer to one): what a function needs to train.
bool isTrainingObjectType(QualType T, const RuleSet &Rules) {
  for (int Depth = 0; Depth < 4 && !T.isNull(); ++Depth) {
    T = T.getNonReferenceType();
    if (T->isPointerType()) {
      T = T->getPointeeType();
      continue;
    }
    const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
    if (!RD)
      return false;
    if (isDerivedFromAny(RD, Rules.OptimizerClasses) || isScalerClass(RD, Rules))
      return true;
    const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(RD);
    if (!Spec || Spec->getTemplateArgs().size() == 0 ||
        Spec->getTemplateArgs()[0].getKind() != TemplateArgument::Type ||
        !llvm::is_contained(std::vector<StringRef>{"shared_ptr", "unique_ptr", "optional", "reference_wrapper"},
                            Spec->getName()))
      return false;
    T = Spec->getTemplateArgs()[0].getAsType();
  }
  return false;
}

/// Whether `E` calls a loss function: a callee, or the class of a called object (a loss module's
/// operator()), with "loss" in its name (`torch::mse_loss`, `lossFn`, `torch::nn::MSELoss`).
bool callsLoss(const Expr *E) {
  struct Calls : AstVisitor {
    bool Found = false;
    bool visitStmt(Stmt *St) override {
      if (const auto *CE = dyn_cast<CallExpr>(St))
        if (const auto *ND = dyn_cast_or_null<NamedDecl>(CE->getCalleeDecl())) {
          Found |= ND->getIdentifier() && namesLoss(ND->getName());
          if (const auto *MD = dyn_cast<CXXMethodDecl>(ND))
            Found |= namesLoss(MD->getParent()->getName());
        }
      if (const auto *DRE = dyn_cast<DeclRefExpr>(St))
        Found |= DRE->getDecl()->getIdentifier() && namesLoss(DRE->getDecl()->getName());
      return !Found;
    }
  } C;
  C.walk(E);
  return C.Found;
}
} // namespace

void TrainingReach::traceScopeValues(
    FunctionAnalysis &FA, const ASTContext &Ctx,
    const llvm::DenseMap<const FunctionDecl *, const CallExpr *> &Runners,
    const llvm::SmallPtrSetImpl<const FunctionDecl *> &Called, const CalleeFacts *Callees) const {
  if (FA.Scopes.empty())
    return;
  const SourceManager &SM = Ctx.getSourceManager();
  auto Off = [&](SourceLocation L) { return SM.getFileOffset(SM.getExpansionLoc(L)); };
  ValueFlow Flow;
  Flow.walk(FA.Function->getBody());
  const FunctionDecl *Self = key(FA.Function);
  bool Uncalled = !Called.contains(Self) && returnsTensors(FA.Function->getReturnType(), Rules);
  for (AutocastScope &S : FA.Scopes) {
    if (S.DisablesAutocast)
      continue;
    // The variables given a value in the scope, and after it from those.
    llvm::SmallPtrSet<const VarDecl *, 8> FromScope;
    for (const auto &[V, E] : Flow.Values)
      if (Off(E->getBeginLoc()) >= S.Begin && Off(E->getBeginLoc()) <= S.End)
        FromScope.insert(V);
    for (bool Grew = !FromScope.empty(); Grew;) {
      Grew = false;
      for (const auto &[V, E] : Flow.Values)
        if (Off(E->getBeginLoc()) > S.End && !FromScope.contains(V) && refersToAny(E, FromScope))
          Grew |= FromScope.insert(V).second;
    }
    auto FromHere = [&](const Expr *E) {
      unsigned O = Off(E->getBeginLoc());
      return (O >= S.Begin && O <= S.End) || refersToAny(E, FromScope);
    };
    for (const CallExpr *CE : Flow.Calls) {
      if (Off(CE->getBeginLoc()) <= S.Begin)
        continue;
      auto It = Runners.find(key(CE->getDirectCallee()));
      if (It == Runners.end() || key(CE->getDirectCallee()) == Self)
        continue;
      if (llvm::any_of(CE->arguments(), [&](const Expr *A) { return FromHere(A); })) {
        S.HandedTo = CE;
        S.HandedToBackward = It->second;
        break;
      }
    }
    // A function whose body is not here (another file's, not a system header's), handed an
    // optimizer or a scaler in the scope or after it: it may train there.
    if (!S.HandedTo)
      for (const CallExpr *CE : Flow.Calls) {
        const FunctionDecl *Callee = CE->getDirectCallee();
        const FunctionDecl *Def = nullptr;
        if (Off(CE->getBeginLoc()) <= S.Begin || Callee->hasBody(Def) ||
            SM.isInSystemHeader(SM.getExpansionLoc(Callee->getLocation())))
          continue;
        // A scaler's or an optimizer's own methods are what the rules say they are.
        if (const auto *MD = dyn_cast<CXXMethodDecl>(Callee);
            MD && (isScalerClass(MD->getParent(), Rules) || isDerivedFromAny(MD->getParent(), Rules.OptimizerClasses)))
          continue;
        if (llvm::any_of(CE->arguments(), [&](const Expr *A) { return isTrainingObjectType(A->getType(), Rules); })) {
          S.HandedToUnseen = CE;
          break;
        }
      }
    // A loss: the function's name says so, or a loss function computes what it returns.
    auto IsLoss = [&](const Expr *Ret) {
      if (FA.Function->getIdentifier() && namesLoss(FA.Function->getName()))
        return true;
      if (callsLoss(Ret))
        return true;
      return llvm::any_of(Flow.Values, [&](const auto &VE) {
        llvm::SmallPtrSet<const VarDecl *, 1> One{VE.first};
        return FromScope.contains(VE.first) && refersToAny(Ret, One) && callsLoss(VE.second);
      });
    };
    if (Uncalled)
      for (const ReturnStmt *RS : Flow.Returns)
        if (Off(RS->getBeginLoc()) > S.Begin && FromHere(RS->getRetValue()) && IsLoss(RS->getRetValue())) {
          S.ReturnedUncalled = RS;
          break;
        }
    // Returned to callers in other files: one that trains with it makes this a training scope,
    // whatever this file's callers (an evaluation loop) do with it.
    if (!S.HandedTo && !S.HandedToUnseen && !S.ReturnedUncalled && Callees &&
        FA.Function->isExternallyVisible() && returnsTensors(FA.Function->getReturnType(), Rules))
      for (const ReturnStmt *RS : Flow.Returns)
        if (Off(RS->getBeginLoc()) > S.Begin && RS->getRetValue() && FromHere(RS->getRetValue())) {
          CalleeAnswer Caller = Callees->trainingCaller(FA.Function->getCanonicalDecl());
          if (Caller.K == CalleeAnswer::Kind::Yes) {
            S.ReturnedToTrainer = RS;
            S.TrainerName = Caller.Function;
            S.TrainerBackward = Caller.Where;
          }
          break;
        }
  }
}

} // namespace ampmigrate
