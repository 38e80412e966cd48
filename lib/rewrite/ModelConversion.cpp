// Where and how the model is converted: the level (with a run-time flag), the dtype, the place.
#include "ModelConversion.h"
#include "clang/Lex/Lexer.h"

using namespace clang;

namespace ampmigrate {

namespace {

/// The autocast calls a guard's constructor makes (the guard's use is the scope).
class GuardCalls : public AstVisitor {
public:
  explicit GuardCalls(const RuleSet &Rules) : Rules(Rules) {}
  const RuleSet &Rules;
  std::vector<std::pair<const CallExpr *, const AutocastFunctionRule *>> Found;
  bool visitStmt(Stmt *S) override {
    if (const auto *CE = dyn_cast<CallExpr>(S))
      if (const FunctionDecl *FD = CE->getDirectCallee())
        if (const AutocastFunctionRule *R = Rules.autocastRule(qualifiedName(FD)))
          Found.push_back({CE, R});
    return true;
  }
};

/// `if (use_amp) { enable; ...forward...; disable; } else { ...forward...; }`: the if whose
/// branch holds the scope's calls beside other code, the other branch running without autocast;
/// its condition switches the scope (`OnWhenFalse` when the scope is in the else branch).
const Expr *branchFlag(const StepContext &C, const AutocastScope &S, bool &OnWhenFalse) {
  const ParentMap &PM = C.PM;
  if (!S.Enable || !S.Enable->Removable || S.Shape != AutocastScope::Kind::CallPair)
    return nullptr;
  const auto *Block = dyn_cast_or_null<CompoundStmt>(PM.getParent(S.Enable->Removable));
  const auto *If = Block ? dyn_cast_or_null<IfStmt>(PM.getParent(Block)) : nullptr;
  if (!If || If->getInit() || If->getConditionVariable() || If->isConstexpr() ||
      (If->getCond()->HasSideEffects(C.Ctx) && !onlyReads(If->getCond(), C.Ctx)))
    return nullptr;
  // The disable in the same branch: the scope is the branch's.
  if (!S.Disable || !S.Disable->Removable || PM.getParent(S.Disable->Removable) != Block)
    return nullptr;
  // The other branch must not switch autocast itself.
  if (const Stmt *Other = If->getThen() == Block ? If->getElse() : If->getThen()) {
    GuardCalls Calls(C.Rules);
    Calls.walk(Other);
    if (!Calls.Found.empty())
      return nullptr;
  }
  OnWhenFalse = If->getElse() == Block;
  return If->getCond();
}

} // namespace

const Stmt *removalUnit(const StepContext &C, const AutocastScope &S, const Stmt *St) {
  const ParentMap &PM = C.PM;
  const auto *Block = dyn_cast_or_null<CompoundStmt>(PM.getParent(St));
  const auto *If = Block ? dyn_cast_or_null<IfStmt>(PM.getParent(Block)) : nullptr;
  // A condition that only reads (`use_amp`, an optional scaler's truth) goes with the block.
  if (!If || If->getThen() != Block || If->getElse() || If->getInit() || If->getConditionVariable() ||
      (If->getCond()->HasSideEffects(C.Ctx) && !onlyReads(If->getCond(), C.Ctx)))
    return St;
  auto OfScope = [&](const Stmt *Child) {
    auto Is = [&](const AutocastCall *A) { return A && A->Removable == Child; };
    return Is(S.Enable) || Is(S.Disable) || llvm::any_of(S.Auxiliary, Is);
  };
  return llvm::all_of(Block->body(), OfScope) ? If : St;
}

const Expr *runTimeFlag(const StepContext &C, const AutocastScope &S, bool *OnWhenFalse) {
  if (OnWhenFalse)
    *OnWhenFalse = false;
  if (S.Enable && S.Enable->GuardCondition)
    return S.Enable->GuardCondition;
  // `if (bf16) { set_autocast_cpu_dtype(...); set_cpu_enabled(true); }`: the enable shares its
  // block with the scope's other calls, and the whole if goes with them (removalUnit).
  if (S.Enable && S.Enable->Removable)
    if (const auto *If = dyn_cast<IfStmt>(removalUnit(C, S, S.Enable->Removable)))
      return If->getCond();
  // `set_cpu_enabled(use_amp)`: the enable's own argument is the switch.
  if (S.Enable && S.Enable->Turns == AutocastCall::State::Unknown && S.Enable->Rule &&
      S.Enable->Rule->EnabledArg >= 0 &&
      (unsigned)S.Enable->Rule->EnabledArg < S.Enable->Call->getNumArgs())
    return S.Enable->Call->getArg(S.Enable->Rule->EnabledArg);
  bool Else = false;
  if (const Expr *Cond = branchFlag(C, S, Else)) {
    if (OnWhenFalse)
      *OnWhenFalse = Else;
    return Cond;
  }
  const auto *VD = S.GuardVar ? dyn_cast<VarDecl>(S.GuardVar) : nullptr;
  const auto *CE = VD && VD->getInit() ? dyn_cast<CXXConstructExpr>(VD->getInit()->IgnoreImplicit()) : nullptr;
  if (!CE || !CE->getConstructor())
    return nullptr;
  for (unsigned I = 0; I < CE->getNumArgs() && I < CE->getConstructor()->getNumParams(); ++I) {
    const Expr *A = CE->getArg(I);
    if (isa<CXXDefaultArgExpr>(A) || !CE->getConstructor()->getParamDecl(I)->getType()->isBooleanType())
      continue;
    bool Value;
    if (!A->isValueDependent() && A->EvaluateAsBooleanCondition(Value, C.Ctx))
      continue; // a constant: no run-time switch
    return A;
  }
  return nullptr;
}

bool ModelConversion::levelExpr(const AutocastScope &S, unsigned At, std::string &Out) {
  std::string Level = Tgt.LevelEnum + "::" + levelName(Opts.Level).str();
  bool OnWhenFalse = false;
  const Expr *Flag = runTimeFlag(C, S, &OnWhenFalse);
  if (!Flag) {
    Out = Level;
    return true;
  }
  // Every local the flag reads must exist where the model is converted.
  VariablesRead Refs;
  Refs.walk(Flag);
  for (const ValueDecl *D : Refs.Found) {
    const auto *V = dyn_cast<VarDecl>(D);
    // A parameter of a lambda of the step is declared where that lambda starts.
    bool LambdaParam = isa_and_nonnull<ParmVarDecl>(V) && V->getDeclContext() != FA.Function;
    if (!V || !(V->isLocalVarDecl() || LambdaParam) || C.off(V->getLocation()) < At)
      continue;
    block(Flag->getBeginLoc(), "autocast is switched by the run-time flag `" +
                                   C.text(Flag->getSourceRange()) + "`, which is declared after "
                                   "where the model is converted once (before the loop); "
                                   "declare it earlier or migrate by hand");
    return false;
  }
  std::string F = C.text(Flag->getSourceRange());
  const Expr *Bare = Flag->IgnoreParenImpCasts();
  if (!isa<DeclRefExpr, MemberExpr, CXXMemberCallExpr, CallExpr>(Bare) &&
      !(isa<UnaryOperator>(Bare) && cast<UnaryOperator>(Bare)->getOpcode() == UO_LNot))
    F = "(" + F + ")";
  // The flag keeps its value from the conversion on: assigned later, the conversion made once
  // would not follow it.
  for (const ValueDecl *D : Refs.Found) {
    ObjectRef R;
    R.Decl = D;
    for (unsigned W : writesOf(R))
      if (W >= At) {
        block(Flag->getBeginLoc(), "autocast is switched by the run-time flag `" +
                                       C.text(Flag->getSourceRange()) + "`, which is assigned "
                                       "at " + C.where(SM.getComposedLoc(File, W)) +
                                       ", after where the model is converted; the conversion "
                                       "would not follow it: migrate by hand");
        return false;
      }
  }
  std::string O0 = Tgt.LevelEnum + "::O0";
  Out = OnWhenFalse ? F + " ? " + O0 + " : " + Level : F + " ? " + Level + " : " + O0;
  return true;
}

std::string ModelConversion::deviceOf(const CallExpr *CE, const AutocastFunctionRule &R) const {
  if (R.DeviceArg < 0 || (unsigned)R.DeviceArg >= CE->getNumArgs())
    return R.Device;
  Expr::EvalResult Res;
  const Expr *Dev = CE->getArg(R.DeviceArg);
  if (Dev->isValueDependent() || !Dev->EvaluateAsRValue(Res, Ctx) || !Res.Val.isInt())
    return "";
  int64_t V = Res.Val.getInt().getExtValue();
  return V == 0 ? "cpu" : V == 1 ? "cuda" : "device-type-" + std::to_string(V);
}

bool ModelConversion::conversionArgs(const AutocastScope &S, unsigned At, std::string &Out) {
  std::string Device;
  if (!dtypeArg(S, At, Out, Device))
    return false;
  // CUDA's autocast scope did nothing for a model left on the CPU (a CUDA program's fallback):
  // the conversion keeps that, mixed precision on CUDA only. Named whether or not a dtype is.
  if (Device == "cuda" && !Tgt.CudaDeviceType.empty())
    Out += ", " + Tgt.CudaDeviceType;
  return true;
}

bool ModelConversion::dtypeArg(const AutocastScope &S, unsigned At, std::string &Out,
                           std::string &EnableDeviceOut) {
  Out.clear();
  struct DtypeCall {
    const CallExpr *Call;
    std::string Device;
  };
  std::vector<DtypeCall> Dtypes;
  std::string EnableDevice;
  const CXXConstructorDecl *GuardCtor = nullptr;
  const CXXConstructExpr *GuardUse = nullptr;
  if (S.Enable) {
    EnableDevice = S.Enable->Device;
    for (const AutocastCall *A : S.Auxiliary)
      if (A->Rule->Role == AutocastRole::Dtype)
        Dtypes.push_back({A->Call, A->Device});
    // A dtype set after the scope is closed (`set_autocast_dtype(dev, prev_dtype)` restoring the
    // saved one) is not the scope's, when one is set before.
    if (S.Disable) {
      unsigned Close = C.off(S.Disable->Call->getBeginLoc());
      auto After = [&](const DtypeCall &D) { return C.off(D.Call->getBeginLoc()) > Close; };
      if (!llvm::all_of(Dtypes, After))
        llvm::erase_if(Dtypes, After);
    }
  } else if (const auto *VD = S.GuardVar ? dyn_cast<VarDecl>(S.GuardVar) : nullptr) {
    const auto *CE = VD->getInit() ? dyn_cast<CXXConstructExpr>(VD->getInit()->IgnoreImplicit()) : nullptr;
    GuardUse = CE;
    GuardCtor = CE ? CE->getConstructor() : nullptr;
    if (!GuardCtor || !GuardCtor->hasBody())
      return true;
    GuardCalls G(Rules);
    G.walk(GuardCtor->getBody());
    for (const auto &[Call, R] : G.Found) {
      if (R->Role == AutocastRole::Enable && EnableDevice.empty())
        EnableDevice = deviceOf(Call, *R);
      else if (R->Role == AutocastRole::Dtype)
        Dtypes.push_back({Call, deviceOf(Call, *R)});
    }
  }
  EnableDeviceOut = EnableDevice;
  std::vector<const CallExpr *> Applies;
  for (const DtypeCall &D : Dtypes)
    if (EnableDevice.empty() || D.Device.empty() || D.Device == EnableDevice)
      Applies.push_back(D.Call);
  if (Applies.empty())
    return true;
  auto DtypeOf = [](const CallExpr *CE) { return CE->getArg(CE->getNumArgs() - 1); };
  // A dtype call in a macro body (`#define AMP_ON() { set_autocast_cpu_dtype(at::kBFloat16); ...
  // }`) has no text at the use: its tokens as the macro definition (or the macro's argument)
  // spells them, when they are one run of one file.
  auto DtypeText = [&](const Expr *E) {
    std::string T = C.text(E->getSourceRange());
    if (!T.empty() || !E->getBeginLoc().isMacroID())
      return T;
    SourceLocation B = SM.getSpellingLoc(E->getBeginLoc()), End = SM.getSpellingLoc(E->getEndLoc());
    if (SM.getFileID(B) != SM.getFileID(End) || SM.getFileOffset(End) < SM.getFileOffset(B))
      return T;
    return Lexer::getSourceText(CharSourceRange::getTokenRange(B, End), SM, Ctx.getLangOpts()).str();
  };
  for (const CallExpr *CE : Applies)
    if (!CE->getNumArgs()) {
      block(CE->getBeginLoc(), "the autocast dtype call has no argument");
      return false;
    }
  std::string Text = DtypeText(DtypeOf(Applies.front()));
  if (Text.empty()) {
    block(Applies.front()->getBeginLoc(), "the autocast dtype is built by a macro whose text "
                                          "cannot be carried over; convert the model with that "
                                          "dtype by hand");
    return false;
  }
  for (const CallExpr *CE : Applies)
    if (DtypeText(DtypeOf(CE)) != Text) {
      block(CE->getBeginLoc(), "the scope sets different autocast dtypes (`" + Text + "`, `" +
                                   DtypeText(DtypeOf(CE)) + "`) and which one "
                                   "applies to the model's device is not known; convert the "
                                   "model with the one it computes in by hand");
      return false;
    }
  // The dtype must exist where the model is converted: a constant, or a variable declared
  // before that point (not a parameter or local of a guard's constructor).
  const Expr *D = DtypeOf(Applies.front());
  // A parameter of the guard's constructor (`Guard(ScalarType dtype = kBFloat16)`): the argument
  // of this use, or the parameter's default when the use gives none.
  if (const auto *R = dyn_cast<DeclRefExpr>(D->IgnoreParenImpCasts()); R && GuardUse) {
    const auto *P = dyn_cast<ParmVarDecl>(R->getDecl());
    if (P && P->getDeclContext() == GuardCtor && P->getFunctionScopeIndex() < GuardUse->getNumArgs()) {
      const Expr *A = GuardUse->getArg(P->getFunctionScopeIndex());
      if (const auto *Def = dyn_cast<CXXDefaultArgExpr>(A)) {
        VariablesRead DefRefs;
        DefRefs.walk(Def->getExpr());
        bool Constant = llvm::none_of(DefRefs.Found, [](const ValueDecl *V) {
          const auto *VD = dyn_cast<VarDecl>(V);
          return VD && (VD->isLocalVarDecl() || isa<ParmVarDecl>(VD) || VD->isStaticDataMember());
        });
        if (Constant && !Def->getExpr()->getBeginLoc().isMacroID()) {
          D = Def->getExpr();
          GuardCtor = nullptr; // the default is spelled where the constructor is declared
        }
      } else if (!A->getBeginLoc().isMacroID()) {
        D = A;
        GuardCtor = nullptr;
      }
      if (!GuardCtor)
        Text = C.text(D->getSourceRange());
    }
  }
  const FunctionDecl *ScopeFn = F.CalleeScope == &S ? F.CalleeFA->Function : FA.Function;
  VariablesRead Refs;
  Refs.walk(D);
  for (const ValueDecl *V : Refs.Found) {
    const auto *VD = dyn_cast<VarDecl>(V);
    if (!VD || !(VD->isLocalVarDecl() || isa<ParmVarDecl>(VD)))
      continue;
    bool InGuard = GuardCtor && VD->getDeclContext() == GuardCtor;
    if (!InGuard && C.off(VD->getLocation()) < At && VD->getDeclContext() == ScopeFn)
      continue;
    if (!InGuard && isa<ParmVarDecl>(VD) && VD->getDeclContext() == ScopeFn)
      continue;
    block(D->getBeginLoc(), "autocast computes in the dtype `" + Text + "`, which " +
                                (InGuard ? std::string("the guard's constructor computes")
                                         : std::string("is declared after where the model is "
                                                       "converted once (before the loop)")) +
                                "; convert the model with that dtype by hand (" + Tgt.Convert +
                                "(model, level, dtype)) or migrate by hand");
    return false;
  }
  Out = ", " + Text;
  return true;
}

bool ModelConversion::conversionBeforeLoop(const ObjectRef &M, const Stmt *Anchor, unsigned &InsertAt) const {
  // A parameter or a data member exists before any loop of the body; a local must be
  // declared before the loop.
  const auto *VD = dyn_cast_or_null<VarDecl>(M.Decl);
  bool Outlives = isa_and_nonnull<ParmVarDecl>(M.Decl) || isa_and_nonnull<FieldDecl>(M.Decl);
  if (!Outlives && (!VD || !VD->isLocalVarDecl()))
    return false;
  unsigned DeclOff = Outlives ? 0 : C.off(VD->getLocation());
  const Stmt *Best = outermostLoop(Anchor, DeclOff, writesOf(M));
  if (!Best)
    return false;
  InsertAt = C.lineStart(C.off(Best->getBeginLoc()));
  return C.onlySpace(InsertAt, C.off(Best->getBeginLoc()));
}

bool ModelConversion::conversionBefore(const ObjectRef &M, const Stmt *Anchor, unsigned &InsertAt) const {
  const auto *VD = dyn_cast_or_null<VarDecl>(M.Decl);
  unsigned DeclOff = VD && VD->isLocalVarDecl() ? C.off(VD->getLocation()) : 0;
  const Stmt *Best = outermostLoop(Anchor, DeclOff, writesOf(M));
  if (!Best)
    Best = Anchor;
  if (Best->getBeginLoc().isMacroID())
    return false;
  InsertAt = C.lineStart(C.off(Best->getBeginLoc()));
  return C.onlySpace(InsertAt, C.off(Best->getBeginLoc()));
}

const Stmt *ModelConversion::outermostLoop(const Stmt *S, unsigned After,
                                       llvm::ArrayRef<unsigned> Writes) const {
  const Stmt *Best = nullptr;
  for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P)) {
    if (isa<LambdaExpr>(P))
      break;
    if (!isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
      continue;
    if (!isa_and_nonnull<CompoundStmt>(PM.getParent(P)) || P->getBeginLoc().isMacroID())
      break;
    unsigned Begin = C.off(P->getBeginLoc()), End = C.off(P->getEndLoc());
    if (After >= Begin)
      break; // declared inside this loop
    if (llvm::any_of(Writes, [&](unsigned W) { return W >= Begin && W <= End; }))
      break; // assigned anew in this loop (a model per fold)
    Best = P;
  }
  return Best;
}

std::vector<unsigned> ModelConversion::writesOf(const ObjectRef &M) const {
  std::vector<unsigned> Out;
  if (!M.Decl)
    return Out;
  struct Finder : AnalysedBodyVisitor {
    const ObjectRef &M;
    std::vector<const Expr *> &Found;
    Finder(const ObjectRef &M, std::vector<const Expr *> &Found) : M(M), Found(Found) {}
    bool names(const Expr *E) const { return E && resolveObject(E) == M; }
    bool visitStmt(Stmt *S) override {
      if (const auto *BO = dyn_cast<BinaryOperator>(S); BO && BO->isAssignmentOp() && names(BO->getLHS()))
        Found.push_back(BO);
      if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S);
          Op && Op->getOperator() == OO_Equal && Op->getNumArgs() == 2 && names(Op->getArg(0)))
        Found.push_back(Op);
      if (const auto *MC = dyn_cast<CXXMemberCallExpr>(S)) {
        const CXXMethodDecl *MD = MC->getMethodDecl();
        // `holder.reset(...)` / `opt.emplace(...)` / `.swap(o)` on the object itself (not through
        // `->`, which reaches the module).
        const auto *ME = dyn_cast<MemberExpr>(MC->getCallee()->IgnoreParenImpCasts());
        if (MD && MD->getIdentifier() && ME && !ME->isArrow() &&
            llvm::is_contained({"reset", "emplace", "swap"}, MD->getName()) &&
            names(MC->getImplicitObjectArgument()))
          Found.push_back(MC);
      }
      if (const auto *CE = dyn_cast<CallExpr>(S); CE && CE->getDirectCallee() &&
                                                  qualifiedName(CE->getDirectCallee()) == "std::swap")
        for (const Expr *A : CE->arguments())
          if (names(A))
            Found.push_back(CE);
      return true;
    }
  };
  std::vector<const Expr *> Found;
  Finder F(M, Found);
  F.walk(FA.Function->getBody());
  for (const Expr *E : Found)
    Out.push_back(C.off(E->getBeginLoc()));
  return Out;
}

} // namespace ampmigrate
