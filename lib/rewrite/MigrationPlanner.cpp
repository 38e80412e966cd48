// Plans the edits that turn one training step into the explicit-gradient form: the forward region
// becomes a function handed to value_and_grad, the scaler takes the grads, clipping works on
// them, the model is converted once, the scaler's type changes, the include is added.
#include "ampmigrate/IncludeInsertion.h"
#include "ampmigrate/MigrationPlan.h"
#include "ampmigrate/StepFinder.h"
#include "ampmigrate/GenericLambdas.h"
#include "ModelQueries.h"
#include "RegionDeclarations.h"
#include "SplitSteps.h"
#include "StepLambda.h"

#include "clang/AST/ParentMap.h"
#include "clang/Basic/SourceManager.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"
#include "clang/AST/ParentMapContext.h"
#include "llvm/Support/Path.h"
#include <map>
#include <optional>
#include <set>
#include <tuple>

using namespace clang;
namespace ampmigrate {

namespace {

class NameCollector : public AnalysedBodyVisitor<NameCollector> {
public:
  llvm::StringSet<> Names;
  bool VisitNamedDecl(NamedDecl *D) {
    if (D->getIdentifier())
      Names.insert(D->getName());
    return true;
  }
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    if (E->getDecl()->getIdentifier())
      Names.insert(E->getDecl()->getName());
    return true;
  }
};

/// Every variable an expression reads.
class VariablesRead : public AnalysedBodyVisitor<VariablesRead> {
public:
  std::vector<const ValueDecl *> Found;
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    Found.push_back(E->getDecl());
    return true;
  }
};

class RefCollector : public AnalysedBodyVisitor<RefCollector> {
public:
  const ValueDecl *Target;
  std::vector<const Expr *> Refs;
  explicit RefCollector(const ValueDecl *T) : Target(T) {}
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    if (E->getDecl() == Target)
      Refs.push_back(E);
    return true;
  }
  bool VisitMemberExpr(MemberExpr *E) {
    if (E->getMemberDecl() == Target)
      Refs.push_back(E);
    return true;
  }
};

class ControlFlowCollector : public RecursiveASTVisitor<ControlFlowCollector> {
public:
  const Stmt *Escape = nullptr; ///< return/break/continue/goto/co_return leaving the region
  int LoopDepth = 0;
  bool TraverseLambdaExpr(LambdaExpr *) { return true; } // a nested function: its returns are its own
  bool TraverseForStmt(ForStmt *S) { return loop(S); }
  bool TraverseWhileStmt(WhileStmt *S) { return loop(S); }
  bool TraverseDoStmt(DoStmt *S) { return loop(S); }
  bool TraverseCXXForRangeStmt(CXXForRangeStmt *S) { return loop(S); }
  bool TraverseSwitchStmt(SwitchStmt *S) { return loop(S); }
  template <typename T> bool loop(T *S) {
    ++LoopDepth;
    RecursiveASTVisitor::TraverseStmt(S->getBody());
    --LoopDepth;
    return true;
  }
  bool VisitReturnStmt(ReturnStmt *S) { return found(S); }
  bool VisitGotoStmt(GotoStmt *S) { return found(S); }
  bool VisitCoreturnStmt(CoreturnStmt *S) { return found(S); }
  bool VisitCoawaitExpr(CoawaitExpr *E) { return found(E); }
  bool VisitCoyieldExpr(CoyieldExpr *E) { return found(E); }
  bool VisitBreakStmt(BreakStmt *S) { return LoopDepth ? true : found(S); }
  bool VisitContinueStmt(ContinueStmt *S) { return LoopDepth ? true : found(S); }
  bool found(const Stmt *S) {
    if (!Escape)
      Escape = S;
    return true;
  }
};

class StepPlanner {
public:
  StepPlanner(ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
              const TrainingStep &T, const PlannerOptions &Opts, llvm::StringSet<> &UsedNames,
              const TargetApi &Tgt, const TranslationUnitAnalysis &TU)
      : Ctx(Ctx), SM(Ctx.getSourceManager()), LO(Ctx.getLangOpts()), Rules(Rules), FA(FA), T(T),
        Opts(Opts), PM(FA.Function->getBody()), UsedNames(UsedNames), Tgt(Tgt), TU(TU) {
    graftLambdaBodies(PM, FA.Function->getBody());
  }

  MigrationPlan plan() {
    MigrationPlan P;
    P.Step = &T;
    P.Function = &FA;
    planAll();
    if (Accumulate && !GradsDecl.empty())
      insertAt(GradsDeclAt, GradsDecl);
    for (const auto &[At, Text] : Insertions)
      Edits.push_back({At, 0, Text});
    P.Accumulates = Accumulate;
    P.CalleeFunction = CalleeFA;
    P.CalleeScope = CalleeScope;
    P.Blockers = std::move(Blockers);
    P.ScalerHolders = FlowHolders;
    if (Split)
      P.SplitOther = Split->ScalingHalf == &T ? Split->SteppingHalf : Split->ScalingHalf;
    if (P.Blockers.empty()) {
      std::set<std::tuple<unsigned, unsigned, std::string>> Seen;
      for (const Edit &E : Edits)
        if (Seen.insert({E.Offset, E.Length, E.Text}).second)
          P.Edits.emplace_back(FilePath, E.Offset, E.Length, E.Text);
      std::set<std::tuple<std::string, unsigned, unsigned, std::string>> SeenElsewhere;
      for (const tooling::Replacement &R : OtherFileEdits)
        if (SeenElsewhere.insert({R.getFilePath().str(), R.getOffset(), R.getLength(),
                                  R.getReplacementText().str()}).second)
          P.Edits.push_back(R);
    }
    return P;
  }

private:
  ASTContext &Ctx;
  const SourceManager &SM;
  const LangOptions &LO;
  const RuleSet &Rules;
  const FunctionAnalysis &FA;
  const TrainingStep &T;
  const PlannerOptions &Opts;
  ParentMap PM;
  llvm::StringSet<> &UsedNames;
  /// The target names as the edits spell them (globally qualified when needed).
  const TargetApi &Tgt;
  const TranslationUnitAnalysis &TU;
  std::vector<Blocker> Blockers;
  std::vector<Edit> Edits;
  FileID File;
  std::string FilePath;
  StringRef Buffer;

  std::string GradsName, GradFnName, ValueName, OptParams;
  /// Gradient accumulation: the grads of several micro-steps are summed into `GradsName`,
  /// declared at GradsDeclAt (before the loop that runs the steps).
  bool Accumulate = false;
  unsigned GradsDeclAt = 0;
  /// Several optimizers: each one's list of grads (split from GradsName), and the optimizers as
  /// written, comma-separated.
  std::vector<std::pair<ObjectRef, std::string>> PerOptimizer;
  std::string OptimizerArgs;
  const std::string &gradsFor(const ObjectRef &Optimizer) const {
    for (const auto &[O, Name] : PerOptimizer)
      if (O == Optimizer)
        return Name;
    return GradsName;
  }
  std::string GradsDecl; ///< inserted after a model conversion planned at the same place
  /// Insertions by offset; several at one offset join in the order planned.
  std::map<unsigned, std::string> Insertions;
  void insertAt(unsigned At, const std::string &Text) { Insertions[At] += Text; }

  void block(SourceLocation L, std::string Why) { Blockers.push_back({L, std::move(Why)}); }
  /// Where the step's reasons about the scaler go: its first step(), or its backward in the
  /// scaling half of a step split over two methods.
  SourceLocation stepLoc() const {
    return !T.Steps.empty() ? T.Steps.front()->Call->getBeginLoc()
                            : T.Backwards.front()->Backward->getBeginLoc();
  }

  unsigned off(SourceLocation L) const { return SM.getFileOffset(SM.getExpansionLoc(L)); }

  std::string text(SourceRange R) const { return StepFinder::textOf(Ctx, R); }

  std::string freshName(StringRef Base) {
    std::string N = Base.str();
    for (int I = 2; UsedNames.contains(N); ++I)
      N = (Base + std::to_string(I)).str();
    UsedNames.insert(N);
    return N;
  }

  /// File char range of a statement including its trailing semicolon; invalid if in a macro body.
  CharSourceRange stmtRange(const Stmt *S) const {
    SourceLocation B = S->getBeginLoc(), E = S->getEndLoc();
    if (B.isMacroID() || E.isMacroID()) {
      // The whole statement must be one macro use (`AMP_ON();`): take the use.
      CharSourceRange R = Lexer::makeFileCharRange(CharSourceRange::getTokenRange(B, E), SM, LO);
      if (R.isInvalid())
        return R;
      B = R.getBegin();
      E = R.getEnd();
    } else {
      E = Lexer::getLocForEndOfToken(E, 0, SM, LO);
    }
    // Swallow the `;` that ends an expression statement (not part of the Stmt's range).
    // An `if`/loop ends with its last sub-statement: `if (c) f();` needs the `;` too, and so
    // does a macro use whose expansion is a block (`AMP_ON();`).
    const Stmt *Tail = S;
    for (int I = 0; I < 16 && Tail; ++I) {
      if (const auto *If = dyn_cast<IfStmt>(Tail))
        Tail = If->getElse() ? If->getElse() : If->getThen();
      else if (const auto *F = dyn_cast<ForStmt>(Tail))
        Tail = F->getBody();
      else if (const auto *W = dyn_cast<WhileStmt>(Tail))
        Tail = W->getBody();
      else if (const auto *FR = dyn_cast<CXXForRangeStmt>(Tail))
        Tail = FR->getBody();
      else
        break;
    }
    bool EndsWithBlock = Tail && isa<CompoundStmt>(Tail) && !Tail->getEndLoc().isMacroID();
    if (!EndsWithBlock) {
      Token Tok;
      SourceLocation After = E;
      if (!Lexer::getRawToken(After, Tok, SM, LO, /*IgnoreWhiteSpace=*/true) && Tok.is(tok::semi))
        E = Tok.getEndLoc();
    }
    return CharSourceRange::getCharRange(B, E);
  }

  unsigned lineStart(unsigned O) const {
    while (O > 0 && Buffer[O - 1] != '\n')
      --O;
    return O;
  }
  unsigned lineEnd(unsigned O) const { // offset just past the '\n'
    while (O < Buffer.size() && Buffer[O] != '\n')
      ++O;
    return O < Buffer.size() ? O + 1 : O;
  }
  std::string indentAt(unsigned O) const {
    unsigned S = lineStart(O), E = S;
    while (E < Buffer.size() && (Buffer[E] == ' ' || Buffer[E] == '\t'))
      ++E;
    return Buffer.substr(S, E - S).str();
  }
  bool onlySpace(unsigned B, unsigned E) const {
    for (unsigned I = B; I < E; ++I)
      if (Buffer[I] != ' ' && Buffer[I] != '\t' && Buffer[I] != '\r')
        return false;
    return true;
  }

  /// Deletion of a whole statement: the full line when nothing else is on it.
  bool removal(const Stmt *S, Edit &Out) const {
    CharSourceRange R = stmtRange(S);
    if (R.isInvalid() || SM.getFileID(R.getBegin()) != File)
      return false;
    unsigned B = SM.getFileOffset(R.getBegin()), E = SM.getFileOffset(R.getEnd());
    unsigned LS = lineStart(B), LE = lineEnd(E);
    unsigned EOL = LE > 0 && LE <= Buffer.size() && Buffer[LE - 1] == '\n' ? LE - 1 : LE;
    if (onlySpace(LS, B) && onlySpace(E, EOL)) {
      Out = {LS, LE - LS, ""};
      return true;
    }
    // A comment after the statement keeps its line, at the statement's indentation.
    unsigned C = E;
    while (C < EOL && (Buffer[C] == ' ' || Buffer[C] == '\t'))
      ++C;
    if (onlySpace(LS, B) && StringRef(Buffer).substr(C).starts_with("//"))
      E = C;
    Out = {B, E - B, ""};
    return true;
  }

  bool fileRange(SourceRange R, unsigned &B, unsigned &E) const {
    CharSourceRange CR = CharSourceRange::getTokenRange(R);
    if (R.getBegin().isMacroID() || R.getEnd().isMacroID()) {
      // Only macro arguments can be edited, at their spelling in the file.
      if (!SM.isMacroArgExpansion(R.getBegin()) || !SM.isMacroArgExpansion(R.getEnd()))
        return false;
      CR = CharSourceRange::getTokenRange(SM.getSpellingLoc(R.getBegin()), SM.getSpellingLoc(R.getEnd()));
    }
    CR = Lexer::makeFileCharRange(CR, SM, LO);
    if (CR.isInvalid() || SM.getFileID(CR.getBegin()) != File)
      return false;
    B = SM.getFileOffset(CR.getBegin());
    E = SM.getFileOffset(CR.getEnd());
    return true;
  }

  const CompoundStmt *parentCompound(const Stmt *S) const {
    return dyn_cast_or_null<CompoundStmt>(PM.getParent(S));
  }

  /// The ancestor of `S` (or S) whose parent is `C`.
  const Stmt *childOf(const Stmt *S, const CompoundStmt *C) const {
    for (const Stmt *Cur = S; Cur; Cur = PM.getParent(Cur))
      if (PM.getParent(Cur) == C)
        return Cur;
    return nullptr;
  }

  bool within(const Stmt *S, const Stmt *Ancestor) const {
    for (const Stmt *Cur = S; Cur; Cur = PM.getParent(Cur))
      if (Cur == Ancestor)
        return true;
    return false;
  }

  std::string modelText(const ObjectRef &M) const {
    if (M.IsThis)
      return "*this";
    return M.Decl->getName().str();
  }

  /// What value_and_grad differentiates: every parameter of every group of the optimizer
  /// (`amp::parameters_of(opt)`; Optimizer::parameters() is the first group only, and libtorch 1.x
  /// warns on each call). Without that target in the rules: `opt.parameters()`.
  std::string optimizerParams(const ScalerCall *C) const {
    if (!Tgt.ParametersOf.empty())
      return Tgt.ParametersOf + "(" + text(C->OptimizerArg->getSourceRange()) + ")";
    const Expr *A = C->OptimizerArg->IgnoreParenImpCasts();
    if (const auto *U = dyn_cast<UnaryOperator>(A); U && U->getOpcode() == UO_Deref)
      return text(U->getSubExpr()->getSourceRange()) + "->parameters()";
    // `*opt` on a smart pointer is an operator call: `opt->parameters()`.
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(A);
        OC && OC->getOperator() == OO_Star && OC->getNumArgs() == 1)
      return text(OC->getArg(0)->getSourceRange()) + "->parameters()";
    QualType QT = A->getType();
    bool Pointer = QT->isPointerType();
    if (const CXXRecordDecl *RD = QT.getNonReferenceType()->getAsCXXRecordDecl()) {
      std::string N = qualifiedName(RD);
      Pointer = Pointer || N == "std::shared_ptr" || N == "std::unique_ptr";
    }
    return text(A->getSourceRange()) + (Pointer ? "->parameters()" : ".parameters()");
  }

  // ---- the parts of the plan ------------------------------------------------------------------

  /// A scale() of the step's scaler that backward() runs on only through a larger expression
  /// (`(use_amp ? scaler.scale(loss) : loss).backward()`): there is a scaled backward, just not
  /// one of the shapes the rewrite knows. Reported at the backward with what to write instead.
  bool blockScaleInsideBackwardReceiver() {
    for (const ScalerCall &SC : FA.ScalerCalls) {
      if (SC.Kind != ScalerCall::Method::Scale || (T.Scaler && !(SC.Scaler == T.Scaler)))
        continue;
      for (const Stmt *P = PM.getParent(SC.Call); P; P = PM.getParent(P)) {
        const auto *MC = dyn_cast<CXXMemberCallExpr>(P);
        const CXXMethodDecl *MD = MC ? MC->getMethodDecl() : nullptr;
        if (!MD || !MD->getIdentifier() || MD->getName() != "backward" ||
            !within(SC.Call, MC->getImplicitObjectArgument()))
          continue;
        const Expr *Recv = MC->getImplicitObjectArgument();
        block(MC->getBeginLoc(),
              "backward() runs on `" + firstLine(text(Recv->getSourceRange())) +
                  "`, which holds the scale() call inside a larger expression; write the scaled "
                  "and the plain path as `if (...) scaler.scale(loss).backward(); else "
                  "loss.backward();` (rewritten as a mixed step) or migrate this step by hand");
        return true;
      }
    }
    return false;
  }

  void planAll() {
    const Stmt *Body = FA.Function->getBody();
    SourceLocation FnLoc = FA.Function->getLocation();
    File = SM.getFileID(SM.getExpansionLoc(Body->getBeginLoc()));
    FilePath = SM.getFileEntryRefForID(File) ? SM.getFileEntryRefForID(File)->getName().str() : "";
    Buffer = SM.getBufferData(File);

    for (const SourceRange &R : FA.InactiveAmpCode)
      block(R.getBegin(), "AMP code under an inactive preprocessor branch in this function; "
                          "migrate each configuration by hand or run once per configuration");
    if ((Split = findSplitStep(TU, FA, T))) {
      planSplitHalf();
      return;
    }
    if (T.Backwards.empty() && blockScaleInsideBackwardReceiver())
      return;
    if (T.Backwards.empty()) {
      block(T.Steps.empty() ? FnLoc : T.Steps.front()->Call->getBeginLoc(),
            "no scaled backward (scaler.scale(loss).backward()) in this function; the scope, "
            "scaling and stepping are in different functions");
      return;
    }
    if (T.Steps.empty()) {
      block(T.Backwards.front()->Backward->getBeginLoc(),
            "the scaler's step() is not in this function; scaling and stepping in different "
            "functions cannot be rewritten together");
      return;
    }
    if (auto Why = lambdaBoundaryBlocker(T, FA.Function, PM, Ctx)) {
      block(Why->Loc, Why->Reason);
      return;
    }
    if (!T.Scope && !findCalleeScope()) {
      if (Blockers.empty())
        block(T.Backwards.front()->Backward->getBeginLoc(),
              "no autocast scope precedes this scaled backward in this function, so the forward "
              "pass to hand to amp::value_and_grad is unknown");
      return;
    }
    if (!planSeveralBackwards())
      return;
    for (const ScalerCall *S : T.Steps)
      if (!S->Optimizer || !S->OptimizerArg) {
        block(S->Call->getBeginLoc(), "the optimizer of this step() could not be identified");
        return;
      }
    for (size_t I = 0; I < T.Steps.size(); ++I)
      for (size_t J = 0; J < I; ++J)
        if (T.Steps[I]->Optimizer == T.Steps[J]->Optimizer) {
          block(T.Steps[I]->Call->getBeginLoc(), "step() called more than once for one backward");
          return;
        }
    for (const ScalerCall *U : T.Unscales)
      if (!llvm::any_of(T.Steps, [&](const ScalerCall *S) { return S->Optimizer == U->Optimizer; })) {
        block(U->Call->getBeginLoc(), "unscale_() of an optimizer that no step() of this step uses");
        return;
      }
    GradsName = freshName("grads");
    GradFnName = freshName("grad_fn");
    if (T.Steps.size() == 1) {
      OptParams = optimizerParams(T.Steps.front());
    } else {
      // One loss, several optimizers sharing the scaler: grads w.r.t. all their parameters, then
      // one list per optimizer for its unscale_/step.
      if (Tgt.ParametersOf.empty() || Tgt.SplitGrads.empty()) {
        block(T.Steps[1]->Call->getBeginLoc(), "several optimizers step with one scaled loss; the "
                                                "rules name no target.parameters-of / split-grads");
        return;
      }
      std::string Args;
      for (const ScalerCall *S : T.Steps) {
        std::string Arg = text(S->OptimizerArg->getSourceRange());
        Args += (Args.empty() ? "" : ", ") + Arg;
        std::string Base = S->Optimizer.Decl ? S->Optimizer.Decl->getName().str() : "opt";
        while (!Base.empty() && Base.back() == '_')
          Base.pop_back();
        PerOptimizer.push_back({S->Optimizer, freshName("grads_" + Base)});
      }
      OptimizerArgs = Args;
      OptParams = Tgt.ParametersOf + "(" + Args + ")";
    }

    const ImplicitBackward &B = *T.Backwards.front();
    if (T.mixed() && !planMixed(B))
      return;
    planRegion(B);
    if (T.Unscaled)
      planOptimizerSteps(T.Steps);
    else
      planScalerCalls();
    if (T.mixed()) {
      planOptimizerSteps(T.Plain.Steps);
      planMixedBackwards(B);
    }
    planClips();
    planGradAccesses();
    planZeroGrads(B);
    if (!T.Unscaled)
      planScalerDecl();
    planInclude();
  }

  // ---- a step split over two methods of one class ---------------------------------------------
  // The grads travel as a new member of the class. `.grad` accumulated until a zero_grad(); the
  // member does the same: each backward's grads are added to it (amp::accumulate_grads) and
  // each zero_grad() of the optimizer or the model, in either method, clears it. Exact when no
  // other method of the class clears or reads `.grad`, which is checked.

  std::optional<SplitStep> Split;
  std::vector<const ZeroGradCall *> SplitZeroGrads;
  llvm::ArrayRef<const ZeroGradCall *> stepZeroGrads() const {
    if (Split)
      return SplitZeroGrads;
    return T.ZeroGrads;
  }

  /// The member's name: `grads_`, or another that no member of the class has.
  static std::string memberName(const CXXRecordDecl *Class) {
    auto Taken = [&](StringRef N) {
      for (const Decl *D : Class->decls())
        if (const auto *ND = dyn_cast<NamedDecl>(D); ND && ND->getIdentifier() && ND->getName() == N)
          return true;
      return false;
    };
    std::string N = "grads_";
    for (int I = 2; Taken(N); ++I)
      N = "grads" + std::to_string(I) + "_";
    return N;
  }

  void planSplitHalf() {
    const SplitStep &S = *Split;
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
        SplitZeroGrads.push_back(&Z);
    // Nothing else in the class may clear or read .grad: the member would not see it.
    if (const std::string Other = otherGradUse(Class, S); !Other.empty()) {
      Refuse(Other);
      return;
    }
    GradsName = memberName(Class);
    Accumulate = true;
    if (Tgt.Accumulate.empty()) {
      Refuse("the rules name no target.accumulate to sum them");
      return;
    }
    if (Scaling) {
      GradFnName = freshName("grad_fn");
      OptParams = optimizerParams(Step);
      if (!T.Scope) {
        Refuse("no autocast scope precedes the scaled backward in its method");
        return;
      }
      AllBackwards.assign(T.Backwards.begin(), T.Backwards.end());
      planRegion(*T.Backwards.front());
      planClips();
      planGradAccesses();
      planZeroGrads(*T.Backwards.front());
      planScalerDecl();
      planInclude();
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
      std::string Member = Ind + "std::vector<torch::Tensor> " + GradsName + "; // the grads from " +
                           S.Scaling->Function->getNameAsString() + "() to " +
                           S.Stepping->Function->getNameAsString() + "()\n";
      SourceLocation At = SM.getLocForStartOfFile(SM.getFileID(FieldEnd)).getLocWithOffset(NL + 1);
      if (SM.getFileID(FieldEnd) == File)
        insertAt(NL + 1, Member);
      else {
        OtherFileEdits.emplace_back(SM, CharSourceRange::getCharRange(At, At), Member, LO);
        OtherFilesEdited.insert(SM.getFileID(FieldEnd));
      }
      return;
    }
    planScalerCalls();
    planClips();
    planGradAccesses();
    planZeroGrads(*ScalingT.Backwards.front());
    planScalerDecl();
  }

  /// A statement of another method of the class that calls zero_grad() or reads or writes .grad
  /// (described), or "".
  std::string otherGradUse(const CXXRecordDecl *Class, const SplitStep &S) const {
    class Uses : public AnalysedBodyVisitor<Uses> {
    public:
      const CallExpr *Found = nullptr;
      bool VisitCallExpr(CallExpr *CE) {
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
      Uses U;
      U.TraverseStmt(Def->getBody());
      if (U.Found)
        return "`" + firstLine(text(U.Found->getSourceRange())) + "` in '" + Def->getNameAsString() +
               "' (" + where(U.Found->getBeginLoc()) + ") clears or touches .grad outside the two "
               "methods, which the member would not follow";
    }
    return "";
  }

  /// Several losses, each `scaler.scale(loss_i).backward()`, as consecutive statements of one
  /// block (PyTorch's multi-loss pattern, the first with retain_graph): `.grad` held the sum of
  /// their grads, which is the grad of the sum of the scaled losses. The function handed to
  /// value_and_grad returns that sum.
  std::vector<const ImplicitBackward *> AllBackwards;
  bool planSeveralBackwards() {
    AllBackwards.assign(T.Backwards.begin(), T.Backwards.end());
    llvm::sort(AllBackwards, [&](const ImplicitBackward *A, const ImplicitBackward *B) {
      return off(A->Backward->getBeginLoc()) < off(B->Backward->getBeginLoc());
    });
    if (AllBackwards.size() == 1)
      return true;
    const ImplicitBackward *First = AllBackwards.front();
    const CompoundStmt *C = First->BackwardStmt ? parentCompound(First->BackwardStmt) : nullptr;
    for (size_t I = 0; I < AllBackwards.size(); ++I) {
      const ImplicitBackward *B = AllBackwards[I];
      bool Consecutive = false;
      if (C && B->BackwardStmt && !B->ScaleStmt && parentCompound(B->BackwardStmt) == C) {
        if (I == 0)
          Consecutive = true;
        else
          for (auto It = C->body_begin(); It != C->body_end(); ++It)
            if (*It == AllBackwards[I - 1]->BackwardStmt && std::next(It) != C->body_end() &&
                *std::next(It) == B->BackwardStmt)
              Consecutive = true;
      }
      if (!Consecutive) {
        block(B->Backward->getBeginLoc(),
              "several scaled backward calls share one scaler and are not consecutive "
              "`scaler.scale(loss).backward()` statements of one block (unrolled gradient "
              "accumulation?); not rewritten automatically");
        return false;
      }
    }
    return true;
  }

  /// The scope in another function: `auto loss = forward_loss(batch);` before the scaled backward,
  /// where forward_loss() (defined in this file) holds the autocast scope and the forward. The
  /// loss statement becomes the function handed to value_and_grad; in forward_loss() the scope
  /// goes and the model is converted where the scope began. Planned and applied together.
  const FunctionAnalysis *CalleeFA = nullptr;
  const AutocastScope *CalleeScope = nullptr;
  const Stmt *CalleeCallStmt = nullptr; ///< the statement in this function that calls it
  const CallExpr *CalleeCall = nullptr;

  /// A model of the callee's scope as this function names it: a member or global is itself; a
  /// parameter of the callee is the argument the call passes.
  const ValueDecl *callerModel(const ObjectRef &M) const {
    const auto *PVD = dyn_cast_or_null<ParmVarDecl>(M.Decl);
    if (!PVD || !CalleeCall)
      return M.Decl;
    unsigned I = PVD->getFunctionScopeIndex();
    if (I >= CalleeCall->getNumArgs())
      return nullptr;
    const Expr *A = CalleeCall->getArg(I)->IgnoreParenImpCasts();
    if (const auto *DRE = dyn_cast<DeclRefExpr>(A))
      return DRE->getDecl();
    if (const auto *ME = dyn_cast<MemberExpr>(A))
      return ME->getMemberDecl();
    return nullptr;
  }

  bool findCalleeScope() {
    if (T.Backwards.size() != 1)
      return false;
    const ImplicitBackward &B = *T.Backwards.front();
    if (B.ScaleStmt || !B.Scale->Call->getNumArgs())
      return false;
    const auto *DRE = dyn_cast<DeclRefExpr>(B.Scale->Call->getArg(0)->IgnoreParenImpCasts());
    const auto *V = DRE ? dyn_cast<VarDecl>(DRE->getDecl()) : nullptr;
    if (!V || !V->isLocalVarDecl() || !V->getInit())
      return false;
    const Expr *Init = V->getInit()->IgnoreImplicit();
    for (int I = 0; I < 4; ++I) {
      if (const auto *CE = dyn_cast<CXXConstructExpr>(Init); CE && CE->getNumArgs() == 1)
        Init = CE->getArg(0)->IgnoreImplicit();
      else if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(Init))
        Init = MT->getSubExpr()->IgnoreImplicit();
      else if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(Init))
        Init = BT->getSubExpr()->IgnoreImplicit();
      else
        break;
    }
    const auto *Call = dyn_cast<CallExpr>(Init);
    const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr;
    if (!Callee)
      return false;
    const FunctionAnalysis *Found = nullptr;
    for (const FunctionAnalysis &Other : TU.Functions)
      if (&Other != &FA && Other.Function->getCanonicalDecl() == Callee->getCanonicalDecl())
        Found = &Other;
    if (!Found)
      return false;
    const AutocastScope *Scope = nullptr;
    for (const AutocastScope &S : Found->Scopes) {
      if (S.DisablesAutocast)
        continue;
      if (Scope) {
        block(Call->getBeginLoc(), "'" + Callee->getNameAsString() +
                                       "' holds several autocast scopes; migrate it by hand");
        return false;
      }
      Scope = &S;
    }
    if (!Scope)
      return false;
    std::string Name = "'" + Callee->getNameAsString() + "'";
    if (!Found->ScalerCalls.empty() || !Found->InactiveAmpCode.empty()) {
      block(Call->getBeginLoc(), "the autocast scope is in " + Name + ", which also scales or steps; "
                                 "migrate it by hand");
      return false;
    }
    if (Scope->Shape == AutocastScope::Kind::Unclosed || Scope->LeaksAt.isValid()) {
      block(Scope->ReportLoc, "the autocast scope in " + Name + " is not closed on every path");
      return false;
    }
    if (Scope->Enable && Scope->Enable->InLambda) {
      block(Scope->ReportLoc, "the autocast scope is inside a lambda");
      return false;
    }
    if (SM.getFileID(SM.getExpansionLoc(Found->Function->getBody()->getBeginLoc())) != File) {
      block(Call->getBeginLoc(), "the autocast scope is in " + Name + ", in another file; both "
                                 "files must change together, migrate by hand");
      return false;
    }
    // The statement declaring the loss must be in the backward's block, before it.
    const Stmt *Decl = nullptr;
    for (const Stmt *P = PM.getParent(Call); P; P = PM.getParent(P))
      if (isa<DeclStmt>(P)) {
        Decl = P;
        break;
      }
    if (!Decl || !B.BackwardStmt || parentCompound(Decl) != parentCompound(B.BackwardStmt) ||
        off(Decl->getBeginLoc()) > off(B.Backward->getBeginLoc()))
      return false;
    CalleeFA = Found;
    CalleeScope = Scope;
    CalleeCallStmt = Decl;
    CalleeCall = Call;
    return true;
  }

  /// Deletes a statement of a scope (its line when alone on it) into `Out`; false (and a blocker)
  /// when it sits in a macro body with other code.
  bool removeInto(const Stmt *St, SourceLocation Why, std::vector<Edit> &Out) {
    Edit E;
    if (!removal(St, E)) {
      block(Why, "an autocast call sits inside a macro body with other code; edit the macro by hand");
      return false;
    }
    Out.push_back(E);
    return true;
  }

  /// A forward call through the converted model `Conv`, its tensors back to ordinary ones
  /// (`model->forward(x)` -> `amp::cast_to_adapter_tensor(amp_model->forward(x))`), into `Out`.
  bool rewriteForward(const ForwardCall &F, const std::string &Conv, std::vector<Edit> &Out) {
    unsigned CB, CE;
    if (!fileRange(F.Call->getSourceRange(), CB, CE)) {
      block(F.Call->getBeginLoc(), "the model call is inside a macro body");
      return false;
    }
    if (!F.Receiver) {
      // Implicit this: `forward(x)` -> `amp_self->forward(x)`.
      std::string Pre = F.ReturnsTensors ? Tgt.CastOutput + "(" : "";
      Out.push_back({CB, 0, Pre + Conv + "->"});
      if (F.ReturnsTensors)
        Out.push_back({CE, 0, ")"});
      return true;
    }
    unsigned MB, ME;
    if (!fileRange(F.Receiver->getSourceRange(), MB, ME)) {
      block(F.Call->getBeginLoc(), "the model is named inside a macro body");
      return false;
    }
    if (F.ReturnsTensors)
      Out.push_back({CB, 0, Tgt.CastOutput + "("});
    Out.push_back({MB, ME - MB, Conv});
    if (F.ReturnsTensors)
      Out.push_back({CE, 0, ")"});
    return true;
  }

  /// The edits in the callee: the scope's calls go, its forward calls use the converted model,
  /// and the model is converted in place of the scope's first statement.
  void planCalleeScope() {
    const AutocastScope &S = *CalleeScope;
    ParentMap CPM(CalleeFA->Function->getBody());
    graftLambdaBodies(CPM, CalleeFA->Function->getBody());
    NameCollector NC;
    NC.TraverseDecl(const_cast<FunctionDecl *>(CalleeFA->Function));
    auto Fresh = [&](StringRef Base) {
      std::string N = Base.str();
      for (int I = 2; NC.Names.contains(N); ++I)
        N = (Base + std::to_string(I)).str();
      NC.Names.insert(N);
      return N;
    };
    const Stmt *First = S.GuardDeclStmt ? S.GuardDeclStmt : (S.Enable ? S.Enable->Removable : nullptr);
    if (!First) {
      block(S.ReportLoc, "the autocast call is part of a larger expression");
      return;
    }
    auto RemoveCall = [&](const AutocastCall *A) {
      if (!A || A->Removable == First)
        return;
      if (!A->Removable) {
        block(A->MacroUse.isValid() ? A->MacroUse : A->Call->getBeginLoc(),
              "the autocast call is part of a larger expression or macro; edit it by hand");
        return;
      }
      removeInto(A->Removable, A->Call->getBeginLoc(), Edits);
    };
    RemoveCall(S.Enable);
    RemoveCall(S.Disable);
    for (const AutocastCall *A : S.Auxiliary)
      RemoveCall(A);
    for (const CXXMemberCallExpr *End : S.GuardEnds) {
      const Stmt *St = End;
      while (CPM.getParent(St) && !isa<CompoundStmt>(CPM.getParent(St)))
        St = CPM.getParent(St);
      removeInto(St, End->getBeginLoc(), Edits);
    }
    std::string Conversions;
    std::map<const ValueDecl *, std::string> Names;
    bool AnyForward = false;
    for (const ForwardCall &F : CalleeFA->Forwards) {
      unsigned O = off(F.Call->getBeginLoc());
      if (O < S.Begin || O > S.End)
        continue;
      AnyForward = true;
      auto It = Names.find(F.Model.Decl);
      if (It == Names.end()) {
        std::string Base = F.Model.IsThis ? "amp_self" : ("amp_" + F.Model.Decl->getName().str());
        if (StringRef(Base).ends_with("_") && Base.size() > 5)
          Base.pop_back();
        It = Names.emplace(F.Model.Decl, Fresh(Base)).first;
        std::string Level, Dtype;
        if (!levelExpr(S, S.Begin, Level) || !dtypeArg(S, S.Begin, Dtype))
          return;
        Conversions += "auto " + It->second + " = " + Tgt.Convert + "(" + modelText(F.Model) + ", " +
                       Level + Dtype + ");";
      }
      if (!rewriteForward(F, It->second, Edits))
        return;
    }
    if (!AnyForward) {
      block(S.ReportLoc, "no model call inside the autocast scope of '" +
                             CalleeFA->Function->getNameAsString() + "'");
      return;
    }
    // The scope's first statement becomes the conversion (one line each).
    Edit E;
    if (!removal(First, E) || E.Text.size() || E.Offset != lineStart(E.Offset) ||
        E.Offset + E.Length != lineEnd(E.Offset)) {
      block(S.ReportLoc, "the autocast scope's first statement does not stand on a line of its own");
      return;
    }
    std::string Indent = indentAt(E.Offset);
    std::string Lines;
    for (StringRef Rest = Conversions; !Rest.empty();) {
      auto [Line, Tail] = Rest.split(';');
      Lines += Indent + Line.str() + ";\n";
      Rest = Tail;
    }
    E.Text = Lines;
    Edits.push_back(E);
  }

  /// Hoisted declarations and conversions emitted before the lambda.
  std::string Prelude;
  std::set<std::string> ConvertedModels;
  std::map<const ValueDecl *, std::string> ModelNames;
  std::string IncludeAnchorText;
  unsigned RegionBegin = 0, RegionEnd = 0;

  std::string convertedName(const ObjectRef &M) {
    const ValueDecl *Key = M.Decl;
    auto It = ModelNames.find(Key);
    if (It != ModelNames.end())
      return It->second;
    std::string Base = M.IsThis ? "amp_self" : ("amp_" + M.Decl->getName().str());
    // Drop a trailing underscore of member names (net_ -> amp_net).
    if (StringRef(Base).ends_with("_") && Base.size() > 5)
      Base.pop_back();
    std::string N = freshName(Base);
    ModelNames[Key] = N;
    return N;
  }

  /// Where the model is converted: before the outermost loop around the step that the model's
  /// declaration precedes (converted once, not per iteration); otherwise at the start of the step.
  /// The run-time flag that switched autocast on for this scope, if any: the condition of
  /// `if (use_amp) set_enabled(true);`, or the argument a guard constructor takes for its
  /// `bool` parameter (`AmpGuard g(cfg.use_amp);`). Null for a scope that is always on.
  const Expr *runTimeFlag(const AutocastScope &S) const {
    if (S.Enable && S.Enable->GuardCondition)
      return S.Enable->GuardCondition;
    // `set_cpu_enabled(use_amp)`: the enable's own argument is the switch.
    if (S.Enable && S.Enable->Turns == AutocastCall::State::Unknown && S.Enable->Rule &&
        S.Enable->Rule->EnabledArg >= 0 &&
        (unsigned)S.Enable->Rule->EnabledArg < S.Enable->Call->getNumArgs())
      return S.Enable->Call->getArg(S.Enable->Rule->EnabledArg);
    const auto *VD = S.GuardVar ? dyn_cast<VarDecl>(S.GuardVar) : nullptr;
    const auto *CE = VD && VD->getInit() ? dyn_cast<CXXConstructExpr>(VD->getInit()->IgnoreImplicit()) : nullptr;
    if (!CE || !CE->getConstructor())
      return nullptr;
    for (unsigned I = 0; I < CE->getNumArgs() && I < CE->getConstructor()->getNumParams(); ++I) {
      const Expr *A = CE->getArg(I);
      if (isa<CXXDefaultArgExpr>(A) || !CE->getConstructor()->getParamDecl(I)->getType()->isBooleanType())
        continue;
      bool Value;
      if (!A->isValueDependent() && A->EvaluateAsBooleanCondition(Value, Ctx))
        continue; // a constant: no run-time switch
      return A;
    }
    return nullptr;
  }

  /// The level expression of a conversion inserted at `At`: the chosen level, or, when autocast
  /// was switched by a run-time flag, that flag choosing between it and O0 (so the fp32 mode
  /// stays fp32). False (and a blocker) when the flag cannot be evaluated at `At`.
  bool levelExpr(const AutocastScope &S, unsigned At, std::string &Out) {
    std::string Level = Tgt.LevelEnum + "::" + levelName(Opts.Level).str();
    const Expr *Flag = runTimeFlag(S);
    if (!Flag) {
      Out = Level;
      return true;
    }
    // Every local the flag reads must exist where the model is converted.
    VariablesRead Refs;
    Refs.TraverseStmt(const_cast<Expr *>(Flag));
    for (const ValueDecl *D : Refs.Found) {
      const auto *V = dyn_cast<VarDecl>(D);
      // A parameter of a lambda of the step is declared where that lambda starts.
      bool LambdaParam = isa_and_nonnull<ParmVarDecl>(V) && V->getDeclContext() != FA.Function;
      if (!V || !(V->isLocalVarDecl() || LambdaParam) || off(V->getLocation()) < At)
        continue;
      block(Flag->getBeginLoc(), "autocast is switched by the run-time flag `" +
                                     text(Flag->getSourceRange()) + "`, which is declared after "
                                     "where the model is converted once (before the loop); "
                                     "declare it earlier or migrate by hand");
      return false;
    }
    std::string F = text(Flag->getSourceRange());
    const Expr *Bare = Flag->IgnoreParenImpCasts();
    if (!isa<DeclRefExpr, MemberExpr, CXXMemberCallExpr, CallExpr>(Bare) &&
        !(isa<UnaryOperator>(Bare) && cast<UnaryOperator>(Bare)->getOpcode() == UO_LNot))
      F = "(" + F + ")";
    Out = F + " ? " + Level + " : " + Tgt.LevelEnum + "::O0";
    return true;
  }

  /// The device an autocast call names ("cuda", "cpu"; "" when not known).
  std::string deviceOf(const CallExpr *CE, const AutocastFunctionRule &R) const {
    if (R.DeviceArg < 0 || (unsigned)R.DeviceArg >= CE->getNumArgs())
      return R.Device;
    Expr::EvalResult Res;
    const Expr *Dev = CE->getArg(R.DeviceArg);
    if (Dev->isValueDependent() || !Dev->EvaluateAsRValue(Res, Ctx) || !Res.Val.isInt())
      return "";
    int64_t V = Res.Val.getInt().getExtValue();
    return V == 0 ? "cpu" : V == 1 ? "cuda" : "device-type-" + std::to_string(V);
  }

  /// The autocast calls a guard's constructor makes (the guard's use is the scope).
  class GuardCalls : public RecursiveASTVisitor<GuardCalls> {
  public:
    explicit GuardCalls(const RuleSet &Rules) : Rules(Rules) {}
    const RuleSet &Rules;
    std::vector<std::pair<const CallExpr *, const AutocastFunctionRule *>> Found;
    bool VisitCallExpr(CallExpr *CE) {
      if (const FunctionDecl *FD = CE->getDirectCallee())
        if (const AutocastFunctionRule *R = Rules.autocastRule(qualifiedName(FD)))
          Found.push_back({CE, R});
      return true;
    }
  };

  /// The low-precision dtype the scope sets for the device it enables (`set_autocast_gpu_dtype(
  /// at::kBFloat16)` beside `set_enabled(true)`, or in a guard's constructor), as the conversion's
  /// third argument (`", at::kBFloat16"`), so that the converted model computes in the dtype the
  /// scope chose; "" when the scope sets none (the runtime's default for the model's device).
  /// False (and a blocker) when it cannot be carried to the conversion at `At`.
  bool dtypeArg(const AutocastScope &S, unsigned At, std::string &Out) {
    Out.clear();
    struct DtypeCall {
      const CallExpr *Call;
      std::string Device;
    };
    std::vector<DtypeCall> Dtypes;
    std::string EnableDevice;
    const CXXConstructorDecl *GuardCtor = nullptr;
    if (S.Enable) {
      EnableDevice = S.Enable->Device;
      for (const AutocastCall *A : S.Auxiliary)
        if (A->Rule->Role == AutocastRole::Dtype)
          Dtypes.push_back({A->Call, A->Device});
    } else if (const auto *VD = S.GuardVar ? dyn_cast<VarDecl>(S.GuardVar) : nullptr) {
      const auto *CE = VD->getInit() ? dyn_cast<CXXConstructExpr>(VD->getInit()->IgnoreImplicit()) : nullptr;
      GuardCtor = CE ? CE->getConstructor() : nullptr;
      if (!GuardCtor || !GuardCtor->hasBody())
        return true;
      GuardCalls G(Rules);
      G.TraverseStmt(GuardCtor->getBody());
      for (const auto &[Call, R] : G.Found) {
        if (R->Role == AutocastRole::Enable && EnableDevice.empty())
          EnableDevice = deviceOf(Call, *R);
        else if (R->Role == AutocastRole::Dtype)
          Dtypes.push_back({Call, deviceOf(Call, *R)});
      }
    }
    std::vector<const CallExpr *> Applies;
    for (const DtypeCall &D : Dtypes)
      if (EnableDevice.empty() || D.Device.empty() || D.Device == EnableDevice)
        Applies.push_back(D.Call);
    if (Applies.empty())
      return true;
    auto DtypeOf = [](const CallExpr *CE) { return CE->getArg(CE->getNumArgs() - 1); };
    for (const CallExpr *CE : Applies)
      if (!CE->getNumArgs()) {
        block(CE->getBeginLoc(), "the autocast dtype call has no argument");
        return false;
      }
    std::string Text = text(DtypeOf(Applies.front())->getSourceRange());
    for (const CallExpr *CE : Applies)
      if (text(DtypeOf(CE)->getSourceRange()) != Text) {
        block(CE->getBeginLoc(), "the scope sets different autocast dtypes (`" + Text + "`, `" +
                                     text(DtypeOf(CE)->getSourceRange()) + "`) and which one "
                                     "applies to the model's device is not known; convert the "
                                     "model with the one it computes in by hand");
        return false;
      }
    // The dtype must exist where the model is converted: a constant, or a variable declared
    // before that point (not a parameter or local of a guard's constructor).
    const Expr *D = DtypeOf(Applies.front());
    const FunctionDecl *ScopeFn = CalleeScope == &S ? CalleeFA->Function : FA.Function;
    VariablesRead Refs;
    Refs.TraverseStmt(const_cast<Expr *>(D));
    for (const ValueDecl *V : Refs.Found) {
      const auto *VD = dyn_cast<VarDecl>(V);
      if (!VD || !(VD->isLocalVarDecl() || isa<ParmVarDecl>(VD)))
        continue;
      bool InGuard = GuardCtor && VD->getDeclContext() == GuardCtor;
      if (!InGuard && off(VD->getLocation()) < At && VD->getDeclContext() == ScopeFn)
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

  /// What goes when an autocast call's statement goes: the statement, or the whole
  /// `if (use_amp) { ... }` around it when that block holds nothing but this scope's calls (an
  /// empty `if` would be left otherwise).
  std::set<const Stmt *> RemovedUnits;
  const Stmt *removalUnit(const AutocastScope &S, const Stmt *St) const {
    const auto *Block = dyn_cast_or_null<CompoundStmt>(PM.getParent(St));
    const auto *If = Block ? dyn_cast_or_null<IfStmt>(PM.getParent(Block)) : nullptr;
    // A condition that only reads (`use_amp`, an optional scaler's truth) goes with the block.
    if (!If || If->getThen() != Block || If->getElse() || If->getInit() || If->getConditionVariable() ||
        (If->getCond()->HasSideEffects(Ctx) && !onlyReads(If->getCond())))
      return St;
    auto OfScope = [&](const Stmt *Child) {
      auto Is = [&](const AutocastCall *A) { return A && A->Removable == Child; };
      return Is(S.Enable) || Is(S.Disable) || llvm::any_of(S.Auxiliary, Is);
    };
    return llvm::all_of(Block->body(), OfScope) ? If : St;
  }

  bool conversionBeforeLoop(const ObjectRef &M, const Stmt *Anchor, unsigned &InsertAt) const {
    // A parameter or a data member exists before any loop of the body; a local must be
    // declared before the loop.
    const auto *VD = dyn_cast_or_null<VarDecl>(M.Decl);
    bool Outlives = isa_and_nonnull<ParmVarDecl>(M.Decl) || isa_and_nonnull<FieldDecl>(M.Decl);
    if (!Outlives && (!VD || !VD->isLocalVarDecl()))
      return false;
    unsigned DeclOff = Outlives ? 0 : off(VD->getLocation());
    const Stmt *Best = outermostLoop(Anchor, DeclOff);
    if (!Best)
      return false;
    InsertAt = lineStart(off(Best->getBeginLoc()));
    return onlySpace(InsertAt, off(Best->getBeginLoc()));
  }

  /// Before the outermost loop around `Anchor` that the model's declaration precedes, or before
  /// `Anchor` itself (a statement holding the lambda of the step).
  bool conversionBefore(const ObjectRef &M, const Stmt *Anchor, unsigned &InsertAt) const {
    const auto *VD = dyn_cast_or_null<VarDecl>(M.Decl);
    unsigned DeclOff = VD && VD->isLocalVarDecl() ? off(VD->getLocation()) : 0;
    const Stmt *Best = outermostLoop(Anchor, DeclOff);
    if (!Best)
      Best = Anchor;
    if (Best->getBeginLoc().isMacroID())
      return false;
    InsertAt = lineStart(off(Best->getBeginLoc()));
    return onlySpace(InsertAt, off(Best->getBeginLoc()));
  }

  /// The outermost loop around `S` that starts after offset `After` (a declaration it must not
  /// precede), with only blocks and loops between; null if none.
  const Stmt *outermostLoop(const Stmt *S, unsigned After) const {
    const Stmt *Best = nullptr;
    for (const Stmt *P = PM.getParent(S); P; P = PM.getParent(P)) {
      if (isa<LambdaExpr>(P))
        break;
      if (!isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
        continue;
      if (!isa_and_nonnull<CompoundStmt>(PM.getParent(P)) || P->getBeginLoc().isMacroID())
        break;
      if (After >= off(P->getBeginLoc()))
        break; // declared inside this loop
      Best = P;
    }
    return Best;
  }

  /// Several optimizers after an accumulation: the summed grads are split per optimizer just
  /// before the first unscale_/step, which must stand in a block holding all of them.
  bool planSplitAfterAccumulation() {
    const ScalerCall *First = nullptr;
    for (const auto *List : {&T.Unscales, &T.Steps})
      for (const ScalerCall *SC : *List)
        if (!First || off(SC->Call->getBeginLoc()) < off(First->Call->getBeginLoc()))
          First = SC;
    const Stmt *St = First ? First->Call : nullptr;
    while (St && PM.getParent(St) && !isa<CompoundStmt>(PM.getParent(St)))
      St = PM.getParent(St);
    const auto *Block = St ? dyn_cast_or_null<CompoundStmt>(PM.getParent(St)) : nullptr;
    bool AllInside = Block && llvm::all_of(T.Steps, [&](const ScalerCall *SC) { return within(SC->Call, Block); }) &&
                     llvm::all_of(T.Unscales, [&](const ScalerCall *SC) { return within(SC->Call, Block); });
    unsigned At = St ? off(St->getBeginLoc()) : 0;
    if (!AllInside || St->getBeginLoc().isMacroID() || !onlySpace(lineStart(At), At)) {
      block(T.Steps[1]->Call->getBeginLoc(), "several optimizers step after a gradient accumulation, "
                                              "not all in one block; not rewritten automatically");
      return false;
    }
    std::string Names;
    for (const auto &[O, Name] : PerOptimizer)
      Names += (Names.empty() ? "" : ", ") + Name;
    insertAt(lineStart(At), indentAt(At) + "auto [" + Names + "] = " + Tgt.SplitGrads + "(" +
                                GradsName + ", " + OptimizerArgs + ");\n");
    return true;
  }

  /// Gradient accumulation: the scaled backward runs several times (in a nested loop, or every
  /// iteration of a loop whose step() runs under a condition) before one unscale_/step/update.
  /// The explicit grads of each micro-step are then summed into a list declared before the loop
  /// (`.grad` accumulates the same way), and each zero_grad() of the step clears that list.
  bool planAccumulation(const ImplicitBackward &B, const CompoundStmt *C) {
    std::vector<const ScalerCall *> Calls;
    for (const auto *List : {&T.Unscales, &T.Steps, &T.Updates})
      Calls.insert(Calls.end(), List->begin(), List->end());
    auto HoldsAll = [&](const Stmt *X) {
      return llvm::all_of(Calls, [&](const ScalerCall *SC) { return within(SC->Call, X); });
    };
    // The innermost block holding the backward and every unscale_/step/update.
    const Stmt *CA = C;
    while (CA && !HoldsAll(CA)) {
      CA = PM.getParent(CA);
      while (CA && !isa<CompoundStmt>(CA))
        CA = PM.getParent(CA);
    }
    if (!CA) {
      block(B.Backward->getBeginLoc(), "the scaled backward and the scaler's step() are not in "
                                       "one block of this function");
      return false;
    }
    unsigned BackOff = off(B.Backward->getBeginLoc());
    for (const ScalerCall *SC : Calls)
      if (off(SC->Call->getBeginLoc()) < BackOff && within(SC->Call, CA) && CA != C) {
        block(SC->Call->getBeginLoc(), canonicalMethod(SC->Kind) + "() comes before the scaled "
                                       "backward of its step");
        return false;
      }
    bool Nested = CA != C;
    // Between that block and the backward only loops and plain blocks: a backward under a
    // condition would make the number of summed micro-steps differ from what .grad held.
    for (const Stmt *P = C; Nested && P && P != CA; P = PM.getParent(P))
      if (!isa<CompoundStmt, ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P)) {
        block(B.Backward->getBeginLoc(),
              "the scaled backward is in a nested block under a condition and " +
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
      const Stmt *Child = childOf(SC->Call, cast<CompoundStmt>(CA));
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
    Accumulate = Nested || (InLoop && ConditionalStep);
    if (!Accumulate)
      return true;
    if (!PerOptimizer.empty() && !planSplitAfterAccumulation())
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
      OptDecl = off(OV->getLocation());
    const Stmt *Anchor = outermostLoop(CA, OptDecl);
    if (!Anchor) {
      if (!Nested) {
        block(T.Steps.front()->Call->getBeginLoc(),
              "step() runs conditionally in a loop (gradient accumulation across iterations) but "
              "the optimizer is declared inside the loop; the summed grads have no place to live");
        return false;
      }
      Anchor = childOf(B.BackwardStmt, cast<CompoundStmt>(CA));
    }
    unsigned A = off(Anchor->getBeginLoc());
    if (Anchor->getBeginLoc().isMacroID() || !onlySpace(lineStart(A), A)) {
      block(Anchor->getBeginLoc(), "the loop of the accumulation does not start its line");
      return false;
    }
    GradsDeclAt = lineStart(A);
    GradsDecl = indentAt(A) + "std::vector<torch::Tensor> " + GradsName + ";\n";
    return true;
  }

  /// A scope opened before the loop that holds the step and closed after it
  /// (`set_enabled(true); for (...) { forward; loss; scale(loss).backward(); step; update; }
  /// set_enabled(false);`, a guard declared before the loop, a guard ended after it): autocast is
  /// on for every iteration's forward, so the step's forward region is its block's statements
  /// from the first one that runs the model up to the scaled backward, and the scope's calls go
  /// where they are. Sets R0; false (blocked, with the reason) otherwise.
  bool enclosingScopeRegion(const AutocastScope &S, const Stmt *ScopeStart, const CompoundStmt *C,
                            const Stmt *EndStmt, const Stmt *&R0) {
    auto Different = [&] {
      block(S.ReportLoc, "the autocast scope and the scaled backward are in different blocks");
      return false;
    };
    const CompoundStmt *Outer = parentCompound(ScopeStart);
    const Stmt *Holder = Outer ? childOf(C, Outer) : nullptr;
    if (!Holder || (S.Enable && S.Enable->InLambda) ||
        off(ScopeStart->getBeginLoc()) >= off(Holder->getBeginLoc()))
      return Different();
    // Only loops and plain blocks between the step's block and the scope's: every iteration
    // that reaches the backward ran its forward under the scope.
    for (const Stmt *P = C; P && P != Outer; P = PM.getParent(P))
      if (!isa<CompoundStmt, ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(P))
        return Different();
    if (S.Shape == AutocastScope::Kind::Unclosed) {
      block(S.ReportLoc, "backward() runs inside the autocast scope (the scope is not closed "
                         "before it, nor after the loop that holds the step)");
      return false;
    }
    unsigned HolderEnd = off(Holder->getEndLoc());
    bool ClosedAfter = S.GuardDeclStmt
                           ? llvm::all_of(S.GuardEnds,
                                          [&](const CXXMemberCallExpr *E) {
                                            return off(E->getBeginLoc()) > HolderEnd;
                                          })
                           : S.Disable && childOf(S.Disable->Call, Outer) &&
                                 off(S.Disable->Call->getBeginLoc()) > HolderEnd;
    if (!ClosedAfter) {
      const Stmt *Closer = S.GuardDeclStmt ? (S.GuardEnds.empty() ? nullptr : S.GuardEnds.front())
                                           : (S.Disable ? S.Disable->Call : nullptr);
      if (!Closer || !within(Closer, Holder))
        return Different();
      block(S.ReportLoc, "the autocast scope opens before the loop of the step but closes inside "
                         "it (line " + std::to_string(SM.getExpansionLineNumber(Closer->getBeginLoc())) +
                         "): later iterations run their forward without autocast; migrate this "
                         "step by hand");
      return false;
    }
    for (const Stmt *Child : C->body()) {
      if (Child == EndStmt)
        break;
      if (llvm::any_of(T.Forwards, [&](const ForwardCall *F) { return within(F->Call, Child); })) {
        R0 = Child;
        return true;
      }
    }
    block(S.ReportLoc, "the autocast scope encloses the loop of the step, but no forward of the "
                       "model precedes the scaled backward in the step's block");
    return false;
  }

  void planRegion(const ImplicitBackward &B) {
    const Stmt *EndStmt = B.ScaleStmt ? B.ScaleStmt : B.BackwardStmt;
    // A mixed step: the region ends at the if that chooses the path (planMixedBackwards removes
    // the backwards in its branches).
    if (T.mixed())
      EndStmt = T.Plain.Ifs.front();
    if (!B.BackwardStmt || !EndStmt) {
      block(B.Backward->getBeginLoc(), "backward() is part of a larger expression");
      return;
    }
    const CompoundStmt *C = parentCompound(EndStmt);
    if (!C || (B.ScaleStmt && parentCompound(B.BackwardStmt) != C)) {
      block(B.Backward->getBeginLoc(), "the scaled loss and backward() are not statements of one block");
      return;
    }
    if (!T.mixed() && !Split && !planAccumulation(B, C))
      return;
    // The scope in this function; or, with the scope in a called function, the statement that
    // calls it starts the region.
    const AutocastScope &S = CalleeScope ? *CalleeScope : *T.Scope;
    const Stmt *R0 = CalleeCallStmt;
    bool Enclosing = false; // the scope encloses the loop that holds the step
    if (!CalleeScope) {
      const Stmt *ScopeStart = S.GuardDeclStmt ? S.GuardDeclStmt
                                               : (S.Enable->Removable ? S.Enable->Removable : S.Enable->Call);
      R0 = childOf(ScopeStart, C);
      unsigned BackOff = off(B.Backward->getBeginLoc());
      if (!R0) {
        if (!enclosingScopeRegion(S, ScopeStart, C, EndStmt, R0))
          return;
        Enclosing = true;
      } else if (S.Shape == AutocastScope::Kind::Unclosed || (S.Disable && off(S.Disable->Call->getBeginLoc()) > BackOff) ||
          (S.GuardDeclStmt && parentCompound(S.GuardDeclStmt) == C && S.GuardEnds.empty())) {
        block(B.Backward->getBeginLoc(), "backward() runs inside the autocast scope (the scope is "
                                         "not closed before it)");
        return;
      }
    }
    // Region statements: [R0, EndStmt) in C.
    std::vector<const Stmt *> Region;
    bool In = false;
    for (const Stmt *Child : C->body()) {
      if (Child == R0)
        In = true;
      if (Child == EndStmt)
        break;
      if (In)
        Region.push_back(Child);
    }
    if (Region.empty()) {
      block(S.ReportLoc, "the autocast scope does not precede the backward in its block");
      return;
    }
    for (const Stmt *St : Region) {
      ControlFlowCollector CF;
      CF.TraverseStmt(const_cast<Stmt *>(St));
      if (CF.Escape) {
        if (isa<CoawaitExpr>(CF.Escape) || isa<CoyieldExpr>(CF.Escape))
          block(CF.Escape->getBeginLoc(), "the forward region suspends the coroutine (co_await or "
                                          "co_yield), which cannot move into the function given "
                                          "to amp::value_and_grad");
        else
          block(CF.Escape->getBeginLoc(), "the forward region contains a statement that leaves it "
                                          "(return, break, continue or goto), which cannot move "
                                          "into the function given to amp::value_and_grad");
        return;
      }
    }
    unsigned RB, RE;
    if (!fileRange(SourceRange(R0->getBeginLoc(), R0->getBeginLoc()), RB, RE) && !R0->getBeginLoc().isMacroID()) {
      block(R0->getBeginLoc(), "the forward region starts inside a macro");
      return;
    }
    RB = off(R0->getBeginLoc());
    const ImplicitBackward &LastB = *AllBackwards.back();
    CharSourceRange EndR = stmtRange(LastB.BackwardStmt);
    if (EndR.isInvalid() || LastB.BackwardStmt->getBeginLoc().isMacroID() ||
        B.BackwardStmt->getBeginLoc().isMacroID()) {
      block(B.Backward->getBeginLoc(), "backward() is inside a macro");
      return;
    }
    RegionBegin = lineStart(RB);
    if (!onlySpace(RegionBegin, RB)) {
      block(R0->getBeginLoc(), "the forward region does not start its line");
      return;
    }
    unsigned BE = SM.getFileOffset(EndR.getEnd());
    RegionEnd = lineEnd(BE);
    if (T.mixed()) // the region's text ends where the if starts; the if stays
      RegionEnd = lineStart(off(EndStmt->getBeginLoc()));
    unsigned BodyEnd = RegionEnd; // text up to (not including) the scale/backward statements
    unsigned EndStmtOff = lineStart(off(EndStmt->getBeginLoc()));
    BodyEnd = EndStmtOff;
    if (!onlySpace(EndStmtOff, off(EndStmt->getBeginLoc()))) {
      block(EndStmt->getBeginLoc(), "the scaled backward does not start its line");
      return;
    }
    std::string Indent = indentAt(RB);

    // Edits inside the region, relative to the file.
    std::vector<Edit> Inner;
    auto RemoveStmt = [&](const Stmt *St, SourceLocation Why) { removeInto(St, Why, Inner); };
    // The scope's own statements: inside the region they leave with it; outside it (a scope
    // around the loop, a cache call after the region) they are removed where they are.
    auto RemoveScopeStmt = [&](const Stmt *St, SourceLocation Why) {
      unsigned O = off(St->getBeginLoc());
      if (O >= RB && O < BodyEnd)
        RemoveStmt(St, Why);
      else
        removeInto(St, Why, Edits);
    };
    auto RemoveCall = [&](const AutocastCall *A) {
      if (!A)
        return;
      if (!A->Removable) {
        if (A->MacroUse.isValid())
          block(A->MacroUse, "an autocast call sits inside a macro body with other code; edit "
                             "the macro by hand (macro bodies are never edited)");
        else
          block(A->Call->getBeginLoc(), "the autocast call is part of a larger expression");
        return;
      }
      const Stmt *Unit = removalUnit(S, A->Removable);
      if (RemovedUnits.insert(Unit).second)
        RemoveScopeStmt(Unit, A->Call->getBeginLoc());
    };
    if (CalleeScope) {
      planCalleeScope();
    } else {
      RemoveCall(S.Enable);
      RemoveCall(S.Disable);
      for (const AutocastCall *A : S.Auxiliary) {
        unsigned O = off(A->Call->getBeginLoc());
        if (O >= RB && O < BodyEnd)
          RemoveCall(A);
        else if (A->Removable && Enclosing)
          RemoveCall(A); // with its `if (use_amp) { ... }` when that holds only the scope's calls
        else if (A->Removable) {
          Edit E;
          if (removal(A->Removable, E))
            Edits.push_back(E);
        }
      }
      if (S.GuardDeclStmt)
        RemoveScopeStmt(S.GuardDeclStmt, S.ReportLoc);
      for (const CXXMemberCallExpr *End : S.GuardEnds) {
        const Stmt *St = End;
        while (PM.getParent(St) && !isa<CompoundStmt>(PM.getParent(St)))
          St = PM.getParent(St);
        RemoveScopeStmt(St, End->getBeginLoc());
      }
    }
    // A scope around the loop covers every forward of the model in it: one outside this step's
    // region would keep running under no autocast on the unconverted model.
    if (Enclosing)
      for (const ForwardCall *F : T.Forwards) {
        unsigned O = off(F->Call->getBeginLoc());
        if (O < RB || O >= BodyEnd) {
          block(F->Call->getBeginLoc(),
                "`" + text(F->Call->getSourceRange()) + "` runs in the autocast scope around the "
                "loop but outside the step's forward region; after the rewrite it would run in "
                "fp32 on the unconverted model: migrate this step by hand");
          return;
        }
      }
    // Forward calls go through the converted model; outputs back to ordinary tensors.
    std::vector<std::string> Conversions;
    for (const ForwardCall *F : T.Forwards) {
      unsigned O = off(F->Call->getBeginLoc());
      if (O < RB || O >= BodyEnd)
        continue;
      std::string Conv = convertedName(F->Model);
      if (const CallExpr *Q = autocastQueryInForward(F->Call, Rules)) {
        block(F->Call->getBeginLoc(),
              "the model's forward asks whether autocast is on (`" +
                  firstLine(text(Q->getSourceRange())) + "` at " + where(Q->getBeginLoc()) +
                  "); after the conversion autocast is never enabled, so that code would take "
                  "its other path: migrate this step by hand");
        return;
      }
      if (ConvertedModels.insert(Conv).second) {
        unsigned At = 0;
        bool BeforeLoop = false;
        if (auto LP = conversionOutsideLambdas(R0, F->Model, FA.Function, PM, SM)) {
          // The step runs in a lambda that captures the model: converted once, outside it.
          if (!conversionBefore(F->Model, LP->Anchor, At)) {
            block(LP->Anchor->getBeginLoc(), "the statement holding the lambda of the step does "
                                             "not start its line; the model cannot be converted "
                                             "before it");
            return;
          }
          BeforeLoop = true;
          for (const LambdaExpr *L : LP->Crossed) {
            std::optional<Edit> Capture = captureByCopy(L, Conv, SM);
            if (!Capture) {
              block(L->getBeginLoc(), "the capture list of the lambda holding the step is inside "
                                      "a macro; it cannot be given the converted model");
              return;
            }
            if (!Capture->Text.empty())
              Edits.push_back(*Capture);
          }
        } else {
          BeforeLoop = conversionBeforeLoop(F->Model, R0, At);
        }
        std::string Level, Dtype;
        if (!levelExpr(S, BeforeLoop ? At : RB, Level) || !dtypeArg(S, BeforeLoop ? At : RB, Dtype))
          return;
        std::string Line = "auto " + Conv + " = " + Tgt.Convert + "(" + modelText(F->Model) +
                           ", " + Level + Dtype + ");\n";
        if (BeforeLoop)
          insertAt(At, indentAt(At) + Line);
        else
          Conversions.push_back(Indent + Line);
      }
      rewriteForward(*F, Conv, Inner);
    }
    // zero_grad inside the region goes.
    for (const ZeroGradCall *Z : stepZeroGrads()) {
      unsigned O = off(Z->Call->getBeginLoc());
      if (O >= RB && O < BodyEnd && Z->Statement) {
        if (!Accumulate) {
          RemoveStmt(Z->Statement, Z->Call->getBeginLoc());
          continue;
        }
        CharSourceRange ZR = stmtRange(Z->Statement);
        if (ZR.isInvalid() || Z->Statement->getBeginLoc().isMacroID()) {
          block(Z->Call->getBeginLoc(), "zero_grad() is inside a macro");
          continue;
        }
        unsigned ZB = SM.getFileOffset(ZR.getBegin()), ZE = SM.getFileOffset(ZR.getEnd());
        Inner.push_back({ZB, ZE - ZB, GradsName + ".clear();"});
      }
    }
    // Declarations of the region that the code after it still names are declared before the
    // lambda (or the step is blocked). What stays outside: everything after the scale statement
    // except the scaled backward(s), whose scale() argument becomes the lambda's return.
    auto UsedOutside = [&](const Expr *E) {
      if (off(E->getBeginLoc()) < BodyEnd)
        return false;
      for (const ImplicitBackward *Bi : AllBackwards)
        if ((Bi->BackwardStmt && within(E, Bi->BackwardStmt)) ||
            (Bi->ScaleStmt && within(E, Bi->ScaleStmt)))
          return false;
      return !inMixedBackward(E); // a mixed step's backwards leave their branches too
    };
    RegionDeclarations Decls;
    if (auto Why = planRegionDeclarations(Ctx, Rules, Region, FA.Function->getBody(), UsedOutside,
                                          Decls)) {
      block(Why->Loc, Why->Reason);
      return;
    }
    std::string Hoisted;
    for (const std::string &D : Decls.Hoisted)
      Hoisted += Indent + D + "\n";
    Inner.insert(Inner.end(), Decls.Inner.begin(), Decls.Inner.end());
    if (!Blockers.empty())
      return;

    // Build the new region text: prelude, lambda with the re-indented body, the call.
    llvm::sort(Inner, [](const Edit &A, const Edit &B) {
      return A.Offset < B.Offset || (A.Offset == B.Offset && A.Length < B.Length);
    });
    // Several calls of one macro use (`AMP_OFF()` expanding to a disable and clear_cache) remove
    // the same text: one edit.
    Inner.erase(std::unique(Inner.begin(), Inner.end(),
                            [](const Edit &A, const Edit &B) {
                              return A.Offset == B.Offset && A.Length == B.Length && A.Text == B.Text;
                            }),
                Inner.end());
    for (size_t I = 1; I < Inner.size(); ++I)
      if (Inner[I].Offset < Inner[I - 1].Offset + Inner[I - 1].Length) {
        block(SM.getLocForStartOfFile(File).getLocWithOffset(Inner[I].Offset),
              "overlapping edits in the forward region");
        return;
      }
    std::string Body;
    unsigned Cur = RegionBegin;
    for (const Edit &E : Inner) {
      if (E.Offset < RegionBegin || E.Offset + E.Length > BodyEnd) {
        block(SM.getLocForStartOfFile(File).getLocWithOffset(E.Offset), "edit outside the forward region");
        return;
      }
      Body += Buffer.substr(Cur, E.Offset - Cur).str();
      Body += E.Text;
      Cur = E.Offset + E.Length;
    }
    Body += Buffer.substr(Cur, BodyEnd - Cur).str();
    // Re-indent the body by one level (two spaces), line by line, leaving blank lines blank.
    // A region that is one block `{ ... }` gives its contents: the lambda is the block now.
    std::string Indented;
    bool Unwrap = false;
    if (Region.size() == 1 && isa<CompoundStmt>(Region.front()) && !Region.front()->getBeginLoc().isMacroID()) {
      StringRef BodyRef(Body);
      StringRef Trimmed = BodyRef.trim();
      size_t Open = BodyRef.find('{'), Close = BodyRef.rfind('}');
      if (Trimmed.starts_with("{") && Trimmed.ends_with("}") && Open != StringRef::npos &&
          onlySpace(0, 0)) {
        StringRef Inside = BodyRef.slice(Open + 1, Close);
        // Keep whole lines: drop the rest of the `{` line and the indentation before `}`.
        size_t FirstNL = Inside.find('\n');
        size_t LastNL = Inside.rfind('\n');
        if (FirstNL != StringRef::npos && Inside.take_front(FirstNL).trim().empty() &&
            Inside.drop_front(LastNL + 1).trim().empty()) {
          Indented = Inside.slice(FirstNL + 1, LastNL + 1).str();
          Unwrap = true;
        }
      }
    }
    StringRef Rest(Unwrap ? StringRef() : StringRef(Body));
    while (!Rest.empty()) {
      auto [Line, Tail] = Rest.split('\n');
      if (!Line.trim().empty())
        Indented += "  ";
      Indented += Line.str();
      if (Rest.size() > Line.size())
        Indented += "\n";
      Rest = Tail;
    }
    // The function returns the scaled loss (the sum of them, with several backwards).
    std::string ScaleCall;
    for (const ImplicitBackward *Bi : AllBackwards) {
      if (!Bi->Scale) { // no scaler: the function returns the loss itself
        ScaleCall += (ScaleCall.empty() ? "" : " + ") + text(Bi->Loss->getSourceRange());
        continue;
      }
      const CXXMemberCallExpr *SCall = Bi->Scale->Call;
      std::string ScaleArg = SCall->getNumArgs() ? text(SCall->getArg(0)->getSourceRange()) : "";
      // The receiver as written, with its `.` or `->` (`scaler.`, `scaler->` on a smart pointer,
      // `(*scaler).`): the text from the call's start up to the method name.
      std::string ScalerRecv;
      if (const auto *ME = dyn_cast<MemberExpr>(SCall->getCallee());
          ME && !ME->getMemberLoc().isMacroID() && !SCall->getBeginLoc().isMacroID()) {
        unsigned RB0 = off(SCall->getBeginLoc()), RE0 = off(ME->getMemberLoc());
        if (RE0 > RB0)
          ScalerRecv = StringRef(Buffer).substr(RB0, RE0 - RB0).rtrim().str();
      }
      if (ScalerRecv.empty()) {
        block(SCall->getBeginLoc(), "the scale() call is inside a macro body");
        return;
      }
      ScaleCall += (ScaleCall.empty() ? "" : " + ") + ScalerRecv +
                   canonicalMethod(ScalerCall::Method::Scale) + "(" + ScaleArg + ")";
    }

    if (T.mixed())
      ScaleCall = mixedReturn(ScaleCall);
    ValueName = "scaled_loss";
    bool AssignBack = false;
    if (T.Unscaled || T.mixed())
      ValueName = freshName("loss_value");
    else if (B.SplitVar && !B.SplitAssignsArgument && isa<DeclStmt>(B.ScaleStmt))
      ValueName = B.SplitVar->getNameAsString();
    else {
      ValueName = freshName("scaled_loss");
      AssignBack = B.SplitVar != nullptr;
    }
    std::string Out;
    for (const std::string &C : Conversions)
      Out += C;
    Out += Hoisted;
    Out += Indent + "auto " + GradFnName + " = " + Tgt.ValueAndGrad + "([&] {\n";
    Out += Indented;
    Out += Indent + "  return " + ScaleCall + ";\n";
    Out += Indent + "}, " + OptParams + ");\n";
    // Comments after the statements the call replaces (the scale and backward lines) stay on
    // the line of the call.
    std::string Trailing;
    auto KeepTrailing = [&](const Stmt *St) {
      if (!St)
        return;
      CharSourceRange R = stmtRange(St);
      if (R.isInvalid())
        return;
      unsigned E = SM.getFileOffset(R.getEnd());
      StringRef Rest = StringRef(Buffer).slice(E, lineEnd(E)).rtrim("\r\n");
      if (!Rest.trim().empty())
        Trailing += " " + Rest.trim().str();
    };
    // (A mixed step's if stays, and its backwards' comments stay in their branches.)
    if (!T.mixed()) {
      KeepTrailing(EndStmt);
      for (const ImplicitBackward *Bi : AllBackwards)
        if (Bi->BackwardStmt != EndStmt)
          KeepTrailing(Bi->BackwardStmt);
    }
    if (Accumulate) {
      std::string Micro = freshName("micro_grads");
      Out += Indent + "auto [" + ValueName + ", " + Micro + "] = " + GradFnName + "();" +
             Trailing + "\n";
      Out += Indent + Tgt.Accumulate + "(" + GradsName + ", " + Micro + ");\n";
    } else {
      Out += Indent + "auto [" + ValueName + ", " + GradsName + "] = " + GradFnName + "();" +
             Trailing + "\n";
    }
    if (!PerOptimizer.empty() && !Accumulate) {
      std::string Names;
      for (const auto &[O, Name] : PerOptimizer)
        Names += (Names.empty() ? "" : ", ") + Name;
      Out += Indent + "auto [" + Names + "] = " + Tgt.SplitGrads + "(" + GradsName + ", " +
             OptimizerArgs + ");\n";
    }
    if (AssignBack)
      Out += Indent + B.SplitVar->getNameAsString() + " = " + ValueName + ";\n";
    // Statements between the scale statement and backward (split form) stay after the call.
    if (B.ScaleStmt) {
      unsigned SB = lineEnd(SM.getFileOffset(stmtRange(B.ScaleStmt).getEnd()));
      unsigned BB = lineStart(off(B.BackwardStmt->getBeginLoc()));
      if (SB < BB)
        Out += Buffer.substr(SB, BB - SB).str();
    }
    // Comments between several backwards stay, after the call.
    for (size_t I = 1; I < AllBackwards.size(); ++I) {
      unsigned SB = lineEnd(SM.getFileOffset(stmtRange(AllBackwards[I - 1]->BackwardStmt).getEnd()));
      unsigned BB = lineStart(off(AllBackwards[I]->BackwardStmt->getBeginLoc()));
      if (SB < BB)
        Out += Buffer.substr(SB, BB - SB).str();
    }
    Edits.push_back({RegionBegin, RegionEnd - RegionBegin, Out});
  }

  // ---- mixed steps: a plain path beside the scaled one ------------------------------------------
  // `if (COND) { scaled backward, unscale_, clip, step, update } else { loss.backward(); clip;
  // optimizer.step(); }` (or the same split over ifs on COND). The forward region before the if
  // becomes the function handed to value_and_grad, returning `COND ? scaler.scale(loss) : loss`:
  // the grads are those of whichever backward ran. Inside the branches the backwards go, the
  // scaled path takes the grads as any scaled step, the plain path as a step without a scaler.

  const ImplicitBackward &plainBackward() const { return *T.Plain.Backwards.front(); }

  /// Whether `E` lies in one of the backward statements the branches lose (their operands move
  /// into the function's return).
  bool inMixedBackward(const Stmt *E) const {
    if (!T.mixed())
      return false;
    return within(E, T.Backwards.front()->BackwardStmt) || within(E, plainBackward().BackwardStmt);
  }

  /// `COND ? <scaled> : <plain>` (or the other way round when the scaled path is the else).
  std::string mixedReturn(const std::string &Scaled) const {
    std::string Cond = text(T.Plain.Condition->getSourceRange());
    const Expr *Bare = T.Plain.Condition->IgnoreParenImpCasts();
    if (!isa<DeclRefExpr, MemberExpr, CXXMemberCallExpr>(Bare) &&
        !(isa<UnaryOperator>(Bare) && cast<UnaryOperator>(Bare)->getOpcode() == UO_LNot))
      Cond = "(" + Cond + ")";
    std::string Plain = text(plainBackward().Loss->getSourceRange());
    return T.Plain.ScaledWhenTrue ? Cond + " ? " + Scaled + " : " + Plain
                                  : Cond + " ? " + Plain + " : " + Scaled;
  }

  static const Expr *bare(const Expr *E) {
    for (int I = 0; I < 8 && E; ++I) {
      E = E->IgnoreParenImpCasts();
      if (const auto *EW = dyn_cast<ExprWithCleanups>(E))
        E = EW->getSubExpr();
      else if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(E))
        E = MT->getSubExpr();
      else if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E))
        E = BT->getSubExpr();
      else
        break;
    }
    return E;
  }

  static bool isNullPointer(const Expr *E, ASTContext &Ctx) {
    return E->IgnoreParenImpCasts()->isNullPointerConstant(Ctx, Expr::NPC_ValueDependentIsNotNull) !=
           Expr::NPCK_NotNull;
  }

  /// A condition that only reads: a variable, a member, `this`, `!x`, `*x`, `x && y`, `x || y`,
  /// `x == nullptr` / `x != nullptr`, an optional's or a smart pointer's truth, `->` on one, or a
  /// call of a const method without arguments (`scaler.is_enabled()`, `cfg.amp()`).
  bool onlyReads(const Expr *E) const {
    E = bare(E);
    if (!E)
      return false;
    if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
      return isa<VarDecl, EnumConstantDecl>(DRE->getDecl());
    if (const auto *ME = dyn_cast<MemberExpr>(E))
      return isa<FieldDecl>(ME->getMemberDecl()) && onlyReads(ME->getBase());
    if (isa<CXXThisExpr, CXXBoolLiteralExpr>(E))
      return true;
    if (const auto *U = dyn_cast<UnaryOperator>(E))
      return (U->getOpcode() == UO_LNot || U->getOpcode() == UO_Deref) && onlyReads(U->getSubExpr());
    if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
      if (BO->getOpcode() == BO_LAnd || BO->getOpcode() == BO_LOr)
        return onlyReads(BO->getLHS()) && onlyReads(BO->getRHS());
      if (BO->getOpcode() == BO_EQ || BO->getOpcode() == BO_NE)
        return (isNullPointer(BO->getRHS(), Ctx) && onlyReads(BO->getLHS())) ||
               (isNullPointer(BO->getLHS(), Ctx) && onlyReads(BO->getRHS()));
      return false;
    }
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E)) {
      auto Op = OC->getOperator();
      if ((Op == OO_Arrow || Op == OO_Star || Op == OO_Exclaim) && OC->getNumArgs() == 1)
        return onlyReads(OC->getArg(0));
      if ((Op == OO_EqualEqual || Op == OO_ExclaimEqual) && OC->getNumArgs() == 2)
        return (isNullPointer(OC->getArg(1), Ctx) && onlyReads(OC->getArg(0))) ||
               (isNullPointer(OC->getArg(0), Ctx) && onlyReads(OC->getArg(1)));
      return false;
    }
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *MD = MC->getMethodDecl();
      return MD && MD->isConst() && MC->getNumArgs() == 0 && !MD->isVirtual() &&
             onlyReads(MC->getImplicitObjectArgument());
    }
    return false;
  }

  /// The declarations a condition reads (variables and members).
  static std::vector<const ValueDecl *> declsRead(const Expr *E) {
    class Reads : public AnalysedBodyVisitor<Reads> {
    public:
      std::vector<const ValueDecl *> Found;
      bool VisitDeclRefExpr(DeclRefExpr *D) {
        if (isa<VarDecl>(D->getDecl()))
          Found.push_back(D->getDecl());
        return true;
      }
      bool VisitMemberExpr(MemberExpr *M) {
        if (isa<FieldDecl>(M->getMemberDecl()))
          Found.push_back(M->getMemberDecl());
        return true;
      }
    } R;
    R.TraverseStmt(const_cast<Expr *>(E));
    return R.Found;
  }

  /// The expression names `D` (through parentheses, casts, `*`, members of it and `->`).
  static bool names(const Expr *E, const ValueDecl *D) {
    for (int I = 0; I < 16 && E; ++I) {
      E = bare(E);
      if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
        return DRE->getDecl() == D;
      if (const auto *ME = dyn_cast<MemberExpr>(E)) {
        if (ME->getMemberDecl() == D)
          return true;
        E = ME->getBase();
      } else if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->getOpcode() == UO_Deref) {
        E = U->getSubExpr();
      } else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E);
                 OC && (OC->getOperator() == OO_Arrow || OC->getOperator() == OO_Star) &&
                 OC->getNumArgs() == 1) {
        E = OC->getArg(0);
      } else {
        return false;
      }
    }
    return false;
  }

  /// The first expression in `S` that may write `D`: an assignment to it, ++/--, its address, a
  /// non-const reference or pointer argument, a non-const method called on it (reset(),
  /// emplace()). Writes through calls of other functions (a member set elsewhere) are not seen.
  const Expr *writeOf(const Stmt *S, const ValueDecl *D) const {
    class Writes : public AnalysedBodyVisitor<Writes> {
    public:
      const ValueDecl *D;
      const Expr *Found = nullptr;
      explicit Writes(const ValueDecl *D) : D(D) {}
      bool hit(const Expr *E) {
        if (!Found)
          Found = E;
        return true;
      }
      bool VisitBinaryOperator(BinaryOperator *BO) {
        return BO->isAssignmentOp() && names(BO->getLHS(), D) ? hit(BO) : true;
      }
      bool VisitUnaryOperator(UnaryOperator *U) {
        bool Writes = U->isIncrementDecrementOp() || U->getOpcode() == UO_AddrOf;
        return Writes && names(U->getSubExpr(), D) ? hit(U) : true;
      }
      bool VisitCXXOperatorCallExpr(CXXOperatorCallExpr *OC) {
        bool Assign = OC->isAssignmentOp() || OC->getOperator() == OO_PlusPlus ||
                      OC->getOperator() == OO_MinusMinus || OC->getOperator() == OO_Amp;
        return Assign && OC->getNumArgs() >= 1 && names(OC->getArg(0), D) ? hit(OC) : true;
      }
      bool VisitCXXMemberCallExpr(CXXMemberCallExpr *MC) {
        const CXXMethodDecl *MD = MC->getMethodDecl();
        return MD && !MD->isConst() && names(MC->getImplicitObjectArgument(), D) ? hit(MC) : true;
      }
      bool VisitCallExpr(CallExpr *CE) {
        const FunctionDecl *FD = CE->getDirectCallee();
        if (!FD || isa<CXXOperatorCallExpr>(CE))
          return true;
        for (unsigned I = 0; I < CE->getNumArgs() && I < FD->getNumParams(); ++I) {
          QualType PT = FD->getParamDecl(I)->getType();
          bool Mutable = (PT->isReferenceType() || PT->isPointerType()) &&
                         !PT->getPointeeType().isConstQualified();
          if (Mutable && names(CE->getArg(I), D))
            return hit(CE);
        }
        return true;
      }
    } W(D);
    W.TraverseStmt(const_cast<Stmt *>(S));
    return W.Found;
  }

  /// Whether two conditions are the same expression (same declarations, same operators).
  bool sameCondition(const Expr *A, const Expr *B) const {
    llvm::FoldingSetNodeID IA, IB;
    A->IgnoreParenImpCasts()->Profile(IA, Ctx, /*Canonical=*/true);
    B->IgnoreParenImpCasts()->Profile(IB, Ctx, /*Canonical=*/true);
    return IA == IB;
  }

  /// The statement of branch `Side` that comes first (Side itself when it is not a block).
  static const Stmt *firstOf(const Stmt *Side) {
    if (const auto *CS = dyn_cast<CompoundStmt>(Side)) {
      for (const Stmt *X : CS->body())
        if (!isa<NullStmt>(X))
          return X;
      return nullptr;
    }
    return Side;
  }

  /// Whether `S` is all that branch `Side` holds.
  static bool onlyStatement(const Stmt *Side, const Stmt *S) {
    if (const auto *CS = dyn_cast<CompoundStmt>(Side))
      return llvm::all_of(CS->body(), [&](const Stmt *X) { return X == S || isa<NullStmt>(X); });
    return Side == S;
  }

  /// Whether the path from `E` up to `Top` crosses only blocks and the ifs of the mixed step:
  /// no loop, no other condition (each element runs once, when its path is taken).
  bool onMixedPath(const Stmt *E, const Stmt *Top) const {
    const Stmt *St = E;
    while (St && PM.getParent(St) && !isa<CompoundStmt, IfStmt>(PM.getParent(St)))
      St = PM.getParent(St);
    for (const Stmt *P = St ? PM.getParent(St) : nullptr; P; P = PM.getParent(P)) {
      if (P == Top)
        return true;
      if (isa<CompoundStmt>(P))
        continue;
      if (const auto *If = dyn_cast<IfStmt>(P); If && llvm::is_contained(T.Plain.Ifs, If))
        continue;
      return false;
    }
    return false;
  }

  /// Validates a mixed step; false (with a blocker) when it cannot be rewritten with the same
  /// meaning.
  bool planMixed(const ImplicitBackward &B) {
    const PlainBranch &P = T.Plain;
    const IfStmt *If = P.Ifs.front();
    const ImplicitBackward &PB = plainBackward();
    std::string Cond = "`" + firstLine(text(P.Condition->getSourceRange())) + "`";
    auto Fail = [&](SourceLocation L, const std::string &Why) {
      block(L, Why);
      return false;
    };
    if (T.Backwards.size() != 1 || P.Backwards.size() != 1)
      return Fail(B.Backward->getBeginLoc(),
                  "a scaled and a plain path chosen by " + Cond + " with several backward "
                  "calls; not rewritten automatically");
    if (T.Steps.size() != 1)
      return Fail(T.Steps[1]->Call->getBeginLoc(),
                  "several optimizers in a step with a scaled and a plain path (chosen by " + Cond +
                      "); not rewritten automatically");
    if (B.ScaleStmt)
      return Fail(B.Backward->getBeginLoc(),
                  "the scaled loss of the path chosen by " + Cond + " is a statement of its own; "
                  "write scaler.scale(loss).backward() or migrate by hand");
    if (If->getInit() || If->getConditionVariable())
      return Fail(If->getBeginLoc(), "the if choosing the scaled or the plain path declares a "
                                     "variable; not rewritten automatically");
    const CompoundStmt *Block = parentCompound(If);
    if (!Block || If->getBeginLoc().isMacroID())
      return Fail(If->getBeginLoc(), "the if choosing the scaled or the plain path is not a "
                                     "statement of a block");
    // The condition is evaluated once more, at the end of the function given to value_and_grad,
    // to pick what it returns: it must read only, and the forward region must not change it.
    // (Calls are judged by onlyReads: a const method without arguments is a read.)
    bool Effects = P.Condition->HasSideEffects(Ctx, /*IncludePossibleEffects=*/false);
    if (Effects || !onlyReads(P.Condition))
      return Fail(P.Condition->getBeginLoc(),
                  "the scaled and the plain path are chosen by " + Cond + ", which " +
                      (Effects ? "has side effects"
                               : "is not a variable, a member, a pointer or optional test or a "
                                 "const method call") +
                      "; it would be evaluated again to choose what " + Tgt.ValueAndGrad +
                      " differentiates: store it in a variable first or migrate by hand");
    const Stmt *R0 = CalleeCallStmt; // the region starts at the scope, or at the callee's call
    if (const AutocastScope *S = T.Scope) {
      const Stmt *ScopeStart = S->GuardDeclStmt ? S->GuardDeclStmt
                                                : (S->Enable->Removable ? S->Enable->Removable : S->Enable->Call);
      R0 = childOf(ScopeStart, Block);
    }
    bool InRegion = false;
    for (const Stmt *Child : Block->body()) {
      if (Child == R0)
        InRegion = true;
      if (Child == If)
        break;
      if (!InRegion)
        continue;
      for (const ValueDecl *D : declsRead(P.Condition))
        if (const Expr *W = writeOf(Child, D))
          return Fail(W->getBeginLoc(), "the scaled and the plain path are chosen by " + Cond +
                                            ", which the forward region changes here; it would be "
                                            "evaluated again to choose what " + Tgt.ValueAndGrad +
                                            " differentiates: migrate by hand");
    }
    // The later ifs must choose the same way: the same condition, the scaled calls on the same side.
    for (size_t I = 1; I < P.Ifs.size(); ++I) {
      bool ScaledOnThen = P.PlainSides[I] != P.Ifs[I]->getThen();
      if (P.Ifs[I]->getInit() || P.Ifs[I]->getConditionVariable() ||
          !sameCondition(P.Ifs[I]->getCond(), P.Condition) || ScaledOnThen != P.ScaledWhenTrue)
        return Fail(P.Ifs[I]->getCond()->getBeginLoc(),
                    "the scaled and the plain path are chosen by " + Cond + " at " +
                        where(P.Condition->getBeginLoc()) + " and by `" +
                        firstLine(text(P.Ifs[I]->getCond()->getSourceRange())) + "` here" +
                        (ScaledOnThen != P.ScaledWhenTrue ? " (the scaler's calls on the other branch)" : "") +
                        "; the paths may not pair up: choose both by one condition or migrate by hand");
    }
    if (P.Steps.empty())
      return Fail(PB.Backward->getBeginLoc(),
                  "the plain path (no scaler) chosen by " + Cond + " has no step() of the "
                  "optimizer in this function; its gradients would be lost: migrate by hand");
    // Each element runs once on its path, in the if's block: no accumulation, no other condition.
    std::vector<const Stmt *> Elements{B.Backward, PB.Backward};
    for (const auto *List : {&T.Unscales, &T.Steps, &T.Updates, &P.Steps})
      for (const ScalerCall *C : *List)
        Elements.push_back(C->Call);
    for (const Stmt *E : Elements)
      if (!within(E, Block) || !onMixedPath(E, Block))
        return Fail(E->getBeginLoc(), "a step with a scaled and a plain path (chosen by " + Cond +
                                          ") has this call outside them or under another loop "
                                          "or condition (a gradient accumulation?); not "
                                          "rewritten automatically");
    // The backwards come first in their branches: the function returns the loss as it was there.
    const Stmt *ScaledSide = P.ScaledWhenTrue ? If->getThen() : If->getElse();
    for (const auto &[Side, Bw] : {std::pair(ScaledSide, &B), std::pair(P.PlainSides.front(), &PB)})
      if (!Bw->BackwardStmt || firstOf(Side) != Bw->BackwardStmt || Bw->BackwardStmt->getBeginLoc().isMacroID())
        return Fail(Bw->Backward->getBeginLoc(),
                    "backward() is not the first statement of its branch of the if on " + Cond +
                        "; what the function given to " + Tgt.ValueAndGrad +
                        " returns must be the loss as backward() saw it: migrate by hand");
    return true;
  }

  /// The backwards leave the branches; a branch left empty goes (the whole if when both do).
  void planMixedBackwards(const ImplicitBackward &B) {
    const IfStmt *If = T.Plain.Ifs.front();
    const Stmt *ScaledSide = T.Plain.ScaledWhenTrue ? If->getThen() : If->getElse();
    const Stmt *PlainSide = T.Plain.PlainSides.front();
    const ImplicitBackward &PB = plainBackward();
    Edit E;
    if (onlyStatement(ScaledSide, B.BackwardStmt) && onlyStatement(PlainSide, PB.BackwardStmt)) {
      if (removal(If, E))
        Edits.push_back(E);
      else
        block(If->getBeginLoc(), "the if choosing the path is inside a macro");
      return;
    }
    for (const auto &[Side, St] : {std::pair(ScaledSide, B.BackwardStmt), std::pair(PlainSide, PB.BackwardStmt)}) {
      if (Side == St) { // `if (c) loss.backward(); else { ... }`: the branch keeps a statement
        CharSourceRange R = stmtRange(St);
        if (R.isInvalid()) {
          block(St->getBeginLoc(), "backward() is inside a macro");
          return;
        }
        unsigned SB = SM.getFileOffset(R.getBegin()), SE = SM.getFileOffset(R.getEnd());
        Edits.push_back({SB, SE - SB, "{}"});
        continue;
      }
      if (!removal(St, E)) {
        block(St->getBeginLoc(), "backward() is inside a macro");
        return;
      }
      Edits.push_back(E);
    }
  }

  std::string canonicalMethod(ScalerCall::Method M) const {
    switch (M) {
    case ScalerCall::Method::Scale: return "scale";
    case ScalerCall::Method::Unscale: return "unscale_";
    case ScalerCall::Method::Step: return "step";
    case ScalerCall::Method::Update: return "update";
    case ScalerCall::Method::GetScale: return "get_scale";
    case ScalerCall::Method::IsEnabled: return "is_enabled";
    }
    return "";
  }

  /// Renames CamelCase or other spellings of a scaler method to amp::GradScaler's.
  void renameMethod(const ScalerCall *C) {
    const auto *ME = dyn_cast<MemberExpr>(C->Call->getCallee());
    if (!ME)
      return;
    std::string Want = canonicalMethod(C->Kind);
    if (ME->getMemberDecl()->getName() == Want)
      return;
    unsigned B, E;
    if (!fileRange(ME->getMemberLoc(), B, E)) {
      block(C->Call->getBeginLoc(), "the scaler call is inside a macro body");
      return;
    }
    Edits.push_back({B, E - B, Want});
  }

  void addGradsArgument(const ScalerCall *C) {
    // The implicit form takes the optimizer alone; anything else a project scaler is given (the
    // module whose .grad it reads) has no place in the explicit form.
    for (unsigned I = 1; I < C->Call->getNumArgs(); ++I) {
      const Expr *A = C->Call->getArg(I);
      if (isa<CXXDefaultArgExpr>(A))
        continue;
      block(A->getBeginLoc(), "`" + firstLine(text(C->Call->getSourceRange())) + "` passes `" +
                                  text(A->getSourceRange()) + "` besides the optimizer; the "
                                  "explicit-grad form takes the optimizer and the grads only, "
                                  "and what this argument is for is not known (a module whose "
                                  ".grad the scaler reads?): migrate this step by hand");
      return;
    }
    SourceLocation RP = C->Call->getRParenLoc();
    if (RP.isMacroID()) {
      block(C->Call->getBeginLoc(), "the scaler call is inside a macro body");
      return;
    }
    Edits.push_back({off(RP), 0, ", " + gradsFor(C->Optimizer)});
  }

  /// Whether a call's value is used (it is not a statement of its own).
  bool resultUsed(const Expr *Call) const {
    const Stmt *Cur = Call;
    for (const Stmt *P = PM.getParent(Cur); P; Cur = P, P = PM.getParent(P)) {
      if (isa<CompoundStmt>(P))
        return false;
      if (const auto *E = dyn_cast<Expr>(P); E && E->IgnoreImplicit() == Call->IgnoreImplicit())
        continue; // implicit wrappers around the call itself
      if (isa<ExprWithCleanups, ImplicitCastExpr>(P))
        continue;
      if (const auto *If = dyn_cast<IfStmt>(P); If && If->getCond() != Cur)
        return false; // `if (c) scaler.unscale_(opt);`
      return true;
    }
    return false;
  }

  void planScalerCalls() {
    for (const ScalerCall *U : T.Unscales) {
      if (U->HasExplicitGrads)
        continue;
      if (U->ResultUsed) {
        planCheckedUnscale(U);
        continue;
      }
      renameMethod(U);
      addGradsArgument(U);
    }
    for (const ScalerCall *S : T.Steps) {
      renameMethod(S);
      addGradsArgument(S);
    }
    for (const ScalerCall *U : T.Updates)
      renameMethod(U);
    for (const ScalerCall *G : T.Others)
      renameMethod(G);
  }

  /// A checked unscale whose answer is used (`bool finite = scaler.unscale_and_check(opt);`)
  /// becomes the target's checked unscale on the grads, which answers whether every grad is
  /// finite (`scaler.unscale_and_check(opt, grads)`), negated for a method whose true means
  /// "an inf or NaN was found". What the user's answer means comes from the rules, never from
  /// its name: a method in neither list, or one that answers something other than a bool, is
  /// reported.
  void planCheckedUnscale(const ScalerCall *U) {
    std::string Call = "`" + firstLine(text(U->Call->getSourceRange())) + "`";
    const CXXMethodDecl *MD = U->Call->getMethodDecl();
    std::string Name = MD->getNameAsString();
    const ScalerMethodNames &N = Rules.ScalerMethods;
    bool Finite = llvm::is_contained(N.CheckedFinite, Name);
    bool FoundInf = llvm::is_contained(N.CheckedFoundInf, Name);
    if (!U->Call->getType()->isBooleanType()) {
      block(U->Call->getBeginLoc(),
            "the result of " + Call + " is used, and its type is '" +
                U->Call->getType().getAsString() + "', not bool; the checked unscale " +
                Tgt.CheckedUnscale + "(optimizer, grads) answers whether every grad is finite: "
                "migrate this step by hand");
      return;
    }
    if (!Finite && !FoundInf) {
      block(U->Call->getBeginLoc(),
            "the result of " + Call + " is used (a checked unscale), and the rules do not say "
            "what its answer means: name '" + Name + "' in scaler.methods.checked-unscale-finite "
            "(true when every grad is finite) or checked-unscale-found-inf (true when an inf or "
            "NaN was found) of a rule file, or migrate this step by hand");
      return;
    }
    const auto *ME = dyn_cast<MemberExpr>(U->Call->getCallee());
    unsigned MB, MEnd, CB, CEnd;
    if (!ME || !fileRange(ME->getMemberLoc(), MB, MEnd) ||
        !fileRange(U->Call->getSourceRange(), CB, CEnd)) {
      block(U->Call->getBeginLoc(), "the scaler call is inside a macro body");
      return;
    }
    if (FoundInf)
      Edits.push_back({CB, 0, "!"});
    if (Name != Tgt.CheckedUnscale)
      Edits.push_back({MB, MEnd - MB, Tgt.CheckedUnscale});
    addGradsArgument(U);
  }

  /// A step without a scaler: `optimizer.step();` becomes `amp::step(optimizer, grads);`, which
  /// puts the explicit grads where step() reads them for the duration of the call.
  void planOptimizerSteps(llvm::ArrayRef<const ScalerCall *> Steps) {
    if (Steps.empty())
      return;
    if (Tgt.Step.empty()) {
      block(Steps.front()->Call->getBeginLoc(), "a step without a scaler needs target.step in the rules");
      return;
    }
    for (const ScalerCall *S : Steps) {
      if (resultUsed(S->Call) || S->Call->getBeginLoc().isMacroID()) {
        block(S->Call->getBeginLoc(), "`" + firstLine(text(S->Call->getSourceRange())) +
                                          "` is not a statement of its own (its result is used, "
                                          "or it is inside a macro); migrate this step by hand");
        continue;
      }
      unsigned B, E;
      if (!fileRange(S->Call->getSourceRange(), B, E)) {
        block(S->Call->getBeginLoc(), "the optimizer's step() is inside a macro");
        continue;
      }
      Edits.push_back({B, E - B, Tgt.Step + "(" + text(S->OptimizerArg->getSourceRange()) + ", " +
                                     gradsFor(S->Optimizer) + ")"});
    }
  }

  /// `OfOptimizer` is set when the parameters are named through one of the step's optimizers.
  bool paramsOfStep(const Expr *Params, const ScalerCall **OfOptimizer = nullptr) const {
    // `model->parameters()`, `model.parameters()` of a model of this step, or the optimizer's,
    // through temporaries, copies and a local list initialised from it (parametersCall).
    const CXXMemberCallExpr *MC = parametersCall(Params);
    if (!MC || MC->getMethodDecl()->getName() != "parameters")
      return false;
    const Expr *Obj = MC->getImplicitObjectArgument()->IgnoreParenImpCasts();
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Obj); OC && OC->getNumArgs())
      Obj = OC->getArg(0)->IgnoreParenImpCasts();
    const ValueDecl *D = nullptr;
    if (const auto *DRE = dyn_cast<DeclRefExpr>(Obj))
      D = DRE->getDecl();
    else if (const auto *ME = dyn_cast<MemberExpr>(Obj))
      D = ME->getMemberDecl();
    else if (isa<CXXThisExpr>(Obj))
      return llvm::any_of(T.Forwards, [](const ForwardCall *F) { return F->Model.IsThis; });
    if (!D)
      return false;
    if (llvm::any_of(T.Forwards, [&](const ForwardCall *F) { return F->Model.Decl == D; }))
      return true;
    if (CalleeFA && llvm::any_of(CalleeFA->Forwards, [&](const ForwardCall &F) { return callerModel(F.Model) == D; }))
      return true;
    // A step split over two methods: the model the scaling half runs (a member of the class).
    if (Split && llvm::any_of(Split->ScalingHalf->Forwards, [&](const ForwardCall *F) { return F->Model.Decl == D; }))
      return true;
    for (const ScalerCall *S : T.Steps)
      if (S->Optimizer.Decl == D) {
        if (OfOptimizer)
          *OfOptimizer = S;
        return true;
      }
    return false;
  }

  void planClips() {
    for (const ClipCall *C : T.Clips) {
      unsigned O = off(C->Call->getBeginLoc());
      ObjectRef Of = T.stepsOptimizer(C->ParamsOwner) ? C->ParamsOwner : ObjectRef();
      if (!T.Unscaled && !T.Plain.contains(O) && !T.unscaledBefore(O, Of, SM)) {
        block(C->Call->getBeginLoc(), "clipping still-scaled gradients (no unscale_ before it); "
                                      "fix the order first (amp-clip-before-unscale)");
        continue;
      }
      if (!C->NormIsL2) {
        block(C->Call->getBeginLoc(), "clip norm type " + C->NormText +
                                          " is not L2; clip_by_global_norm only does the L2 norm");
        continue;
      }
      if (!C->ErrorIfNonfinite.empty()) {
        block(C->Call->getBeginLoc(),
              "the clip is called with error_if_nonfinite = `" + C->ErrorIfNonfinite +
                  "`: it throws when the total norm is not finite, and " + Tgt.Clip +
                  " does not; drop the check or migrate this step by hand");
        continue;
      }
      // A user rule may name an argument this call does not have (a rule for another overload).
      unsigned Arity = C->Call->getNumArgs();
      if ((unsigned)C->Rule->ParamsArg >= Arity || (unsigned)C->Rule->MaxNormArg >= Arity) {
        block(C->Call->getBeginLoc(),
              "the clip rule for '" + C->Rule->Function + "' names argument " +
                  std::to_string(std::max(C->Rule->ParamsArg, C->Rule->MaxNormArg)) +
                  " but this call has " + std::to_string(Arity) + " argument(s); fix the rule");
        continue;
      }
      const Expr *Params = C->Call->getArg(C->Rule->ParamsArg);
      const ScalerCall *OfOptimizer = nullptr;
      if (!paramsOfStep(Params, &OfOptimizer)) {
        block(Params->getBeginLoc(), "clipping a parameter set other than the model's or the "
                                     "optimizer's; the explicit grads cover the optimizer's parameters");
        continue;
      }
      std::string G = GradsName;
      if (!PerOptimizer.empty()) {
        if (!OfOptimizer) {
          block(Params->getBeginLoc(), "with several optimizers, clipping a model's parameters: "
                                       "which optimizer's grads to clip is unknown; clip "
                                       "optimizer.parameters() or migrate by hand");
          continue;
        }
        G = gradsFor(OfOptimizer->Optimizer);
      }
      if (!C->Statement || C->Call->getBeginLoc().isMacroID()) {
        block(C->Call->getBeginLoc(), "the clip call is not a statement of its own");
        continue;
      }
      std::string MaxNorm = text(C->Call->getArg(C->Rule->MaxNormArg)->getSourceRange());
      std::string Indent = indentAt(off(C->Statement->getBeginLoc()));
      // In place, as clip_grad_norm_ acted on `.grad`: the grads keep their memory, and the norm
      // it returns is the one the clip computed (the rule's out-of-place form otherwise).
      const bool InPlace = !Tgt.ClipInPlace.empty();
      std::string Clip = InPlace ? Tgt.ClipInPlace + "(" + G + ", " + MaxNorm + ");"
                                 : G + " = " + Tgt.Clip + "(" + G + ", " + MaxNorm + ");";
      std::string Norm = Tgt.GlobalNorm + "(" + G + ").item<double>()";
      std::string NormAndClip = Tgt.ClipInPlace + "(" + G + ", " + MaxNorm + ").item<double>()";
      CharSourceRange SR = stmtRange(C->Statement);
      unsigned SB = SM.getFileOffset(SR.getBegin()), SE = SM.getFileOffset(SR.getEnd());
      if (!C->ResultUsed) {
        Edits.push_back({SB, SE - SB, Clip});
        continue;
      }
      // The returned norm is used: the norm of the unscaled grads before clipping (the in-place
      // clip returns it; otherwise it is computed before the clip).
      const auto *DS = dyn_cast<DeclStmt>(C->Statement);
      const VarDecl *VD = DS && DS->isSingleDecl() ? dyn_cast<VarDecl>(DS->getSingleDecl()) : nullptr;
      if (VD && VD->getInit() && VD->getInit()->IgnoreImplicit() == C->Call) {
        unsigned CB, CE;
        if (!fileRange(C->Call->getSourceRange(), CB, CE)) {
          block(C->Call->getBeginLoc(), "the clip call is inside a macro body");
          continue;
        }
        if (InPlace) {
          Edits.push_back({CB, CE - CB, NormAndClip});
          continue;
        }
        Edits.push_back({CB, CE - CB, Norm});
        Edits.push_back({SE, 0, "\n" + Indent + Clip});
        continue;
      }
      std::string NormVar = freshName("grad_norm");
      unsigned CB, CE;
      if (!fileRange(C->Call->getSourceRange(), CB, CE)) {
        block(C->Call->getBeginLoc(), "the clip call is inside a macro body");
        continue;
      }
      std::string Before = InPlace ? "const double " + NormVar + " = " + NormAndClip + ";\n" + Indent
                                   : "const double " + NormVar + " = " + Norm + ";\n" + Indent +
                                         Clip + "\n" + Indent;
      Edits.push_back({SB, 0, Before});
      Edits.push_back({CB, CE - CB, NormVar});
    }
  }

  /// Statements between the backward and step() that touch `.grad`: the explicit grads never
  /// reach it, so such a statement would silently act on nothing after the rewrite.
  void planGradAccesses() {
    for (const GradAccess &A : T.GradAccesses) {
      std::string Stmt = firstLine(text(A.Statement->getSourceRange()));
      std::string Why;
      std::optional<GradAllReduce> AR = matchGradAllReduce(A.Statement);
      if (AR && (!PerOptimizer.empty() || Accumulate || Tgt.AllReduceGrads.empty())) {
        // Not one bucketed collective here; the loop itself may still carry over.
        if (std::optional<GradLoop> L = matchGradLoop(A.Statement, Why)) {
          rewriteGradLoop(*L);
          continue;
        }
      }
      if (AR) {
        if (!PerOptimizer.empty() || Accumulate || Tgt.AllReduceGrads.empty()) {
          block(A.Access->getBeginLoc(),
                "`" + Stmt + "` all-reduces .grad across ranks; with " +
                    (Tgt.AllReduceGrads.empty() ? std::string("no target.all-reduce-grads in the rules")
                                                : std::string("several optimizers or a gradient accumulation")) +
                    " it is not rewritten yet: migrate this step by hand");
          continue;
        }
        CharSourceRange R = stmtRange(A.Statement);
        unsigned B, E;
        if (R.isInvalid() || !fileRange(SourceRange(R.getBegin(), R.getBegin()), B, E)) {
          block(A.Access->getBeginLoc(), "the gradient all-reduce is inside a macro");
          continue;
        }
        B = SM.getFileOffset(R.getBegin());
        E = SM.getFileOffset(R.getEnd());
        Edits.push_back({B, E - B, Tgt.AllReduceGrads + "(" + GradsName + ", " + AR->Group +
                                       (AR->Average ? "" : ", /*average=*/false") + ");"});
        continue;
      }
      if (std::optional<GradLoop> L = matchGradLoop(A.Statement, Why)) {
        rewriteGradLoop(*L);
        continue;
      }
      if (!Why.empty()) {
        block(A.Access->getBeginLoc(), "`" + Stmt + "` " + Why);
        continue;
      }
      bool Plain = T.Unscaled || T.Plain.contains(off(A.Statement->getBeginLoc()));
      std::string Backward = Plain ? "backward()" : "the scaled backward";
      if (A.How == GradAccess::Kind::GradAccessor)
        block(A.Access->getBeginLoc(),
              "`" + Stmt + "` reads or writes .grad between " + Backward + " and step(); the "
              "explicit grads of " + Tgt.ValueAndGrad + " never reach .grad, so after the rewrite "
              "it would act on nothing: rewrite it onto the grads or migrate this step by hand");
      else
        block(A.Access->getBeginLoc(),
              "`" + Stmt + "` hands the parameters (or the model or optimizer) to code that may "
              "read or write .grad between " + Backward + " and step(); the explicit grads of " +
              Tgt.ValueAndGrad + " never reach .grad: rewrite it onto the grads or migrate this "
              "step by hand");
    }
  }

  /// An element-wise loop over the step's parameters that touches nothing of them but their
  /// gradients:
  ///   for (auto &p : model->parameters()) { if (p.grad().defined()) p.grad().div_(world); }
  /// Each iteration works on one gradient alone, so the loop carries over to the explicit grads
  /// one for one, whatever their order: `for (auto &p_grad : grads) { ... p_grad.div_(world); }`.
  /// `Why` is set when the statement is such a loop that cannot be carried over (said with it).
  struct GradLoop {
    const CXXForRangeStmt *Loop = nullptr;
    std::vector<const CXXMemberCallExpr *> Accessors;
    std::string Grads;
  };

  /// Every `.grad()`/`.mutable_grad()` call in a statement, and whether all are on `P`.
  class GradAccessors : public AnalysedBodyVisitor<GradAccessors> {
  public:
    explicit GradAccessors(const VarDecl *P) : P(P) {}
    const VarDecl *P;
    std::vector<const CXXMemberCallExpr *> OnP;
    bool Others = false; ///< a grad accessor on something else, or `P` used another way
    bool VisitCXXMemberCallExpr(CXXMemberCallExpr *MC) {
      if (isGradAccessor(MC)) {
        if (isGradOf(MC, P))
          OnP.push_back(MC);
        else
          Others = true;
      }
      return true;
    }
    bool VisitDeclRefExpr(DeclRefExpr *E) {
      if (E->getDecl() != P)
        return true;
      ++Uses;
      return true;
    }
    unsigned Uses = 0;
  };

  std::optional<GradLoop> matchGradLoop(const Stmt *S, std::string &Why) const {
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
    G.TraverseStmt(const_cast<Stmt *>(FR->getBody()));
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
    unsigned LoopOff = off(FR->getBeginLoc());
    bool AfterUnscale = llvm::any_of(T.Unscales, [&](const ScalerCall *U) {
      return off(U->Call->getBeginLoc()) < LoopOff;
    });
    for (const CXXMemberCallExpr *A : G.OnP) {
      const Stmt *Parent = PM.getParent(A);
      while (Parent && isa<ImplicitCastExpr, MaterializeTemporaryExpr, ParenExpr>(Parent))
        Parent = PM.getParent(Parent);
      const auto *OC = dyn_cast_or_null<CXXOperatorCallExpr>(Parent);
      if (AfterUnscale && OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2 &&
          within(A, OC->getArg(0))) {
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
      L.Grads = gradsFor(Owner);
    } else if (!PerOptimizer.empty()) {
      Why = "loops over the model's parameters while several optimizers step with one loss; "
            "which optimizer's grads it means is not known: migrate this step by hand";
      return std::nullopt;
    } else {
      L.Grads = GradsName;
    }
    return L;
  }

  /// `for (auto &p : X.parameters())` -> `for (auto &p_grad : grads)`, each `p.grad()` ->
  /// `p_grad`.
  void rewriteGradLoop(const GradLoop &L) {
    const VarDecl *P = L.Loop->getLoopVariable();
    unsigned HB, HE, RB, RE;
    if (!fileRange(SourceRange(P->getBeginLoc(), P->getLocation()), HB, HE) ||
        !fileRange(L.Loop->getRangeInit()->getSourceRange(), RB, RE)) {
      block(L.Loop->getBeginLoc(), "the loop over the parameters' .grad is inside a macro");
      return;
    }
    std::string Name = freshName(P->getName().str() + "_grad");
    Edits.push_back({HB, RE - HB, "auto &" + Name + " : " + L.Grads});
    for (const CXXMemberCallExpr *MC : L.Accessors) {
      unsigned B, E;
      if (!fileRange(MC->getSourceRange(), B, E)) {
        block(MC->getBeginLoc(), "a .grad access of the loop is inside a macro");
        return;
      }
      Edits.push_back({B, E - B, Name});
    }
  }

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

  static const CXXMemberCallExpr *memberCall(const Expr *E, StringRef Name) {
    const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(E ? E->IgnoreImplicit()->IgnoreParenImpCasts() : nullptr);
    const CXXMethodDecl *MD = MC ? MC->getMethodDecl() : nullptr;
    return MD && MD->getIdentifier() && MD->getName() == Name ? MC : nullptr;
  }

  /// `p.grad()` / `p.mutable_grad()` of the loop variable.
  static bool isGradOf(const Expr *E, const VarDecl *P) {
    const auto *MC = dyn_cast_or_null<CXXMemberCallExpr>(E ? E->IgnoreImplicit()->IgnoreParenImpCasts() : nullptr);
    if (!MC || !isGradAccessor(MC))
      return false;
    const auto *DRE = dyn_cast<DeclRefExpr>(MC->getImplicitObjectArgument()->IgnoreParenImpCasts());
    return DRE && DRE->getDecl() == P;
  }

  /// Whether an expression holds exactly one `p.grad()` and nothing else that computes.
  class GradOnly : public AnalysedBodyVisitor<GradOnly> {
  public:
    const VarDecl *P;
    int Grads = 0, Other = 0;
    explicit GradOnly(const VarDecl *P) : P(P) {}
    bool TraverseCXXMemberCallExpr(CXXMemberCallExpr *MC) {
      if (isGradOf(MC, P)) {
        ++Grads;
        return true;
      }
      ++Other;
      return true;
    }
    bool VisitCallExpr(CallExpr *CE) {
      if (!isa<CXXMemberCallExpr>(CE))
        ++Other;
      return true;
    }
  };

  /// The process group an `allreduce` is called on, as written, when it is an intrusive_ptr
  /// (what amp::ProcessGroupRef takes); "" otherwise.
  std::string groupOf(const CXXMemberCallExpr *Call) const {
    const auto *Arrow = dyn_cast<CXXOperatorCallExpr>(Call->getImplicitObjectArgument()->IgnoreParenImpCasts());
    if (!Arrow || Arrow->getOperator() != OO_Arrow || Arrow->getNumArgs() != 1)
      return "";
    const Expr *G = Arrow->getArg(0)->IgnoreParenImpCasts();
    const CXXRecordDecl *RD = G->getType().getNonReferenceType()->getAsCXXRecordDecl();
    if (!RD || qualifiedName(RD) != "c10::intrusive_ptr" || !isa<DeclRefExpr, MemberExpr>(G))
      return "";
    return text(G->getSourceRange());
  }

  /// `X` is the group's size: `<group>->getSize()`, or a variable initialised from it.
  bool isGroupSize(const Expr *X, StringRef Group) const {
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

  std::optional<GradAllReduce> matchGradAllReduce(const Stmt *S) const {
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
        G.TraverseStmt(const_cast<Expr *>(V->getInit()));
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
          G.TraverseStmt(const_cast<Expr *>(Arg));
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

  static std::string firstLine(StringRef S) {
    StringRef L = S.split('\n').first.rtrim();
    return L.size() < S.rtrim().size() ? (L + " ...").str() : L.str();
  }

  void planZeroGrads(const ImplicitBackward &) {
    for (const ZeroGradCall *Z : stepZeroGrads()) {
      unsigned O = off(Z->Call->getBeginLoc());
      if (O >= RegionBegin && O < RegionEnd)
        continue; // handled with the region
      bool OfStep = llvm::any_of(T.Steps, [&](const ScalerCall *S) { return S->Optimizer == Z->Owner; }) ||
                    llvm::any_of(T.Forwards, [&](const ForwardCall *F) { return F->Model == Z->Owner; }) ||
                    Split.has_value();
      if (!OfStep || !Z->Statement)
        continue; // harmless to keep: the explicit grads never read .grad
      if (Accumulate && O > GradsDeclAt) {
        // It ended an accumulation: it clears the summed grads now. With several optimizers the
        // list holds all their grads: their zero_grad() calls must stand together (one clear).
        if (!PerOptimizer.empty()) {
          const auto *Block = parentCompound(Z->Statement);
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
          bool Covers = llvm::all_of(PerOptimizer, [&](const auto &PO) {
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
            Edit E;
            if (removal(Z->Statement, E))
              Edits.push_back(E);
            continue;
          }
        }
        CharSourceRange ZR = stmtRange(Z->Statement);
        if (ZR.isInvalid() || Z->Statement->getBeginLoc().isMacroID() || SM.getFileID(ZR.getBegin()) != File) {
          block(Z->Call->getBeginLoc(), "zero_grad() is inside a macro");
          continue;
        }
        unsigned ZB = SM.getFileOffset(ZR.getBegin()), ZE = SM.getFileOffset(ZR.getEnd());
        Edits.push_back({ZB, ZE - ZB, GradsName + ".clear();"});
        continue;
      }
      Edit E;
      if (removal(Z->Statement, E))
        Edits.push_back(E);
    }
  }

  // ---- the scaler's declaration -------------------------------------------------------------

  class TypeLocFinder : public RecursiveASTVisitor<TypeLocFinder> {
  public:
    const CXXRecordDecl *Target;
    std::vector<SourceRange> Ranges;
    explicit TypeLocFinder(const CXXRecordDecl *T) : Target(T) {}
    bool TraverseElaboratedTypeLoc(ElaboratedTypeLoc TL) {
      if (matches(TL.getType())) {
        Ranges.push_back(TL.getSourceRange());
        return true; // don't descend: the qualifier is part of the range
      }
      return RecursiveASTVisitor::TraverseElaboratedTypeLoc(TL);
    }
    bool VisitRecordTypeLoc(RecordTypeLoc TL) {
      if (matches(TL.getType()))
        Ranges.push_back(TL.getSourceRange());
      return true;
    }
    bool VisitTypedefTypeLoc(TypedefTypeLoc TL) {
      if (matches(TL.getType()))
        Ranges.push_back(TL.getSourceRange());
      return true;
    }
    bool matches(QualType QT) const {
      const CXXRecordDecl *RD = QT->getAsCXXRecordDecl();
      return RD && RD->getCanonicalDecl() == Target->getCanonicalDecl();
    }
  };

  class ConstructFinder : public RecursiveASTVisitor<ConstructFinder> {
  public:
    const CXXRecordDecl *Target;
    std::vector<const CXXConstructExpr *> Constructs;
    std::vector<const CallExpr *> MakeCalls; ///< std::make_shared<T>(...) / make_unique / emplace
    explicit ConstructFinder(const CXXRecordDecl *T) : Target(T) {}
    bool VisitCXXConstructExpr(CXXConstructExpr *E) {
      if (E->getConstructor()->getParent()->getCanonicalDecl() == Target->getCanonicalDecl() &&
          !E->getConstructor()->isCopyOrMoveConstructor())
        Constructs.push_back(E);
      return true;
    }
    bool VisitCallExpr(CallExpr *E) {
      const FunctionDecl *FD = E->getDirectCallee();
      if (!FD || !FD->getIdentifier())
        return true;
      StringRef N = FD->getName();
      if (N != "make_shared" && N != "make_unique")
        return true;
      if (const TemplateArgumentList *TA = FD->getTemplateSpecializationArgs())
        if (TA->size() >= 1 && TA->get(0).getKind() == TemplateArgument::Type)
          if (const CXXRecordDecl *RD = TA->get(0).getAsType()->getAsCXXRecordDecl())
            if (RD->getCanonicalDecl() == Target->getCanonicalDecl())
              MakeCalls.push_back(E);
      return true;
    }
  };

  /// `amp::GradScalerOptions().init_scale(a)...` from the arguments of the user's constructor.
  bool mapOptions(const CXXConstructorDecl *Ctor, llvm::ArrayRef<const Expr *> Args,
                  SourceLocation Loc, std::string &Out) {
    Out = Tgt.ScalerOptions + "()";
    for (unsigned I = 0; I < Args.size(); ++I) {
      if (isa<CXXDefaultArgExpr>(Args[I]))
        continue;
      std::string Param = I < Ctor->getNumParams() ? Ctor->getParamDecl(I)->getNameAsString() : "";
      std::string Setter;
      for (const auto &[Opt, Names] : Rules.ScalerOptionParams)
        if (llvm::is_contained(Names, Param))
          Setter = Opt;
      if (Setter.empty()) {
        block(Loc, "scaler constructor argument " + std::to_string(I + 1) +
                       (Param.empty() ? "" : " ('" + Param + "')") +
                       " has no known meaning; map it in a rule file (scaler.options)");
        return false;
      }
      Out += "." + Setter + "(" + text(Args[I]->getSourceRange()) + ")";
    }
    return true;
  }

  void planScalerDecl() {
    const ValueDecl *D = T.Scaler.Decl;
    if (!D || !T.ScalerClass) {
      block(stepLoc(), "the scaler object could not be identified");
      return;
    }
    const CXXRecordDecl *Class = T.ScalerClass->getCanonicalDecl();
    if (qualifiedName(Class) == StringRef(Tgt.ScalerClass))
      return;
    const auto *VD = dyn_cast<VarDecl>(D);
    const auto *FDl = dyn_cast<FieldDecl>(D);
    if (!VD || isa<ParmVarDecl>(VD) || !VD->isLocalVarDecl()) {
      // A parameter, a member, a global: the object crosses function (and file) boundaries.
      planScalerFlow(Class);
      return;
    }
    if (!VD && !FDl) {
      block(D->getLocation(), "the scaler is not a variable or a data member");
      return;
    }
    if (SM.getFileID(SM.getExpansionLoc(D->getLocation())) != File) {
      block(D->getLocation(), "the scaler is declared in another file");
      return;
    }
    // Every use of the scaler must be one of the calls this plan rewrites.
    RefCollector RC(D);
    if (VD)
      RC.TraverseStmt(const_cast<Stmt *>(FA.Function->getBody()));
    else
      RC.TraverseDecl(const_cast<RecordDecl *>(FDl->getParent()));
    size_t Known = 0;
    for (const ScalerCall &C : FA.ScalerCalls)
      if (C.Scaler.Decl == D)
        ++Known;
    std::vector<const Expr *> Unknown;
    for (const Expr *R : RC.Refs) {
      bool IsCall = llvm::any_of(FA.ScalerCalls, [&](const ScalerCall &C) {
        return C.Scaler.Decl == D && within(R, C.Call);
      });
      if (!IsCall)
        Unknown.push_back(R);
    }
    (void)Known;
    if (!Unknown.empty() && VD) {
      // Passed on (to a function, into another holder): follow it through the translation unit.
      planScalerFlow(Class);
      return;
    }
    if (!Unknown.empty()) {
      block(Unknown.front()->getBeginLoc(),
            "the scaler is used here other than through scale/unscale_/step/update/get_scale; "
            "changing its type to " + Tgt.ScalerClass + " would break this use");
      return;
    }
    // Its type, wherever it is spelled in the declaration.
    TypeLocFinder TF(Class);
    if (VD)
      TF.TraverseDecl(const_cast<VarDecl *>(VD));
    else
      TF.TraverseDecl(const_cast<FieldDecl *>(FDl));
    ConstructFinder CF(Class);
    if (VD && VD->getInit())
      CF.TraverseStmt(const_cast<Expr *>(VD->getInit()));
    if (FDl) {
      if (FDl->hasInClassInitializer())
        CF.TraverseStmt(FDl->getInClassInitializer());
      for (const CXXConstructorDecl *Ctor : cast<CXXRecordDecl>(FDl->getParent())->ctors())
        for (const CXXCtorInitializer *Init : Ctor->inits())
          if (Init->getMember() == FDl && Init->isWritten()) {
            CF.TraverseStmt(Init->getInit());
            TF.TraverseStmt(Init->getInit());
          }
    }
    if (TF.Ranges.empty() && CF.Constructs.empty()) {
      block(D->getLocation(), "the scaler's type is not spelled in its declaration (auto from a "
                              "function call?); change it by hand");
      return;
    }
    std::set<unsigned> Seen;
    for (SourceRange R : TF.Ranges) {
      unsigned B, E;
      if (!fileRange(R, B, E)) {
        block(D->getLocation(), "the scaler's type is spelled inside a macro");
        return;
      }
      if (Seen.insert(B).second)
        Edits.push_back({B, E - B, Tgt.ScalerClass});
    }
    for (const CXXConstructExpr *CE : CF.Constructs) {
      unsigned Written = 0;
      for (const Expr *A : CE->arguments())
        if (!isa<CXXDefaultArgExpr>(A))
          ++Written;
      if (!Written)
        continue;
      std::string Opts;
      llvm::SmallVector<const Expr *, 6> Args(CE->arguments());
      if (!mapOptions(CE->getConstructor(), Args, CE->getBeginLoc(), Opts))
        return;
      unsigned B, E;
      if (!fileRange(SourceRange(CE->getArg(0)->getBeginLoc(), CE->getArg(Written - 1)->getEndLoc()), B, E)) {
        block(CE->getBeginLoc(), "the scaler's constructor arguments are inside a macro");
        return;
      }
      Edits.push_back({B, E - B, Opts});
    }
    for (const CallExpr *MC : CF.MakeCalls) {
      if (MC->getNumArgs() == 0)
        continue;
      const CXXConstructorDecl *Ctor = nullptr;
      for (const CXXConstructorDecl *C : Class->getDefinition()->ctors())
        if (!C->isCopyOrMoveConstructor() && C->getNumParams() >= MC->getNumArgs() &&
            C->getMinRequiredArguments() <= MC->getNumArgs()) {
          if (Ctor) {
            block(MC->getBeginLoc(), "several scaler constructors fit these arguments");
            return;
          }
          Ctor = C;
        }
      if (!Ctor) {
        block(MC->getBeginLoc(), "no scaler constructor fits these arguments");
        return;
      }
      std::string Opts;
      llvm::SmallVector<const Expr *, 6> Args(MC->arguments());
      if (!mapOptions(Ctor, Args, MC->getBeginLoc(), Opts))
        return;
      unsigned B, E;
      if (!fileRange(SourceRange(MC->getArg(0)->getBeginLoc(), MC->getArg(MC->getNumArgs() - 1)->getEndLoc()), B, E)) {
        block(MC->getBeginLoc(), "the scaler's constructor arguments are inside a macro");
        return;
      }
      Edits.push_back({B, E - B, Opts});
    }
  }

  // ---- the scaler held outside the step's function --------------------------------------------
  // A parameter, a member, a global, or a local handed on to another function: the object flows
  // through declarations in several functions (and headers). Each one that holds it changes to
  // the target class, with the constructions that make it; the class itself is never edited (it
  // may serve other, unmigrated code).

  /// The holders this plan changes (grouping) and its edits outside the step's file (headers).
  std::vector<const ValueDecl *> FlowHolders;
  std::vector<tooling::Replacement> OtherFileEdits;
  std::set<FileID> OtherFilesEdited;
  std::vector<SourceRange> FlowTypeRanges;
  std::vector<const CXXConstructExpr *> FlowConstructs;
  std::vector<const CallExpr *> FlowMakeCalls;

  /// The class itself, a reference or pointer to it, or a wrapper whose first template argument
  /// holds it (std::shared_ptr, std::unique_ptr, std::optional).
  static bool holdsClass(QualType QT, const CXXRecordDecl *Class) {
    for (int I = 0; I < 8 && !QT.isNull(); ++I) {
      QT = QT.getNonReferenceType();
      if (QT->isPointerType()) {
        QT = QT->getPointeeType();
        continue;
      }
      const CXXRecordDecl *RD = QT->getAsCXXRecordDecl();
      if (!RD)
        return false;
      if (RD->getCanonicalDecl() == Class)
        return true;
      const auto *TS = dyn_cast<ClassTemplateSpecializationDecl>(RD);
      if (!TS || TS->getTemplateArgs().size() == 0 ||
          TS->getTemplateArgs()[0].getKind() != TemplateArgument::Type)
        return false;
      QT = TS->getTemplateArgs()[0].getAsType();
    }
    return false;
  }

  static bool takesClass(const FunctionDecl *FD, const CXXRecordDecl *Class) {
    return llvm::any_of(FD->parameters(),
                        [&](const ParmVarDecl *P) { return holdsClass(P->getType(), Class); });
  }

  /// The uses, in the code of the translation unit outside system headers, of every declaration
  /// holding the class, and the calls of every function taking it.
  class ScalerUseIndex : public AnalysedBodyVisitor<ScalerUseIndex> {
  public:
    const CXXRecordDecl *Class;
    const SourceManager &SM;
    std::map<const Decl *, std::vector<const Expr *>> Refs;          ///< by canonical declaration
    std::map<const Decl *, std::vector<const Expr *>> Calls;         ///< CallExpr / CXXConstructExpr
    std::map<const Decl *, const Expr *> NamedOtherwise;             ///< a function's address taken
    llvm::SmallPtrSet<const Expr *, 16> Callees;
    ScalerUseIndex(const CXXRecordDecl *C, const SourceManager &SM) : Class(C), SM(SM) {}
    bool TraverseDecl(Decl *D) {
      if (D && !isa<TranslationUnitDecl>(D) && D->getLocation().isValid() &&
          SM.isInSystemHeader(SM.getExpansionLoc(D->getLocation())))
        return true;
      return RecursiveASTVisitor::TraverseDecl(D);
    }
    bool VisitCallExpr(CallExpr *E) {
      Callees.insert(E->getCallee()->IgnoreParenImpCasts());
      if (const FunctionDecl *FD = E->getDirectCallee(); FD && takesClass(FD, Class))
        Calls[FD->getCanonicalDecl()].push_back(E);
      return true;
    }
    bool VisitCXXConstructExpr(CXXConstructExpr *E) {
      if (takesClass(E->getConstructor(), Class) && !E->getConstructor()->isCopyOrMoveConstructor())
        Calls[E->getConstructor()->getCanonicalDecl()].push_back(E);
      return true;
    }
    bool VisitDeclRefExpr(DeclRefExpr *E) {
      if (const auto *FD = dyn_cast<FunctionDecl>(E->getDecl())) {
        if (takesClass(FD, Class) && !Callees.count(E))
          NamedOtherwise.try_emplace(FD->getCanonicalDecl(), E);
        return true;
      }
      if (holdsClass(E->getDecl()->getType(), Class))
        Refs[E->getDecl()->getCanonicalDecl()].push_back(E);
      return true;
    }
    bool VisitMemberExpr(MemberExpr *E) {
      if (isa<FieldDecl>(E->getMemberDecl()) && holdsClass(E->getMemberDecl()->getType(), Class))
        Refs[E->getMemberDecl()->getCanonicalDecl()].push_back(E);
      else if (const auto *MD = dyn_cast<CXXMethodDecl>(E->getMemberDecl());
               MD && takesClass(MD, Class) && !Callees.count(E))
        NamedOtherwise.try_emplace(MD->getCanonicalDecl(), E);
      return true;
    }
  };

  /// "file.h:12" for a reason text.
  std::string where(SourceLocation L) const {
    PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(L));
    if (P.isInvalid())
      return "?";
    return llvm::sys::path::filename(P.getFilename()).str() + ":" + std::to_string(P.getLine());
  }

  /// Why a declaration at `L` cannot be edited by this run; "" when it can.
  std::string whyNotEditable(SourceLocation L) const {
    L = SM.getExpansionLoc(L);
    if (SM.isInSystemHeader(L))
      return "it is in a system header";
    FileID F = SM.getFileID(L);
    if (F == File || F == SM.getMainFileID() || (TU.Editable && TU.Editable(L)))
      return "";
    return "this run may not edit " + llvm::sys::path::filename(SM.getFilename(L)).str() +
           " (not matched by --header-filter)";
  }

  /// A replacement of a token range in any editable file; false inside a macro body.
  bool editAnywhere(SourceRange R, const std::string &Text) {
    CharSourceRange CR = CharSourceRange::getTokenRange(R);
    if (R.getBegin().isMacroID() || R.getEnd().isMacroID()) {
      if (!SM.isMacroArgExpansion(R.getBegin()) || !SM.isMacroArgExpansion(R.getEnd()))
        return false;
      CR = CharSourceRange::getTokenRange(SM.getSpellingLoc(R.getBegin()), SM.getSpellingLoc(R.getEnd()));
    }
    CR = Lexer::makeFileCharRange(CR, SM, LO);
    if (CR.isInvalid() || !whyNotEditable(CR.getBegin()).empty())
      return false;
    FileID F = SM.getFileID(CR.getBegin());
    unsigned B = SM.getFileOffset(CR.getBegin()), E = SM.getFileOffset(CR.getEnd());
    if (F == File) {
      Edits.push_back({B, E - B, Text});
      return true;
    }
    OtherFileEdits.emplace_back(SM, CR, Text, LO);
    OtherFilesEdited.insert(F);
    return true;
  }

  /// Adds the type spellings and constructions of the class inside `S` (an initializer, an
  /// argument); false when there are none.
  bool collectSpellings(const Stmt *S, const CXXRecordDecl *Class) {
    TypeLocFinder TF(Class);
    ConstructFinder CF(Class);
    TF.TraverseStmt(const_cast<Stmt *>(S));
    CF.TraverseStmt(const_cast<Stmt *>(S));
    llvm::append_range(FlowTypeRanges, TF.Ranges);
    llvm::append_range(FlowConstructs, CF.Constructs);
    llvm::append_range(FlowMakeCalls, CF.MakeCalls);
    return !TF.Ranges.empty() || !CF.Constructs.empty() || !CF.MakeCalls.empty();
  }

  /// The expression as far as the object is the same: through parentheses, implicit casts,
  /// temporaries, `*` and `&`, copies and moves of the holder, `std::move`, `.get()`, `.value()`.
  static const Expr *throughSameObject(const Expr *E, const CXXRecordDecl *Class) {
    for (int I = 0; I < 16; ++I) {
      E = E->IgnoreParenImpCasts();
      if (const auto *EW = dyn_cast<ExprWithCleanups>(E))
        E = EW->getSubExpr();
      else if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(E))
        E = MT->getSubExpr();
      else if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E))
        E = BT->getSubExpr();
      else if (const auto *U = dyn_cast<UnaryOperator>(E);
               U && (U->getOpcode() == UO_Deref || U->getOpcode() == UO_AddrOf))
        E = U->getSubExpr();
      else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E);
               OC && OC->getOperator() == OO_Star && OC->getNumArgs() == 1)
        E = OC->getArg(0);
      else if (const auto *CE = dyn_cast<CXXConstructExpr>(E);
               CE && CE->getConstructor()->isCopyOrMoveConstructor() && CE->getNumArgs() >= 1 &&
               holdsClass(CE->getType(), Class))
        E = CE->getArg(0);
      else if (const auto *C = dyn_cast<CallExpr>(E); C && C->getNumArgs() == 1 && C->getDirectCallee() &&
               C->getDirectCallee()->isInStdNamespace() && C->getDirectCallee()->getIdentifier() &&
               (C->getDirectCallee()->getName() == "move" || C->getDirectCallee()->getName() == "forward"))
        E = C->getArg(0);
      else if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E);
               MC && MC->getNumArgs() == 0 && MC->getMethodDecl() && MC->getMethodDecl()->getIdentifier() &&
               (MC->getMethodDecl()->getName() == "get" || MC->getMethodDecl()->getName() == "value") &&
               MC->getMethodDecl()->getParent()->getCanonicalDecl() != Class)
        E = MC->getImplicitObjectArgument();
      else
        return E;
    }
    return E;
  }

  /// The holder an expression names (after throughSameObject), or null.
  static const ValueDecl *holderOf(const Expr *E, const CXXRecordDecl *Class) {
    E = throughSameObject(E, Class);
    const ValueDecl *D = nullptr;
    if (const auto *DR = dyn_cast<DeclRefExpr>(E))
      D = DR->getDecl();
    else if (const auto *ME = dyn_cast<MemberExpr>(E))
      D = ME->getMemberDecl();
    if (!D || !isa<VarDecl, FieldDecl>(D) || !holdsClass(D->getType(), Class))
      return nullptr;
    return D;
  }

  /// Every declaration of a holder: a variable's redeclarations, a parameter in each declaration
  /// of its function.
  static std::vector<const DeclaratorDecl *> declarationsOf(const ValueDecl *H) {
    std::vector<const DeclaratorDecl *> Out;
    if (const auto *PV = dyn_cast<ParmVarDecl>(H)) {
      if (const auto *FD = dyn_cast<FunctionDecl>(PV->getDeclContext())) {
        unsigned I = PV->getFunctionScopeIndex();
        for (const FunctionDecl *R : FD->redecls())
          if (I < R->getNumParams())
            Out.push_back(R->getParamDecl(I));
        return Out;
      }
    }
    if (const auto *VD = dyn_cast<VarDecl>(H)) {
      for (const VarDecl *R : VD->redecls())
        Out.push_back(R);
      return Out;
    }
    if (const auto *FD = dyn_cast<FieldDecl>(H))
      Out.push_back(FD);
    return Out;
  }

  /// A scaler call on the holder (scale/unscale_/step/update/get_scale) that stays valid on the
  /// target class: one of a training step, or one that takes no optimizer.
  bool isScalerCallOn(const Expr *R, const ValueDecl *H) const {
    for (const FunctionAnalysis &F : TU.Functions)
      for (const ScalerCall &C : F.ScalerCalls) {
        if (!C.Scaler.Decl || C.Scaler.Decl->getCanonicalDecl() != H->getCanonicalDecl())
          continue;
        SourceRange CR = C.Call->getSourceRange();
        if (!SM.isPointWithin(R->getBeginLoc(), CR.getBegin(), CR.getEnd()))
          continue;
        if (C.Kind != ScalerCall::Method::Unscale && C.Kind != ScalerCall::Method::Step)
          return true;
        for (const TrainingStep &S : F.Steps)
          if (llvm::is_contained(S.Steps, &C) || llvm::is_contained(S.Unscales, &C))
            return true;
        return false;
      }
    return false;
  }

  /// Where a use hands the object on: the holder it flows into is added; false (with a blocker)
  /// when the use would not survive the type change.
  template <class AddFn>
  bool followUse(const Expr *R, const ValueDecl *H, const CXXRecordDecl *Class, AddFn Add) {
    SourceLocation At = stepLoc();
    auto Fail = [&](const std::string &Why) {
      block(At, "the scaler '" + H->getNameAsString() + "' is used at " + where(R->getBeginLoc()) +
                    " " + Why + "; changing its type to " + Tgt.ScalerClass + " would break this use");
      return false;
    };
    const Expr *E = R;
    DynTypedNode Parent;
    for (int I = 0; I < 32; ++I) {
      DynTypedNodeList Ps = Ctx.getParents(*E);
      if (Ps.empty())
        return Fail("in a way not followed");
      Parent = Ps[0];
      const Expr *PE = Parent.get<Expr>();
      if (!PE || throughSameObject(PE, Class) != throughSameObject(E, Class))
        break;
      E = PE;
    }
    // A lambda's capture (`[&scaler]`): the lambda's own uses of it are followed one by one.
    if (Parent.get<LambdaExpr>())
      return true;
    // A pointer's truth (`if (s)`, `!s`, `s != nullptr`): any pointer type has it.
    if (const auto *IC = dyn_cast<ImplicitCastExpr>(E); IC && IC->getCastKind() == CK_PointerToBoolean)
      return true;
    if (const auto *BO = Parent.get<BinaryOperator>(); BO && BO->isEqualityOp() &&
        E->getType()->isPointerType()) {
      const Expr *Other = BO->getLHS() == E ? BO->getRHS() : BO->getLHS();
      if (Other->isNullPointerConstant(Ctx, Expr::NPC_ValueDependentIsNotNull) != Expr::NPCK_NotNull)
        return true;
    }
    // `s.f()` / `s->f()` / `if (s)`: the call's callee is a MemberExpr on the object.
    if (const auto *ME = Parent.get<MemberExpr>(); ME && ME->getBase() == E)
      if (DynTypedNodeList Ps = Ctx.getParents(*ME); !Ps.empty() && Ps[0].get<CXXMemberCallExpr>())
        Parent = Ps[0];
    if (const auto *MC = Parent.get<CXXMemberCallExpr>(); MC && MC->getImplicitObjectArgument() &&
        throughSameObject(MC->getImplicitObjectArgument(), Class) == throughSameObject(E, Class)) {
      // A wrapper's own member (optional / smart pointer): `if (s)`, has_value(), reset(new X(..)).
      const CXXMethodDecl *M = MC->getMethodDecl();
      if (!M || M->getParent()->getCanonicalDecl() == Class)
        return Fail("other than through scale/unscale_/step/update/get_scale");
      if (M->getIdentifier() && M->getName() == "emplace" && MC->getNumArgs() > 0)
        return Fail("in emplace() with constructor arguments, which are not mapped");
      for (const Expr *A : MC->arguments())
        collectSpellings(A, Class);
      return true;
    }
    if (const auto *OC = Parent.get<CXXOperatorCallExpr>(); OC && OC->getOperator() == OO_Equal) {
      const ValueDecl *Other = holderOf(OC->getArg(OC->getArg(0) == E ? 1 : 0), Class);
      if (Other)
        Add(Other);
      else if (OC->getArg(0) != E || !collectSpellings(OC->getArg(1), Class))
        return Fail("in an assignment not followed");
      return true;
    }
    if (const auto *BO = Parent.get<BinaryOperator>(); BO && BO->getOpcode() == BO_Assign) {
      const ValueDecl *Other = holderOf(BO->getLHS() == E ? BO->getRHS() : BO->getLHS(), Class);
      if (Other)
        Add(Other);
      else if (BO->getLHS() != E || !collectSpellings(BO->getRHS(), Class))
        return Fail("in an assignment not followed");
      return true;
    }
    if (const auto *VD = Parent.get<VarDecl>()) {
      Add(VD);
      return true;
    }
    if (const auto *CI = Parent.get<CXXCtorInitializer>(); CI && CI->getMember()) {
      Add(CI->getMember());
      return true;
    }
    const FunctionDecl *Callee = nullptr;
    llvm::ArrayRef<const Expr *> Args;
    if (const auto *C = Parent.get<CallExpr>(); C && !isa<CXXOperatorCallExpr>(C)) {
      Callee = C->getDirectCallee();
      Args = llvm::ArrayRef(C->getArgs(), C->getNumArgs());
    } else if (const auto *CE = Parent.get<CXXConstructExpr>()) {
      Callee = CE->getConstructor();
      Args = llvm::ArrayRef(CE->getArgs(), CE->getNumArgs());
    }
    if (!Callee)
      return Fail("other than through scale/unscale_/step/update/get_scale");
    auto It = llvm::find(Args, E);
    unsigned I = It - Args.begin();
    if (It == Args.end() || I >= Callee->getNumParams() ||
        !holdsClass(Callee->getParamDecl(I)->getType(), Class))
      return Fail("as an argument of '" + Callee->getNameAsString() + "' not followed");
    const FunctionDecl *Def = Callee->getDefinition();
    if (!Def || SM.isInSystemHeader(SM.getExpansionLoc(Def->getLocation())))
      return Fail("as an argument of '" + Callee->getNameAsString() +
                  "', whose body is not in this translation unit");
    Add(Def->getParamDecl(I));
    return true;
  }

  /// A parameter holds what its callers pass: each caller's argument is followed back.
  template <class AddFn>
  bool followCallers(const ParmVarDecl *PV, const CXXRecordDecl *Class, const ScalerUseIndex &Index,
                     AddFn Add) {
    SourceLocation At = stepLoc();
    const auto *FD = dyn_cast<FunctionDecl>(PV->getDeclContext());
    std::string Name = "'" + PV->getNameAsString() + "'";
    if (!FD) {
      block(At, "the scaler " + Name + " is a parameter of something other than a function");
      return false;
    }
    std::string Fn = "'" + FD->getQualifiedNameAsString() + "'";
    if (const auto *MD = dyn_cast<CXXMethodDecl>(FD); MD && MD->isVirtual()) {
      block(At, "the scaler " + Name + " is a parameter of the virtual function " + Fn +
                    ", whose overrides would keep their type; change them by hand");
      return false;
    }
    if (FD->getTemplatedKind() != FunctionDecl::TK_NonTemplate) {
      block(At, "the scaler " + Name + " is a parameter of the template " + Fn + "; change it by hand");
      return false;
    }
    if (auto It = Index.NamedOtherwise.find(FD->getCanonicalDecl()); It != Index.NamedOtherwise.end()) {
      block(At, "the scaler " + Name + " is a parameter of " + Fn + ", which is named at " +
                    where(It->second->getBeginLoc()) + " other than in a call; its callers cannot "
                    "all be followed");
      return false;
    }
    if (FD->isExternallyVisible())
      for (const FunctionDecl *R : FD->redecls()) {
        SourceLocation L = SM.getExpansionLoc(R->getLocation());
        if (SM.getFileID(L) != SM.getMainFileID()) {
          block(At, "the scaler " + Name + " is a parameter of " + Fn + ", declared at " + where(L) +
                        ": callers in other translation units would still pass a '" +
                        Class->getNameAsString() + "'; migrate it by hand");
          return false;
        }
      }
    unsigned I = PV->getFunctionScopeIndex();
    if (auto It = Index.Calls.find(FD->getCanonicalDecl()); It != Index.Calls.end())
      for (const Expr *Call : It->second) {
        const Expr *Arg = nullptr;
        if (const auto *C = dyn_cast<CallExpr>(Call); C && !isa<CXXOperatorCallExpr>(C))
          Arg = I < C->getNumArgs() ? C->getArg(I) : nullptr;
        else if (const auto *CE = dyn_cast<CXXConstructExpr>(Call))
          Arg = I < CE->getNumArgs() ? CE->getArg(I) : nullptr;
        if (!Arg || isa<CXXDefaultArgExpr>(Arg)) {
          block(At, "the call of " + Fn + " at " + where(Call->getBeginLoc()) +
                        " does not pass the scaler " + Name + " in a way that can be followed");
          return false;
        }
        if (const ValueDecl *H = holderOf(Arg, Class)) {
          Add(H);
          continue;
        }
        if (!collectSpellings(Arg, Class)) {
          block(At, "the call of " + Fn + " at " + where(Call->getBeginLoc()) + " passes a scaler " +
                        "that is neither a variable nor a construction of '" + Class->getNameAsString() + "'");
          return false;
        }
      }
    return true;
  }

  /// One holder: its declarations must be editable; its type spellings, initializers and
  /// constructions change; its uses and (for a parameter) its callers lead to further holders.
  template <class AddFn>
  bool followHolder(const ValueDecl *H, const CXXRecordDecl *Class, const ScalerUseIndex &Index,
                    AddFn Add) {
    SourceLocation At = stepLoc();
    std::string Name = "'" + H->getNameAsString() + "'";
    if (!isa<VarDecl, FieldDecl>(H)) {
      block(At, "the scaler " + Name + " is not a variable or a data member");
      return false;
    }
    size_t Spelled = FlowTypeRanges.size() + FlowConstructs.size() + FlowMakeCalls.size();
    for (const DeclaratorDecl *DD : declarationsOf(H)) {
      std::string Why = whyNotEditable(DD->getLocation());
      if (!Why.empty()) {
        block(At, "the declaration of the scaler " + Name + " at " + where(DD->getLocation()) +
                      " must change to " + Tgt.ScalerClass + ", but " + Why);
        return false;
      }
      if (TypeSourceInfo *TSI = DD->getTypeSourceInfo()) {
        TypeLocFinder TF(Class);
        TF.TraverseTypeLoc(TSI->getTypeLoc());
        llvm::append_range(FlowTypeRanges, TF.Ranges);
      }
      if (const auto *VD = dyn_cast<VarDecl>(DD); VD && !isa<ParmVarDecl>(VD) && VD->getInit()) {
        collectSpellings(VD->getInit(), Class);
        if (const ValueDecl *From = holderOf(VD->getInit(), Class))
          Add(From);
      }
    }
    if (const auto *FDl = dyn_cast<FieldDecl>(H)) {
      if (FDl->hasInClassInitializer())
        collectSpellings(FDl->getInClassInitializer(), Class);
      for (const CXXConstructorDecl *Ctor : cast<CXXRecordDecl>(FDl->getParent())->ctors()) {
        const FunctionDecl *Def = nullptr;
        if (!Ctor->isDefined(Def)) {
          if (Ctor->isUserProvided()) {
            block(At, "the constructor at " + where(Ctor->getLocation()) + " may initialize the scaler " +
                          Name + ", but its body is not in this translation unit");
            return false;
          }
          continue;
        }
        for (const CXXCtorInitializer *Init : cast<CXXConstructorDecl>(Def)->inits())
          if (Init->getMember() == FDl && Init->isWritten()) {
            collectSpellings(Init->getInit(), Class);
            if (const ValueDecl *From = holderOf(Init->getInit(), Class))
              Add(From);
          }
      }
    }
    if (FlowTypeRanges.size() + FlowConstructs.size() + FlowMakeCalls.size() == Spelled) {
      block(At, "the type of the scaler " + Name + " is not spelled in its declaration at " +
                    where(H->getLocation()) + " (auto, a template parameter); change it by hand");
      return false;
    }
    if (auto It = Index.Refs.find(H->getCanonicalDecl()); It != Index.Refs.end())
      for (const Expr *R : It->second)
        if (!isScalerCallOn(R, H) && !followUse(R, H, Class, Add))
          return false;
    if (const auto *PV = dyn_cast<ParmVarDecl>(H))
      return followCallers(PV, Class, Index, Add);
    return true;
  }

  void planScalerFlow(const CXXRecordDecl *Class) {
    ScalerUseIndex Index(Class, SM);
    Index.TraverseDecl(Ctx.getTranslationUnitDecl());
    std::vector<const ValueDecl *> Work{T.Scaler.Decl};
    llvm::SmallPtrSet<const Decl *, 8> Seen{T.Scaler.Decl->getCanonicalDecl()};
    auto Add = [&](const ValueDecl *H) {
      if (Seen.insert(H->getCanonicalDecl()).second)
        Work.push_back(H);
    };
    bool Ok = true;
    for (size_t I = 0; I < Work.size() && Ok; ++I)
      Ok = followHolder(Work[I], Class, Index, Add);
    FlowHolders = Work;
    if (!Ok || !emitFlowSpellings(Class))
      return;
    for (FileID F : OtherFilesEdited)
      includeIn(F);
  }

  /// The edits of the spellings and constructions the flow collected (as the local path makes).
  bool emitFlowSpellings(const CXXRecordDecl *Class) {
    for (SourceRange R : FlowTypeRanges)
      if (!editAnywhere(R, Tgt.ScalerClass)) {
        block(R.getBegin(), "the scaler's type is spelled inside a macro at " + where(R.getBegin()));
        return false;
      }
    for (const CXXConstructExpr *CE : FlowConstructs) {
      unsigned Written = 0;
      for (const Expr *A : CE->arguments())
        if (!isa<CXXDefaultArgExpr>(A))
          ++Written;
      if (!Written)
        continue;
      std::string Opts;
      llvm::SmallVector<const Expr *, 6> Args(CE->arguments());
      if (!mapOptions(CE->getConstructor(), Args, CE->getBeginLoc(), Opts))
        return false;
      if (!editAnywhere(SourceRange(CE->getArg(0)->getBeginLoc(), CE->getArg(Written - 1)->getEndLoc()), Opts)) {
        block(CE->getBeginLoc(), "the scaler's constructor arguments are inside a macro");
        return false;
      }
    }
    for (const CallExpr *MC : FlowMakeCalls) {
      if (MC->getNumArgs() == 0)
        continue;
      const CXXConstructorDecl *Ctor = nullptr;
      for (const CXXConstructorDecl *C : Class->getDefinition()->ctors())
        if (!C->isCopyOrMoveConstructor() && C->getNumParams() >= MC->getNumArgs() &&
            C->getMinRequiredArguments() <= MC->getNumArgs()) {
          if (Ctor) {
            block(MC->getBeginLoc(), "several scaler constructors fit these arguments");
            return false;
          }
          Ctor = C;
        }
      if (!Ctor) {
        block(MC->getBeginLoc(), "no scaler constructor fits these arguments");
        return false;
      }
      std::string Opts;
      llvm::SmallVector<const Expr *, 6> Args(MC->arguments());
      if (!mapOptions(Ctor, Args, MC->getBeginLoc(), Opts))
        return false;
      if (!editAnywhere(SourceRange(MC->getArg(0)->getBeginLoc(), MC->getArg(MC->getNumArgs() - 1)->getEndLoc()), Opts)) {
        block(MC->getBeginLoc(), "the scaler's constructor arguments are inside a macro");
        return false;
      }
    }
    return true;
  }

  /// A header whose declarations now name the target class includes its header itself
  /// (planIncludeInsertion decides where).
  void includeIn(FileID F) {
    auto FE = SM.getFileEntryRefForID(F);
    if (!FE)
      return;
    if (auto Ins = planIncludeInsertion(SM.getBufferData(F), Tgt.Include))
      OtherFileEdits.emplace_back(FE->getName(), Ins->Offset, 0, Ins->Text);
  }

  void planInclude() {
    if (auto Ins = planIncludeInsertion(Buffer, Tgt.Include))
      Edits.push_back({Ins->Offset, 0, Ins->Text});
  }
};

} // namespace

/// Whether `DC` (a namespace) has a member namespace (or alias) named `II`.
static bool hasChildNamespace(const DeclContext *DC, IdentifierInfo *II) {
  for (const NamedDecl *D : DC->getPrimaryContext()->lookup(II))
    if (isa<NamespaceDecl, NamespaceAliasDecl>(D))
      return true;
  return false;
}

/// Whether a namespace-scope using-directive that reaches `DC` (one of a function's enclosing
/// contexts) makes a namespace `II` visible there: a directive in `DC`, or one in a namespace such
/// a directive nominates (transitively). Found by name lookup (DeclContext::using_directives), as
/// clang's own unqualified lookup finds them: with a precompiled preamble only the directives are
/// read from it, never every declaration of the headers.
static bool usingDirectiveReaches(const DeclContext *DC, IdentifierInfo *II,
                                  llvm::SmallPtrSetImpl<const DeclContext *> &Seen) {
  if (!Seen.insert(DC->getPrimaryContext()).second)
    return false;
  for (const UsingDirectiveDecl *UD : DC->getPrimaryContext()->using_directives()) {
    const NamespaceDecl *N = UD->getNominatedNamespace();
    if (N && (hasChildNamespace(N, II) || usingDirectiveReaches(N, II, Seen)))
      return true;
  }
  return false;
}

/// Whether a namespace-scope using-directive in scope of `FD`'s body (in its semantic or lexical
/// enclosing namespaces, or the translation unit) makes a namespace `II` visible there.
static bool usingDirectiveReaches(const FunctionDecl *FD, IdentifierInfo *II) {
  llvm::SmallPtrSet<const DeclContext *, 8> Seen;
  for (const DeclContext *Start : {FD->getDeclContext(), FD->getLexicalDeclContext()})
    for (const DeclContext *DC = Start; DC; DC = DC->getParent())
      if (DC->isFileContext() && usingDirectiveReaches(DC, II, Seen))
        return true;
  return false;
}

class BodyUsingDirectives : public RecursiveASTVisitor<BodyUsingDirectives> {
public:
  IdentifierInfo *II;
  bool Found = false;
  explicit BodyUsingDirectives(IdentifierInfo *II) : II(II) {}
  bool VisitUsingDirectiveDecl(UsingDirectiveDecl *UD) {
    if (const NamespaceDecl *N = UD->getNominatedNamespace(); N && hasChildNamespace(N, II))
      Found = true;
    return true;
  }
};

/// `amp::X` in the edited function must name the target's namespace. It would not when another
/// namespace `amp` is visible there without qualification: a hand-written scaler port in
/// `torch::amp` with `using namespace torch;` (ambiguous), or the function inside `namespace torch`.
/// Then the edits write `::amp::X`.
static TargetApi spelledTarget(ASTContext &Ctx, const TargetApi &T, const FunctionDecl *FD) {
  StringRef Q = T.ScalerClass;
  StringRef First = Q.split("::").first;
  if (First.empty() || Q.starts_with("::") || !Q.contains("::"))
    return T;
  IdentifierInfo *II = &Ctx.Idents.get(First);
  bool Need = usingDirectiveReaches(FD, II);
  for (const DeclContext *DC = FD->getDeclContext(); DC && !Need; DC = DC->getParent())
    if (isa<NamespaceDecl>(DC) && hasChildNamespace(DC, II))
      Need = true;
  if (!Need && FD->getBody()) {
    BodyUsingDirectives B(II);
    B.TraverseStmt(FD->getBody());
    Need = B.Found;
  }
  if (!Need)
    return T;
  TargetApi R = T;
  for (std::string *S : {&R.Convert, &R.LevelEnum, &R.ValueAndGrad, &R.CastOutput, &R.ScalerClass,
                         &R.ScalerOptions, &R.Clip, &R.ClipInPlace, &R.GlobalNorm, &R.Accumulate,
                         &R.ParametersOf,
                         &R.SplitGrads, &R.AllReduceGrads, &R.Step})
    if (StringRef(*S).contains("::") && !StringRef(*S).starts_with("::"))
      *S = "::" + *S;
  return R;
}

std::vector<MigrationPlan> planMigrations(ASTContext &Ctx, const RuleSet &Rules,
                                          const TranslationUnitAnalysis &TU,
                                          const PlannerOptions &Opts) {
  std::vector<MigrationPlan> Plans;
  if (TU.Functions.empty())
    return Plans;
  for (const FunctionAnalysis &FA : TU.Functions) {
    NameCollector NC;
    NC.TraverseDecl(const_cast<FunctionDecl *>(FA.Function));
    llvm::StringSet<> Used = NC.Names;
    for (const TrainingStep &T : FA.Steps) {
      const TargetApi Tgt = spelledTarget(Ctx, Rules.Target, FA.Function);
      StepPlanner P(Ctx, Rules, FA, T, Opts, Used, Tgt, TU);
      Plans.push_back(P.plan());
    }
  }
  // Steps that share a scaler declared outside their function migrate together or not at all.
  // So do steps whose scaler flows through a declaration another plan changes (a parameter, a
  // member, a global): a plan in two groups carries a block from one to the other.
  std::map<const ValueDecl *, std::vector<MigrationPlan *>> ByScaler;
  auto Shared = [](const ValueDecl *D) {
    const auto *VD = dyn_cast<VarDecl>(D);
    return isa<FieldDecl>(D) || (VD && (isa<ParmVarDecl>(VD) || !VD->isLocalVarDecl()));
  };
  for (MigrationPlan &P : Plans) {
    std::set<const ValueDecl *> Keys;
    if (P.Step->Scaler.Decl && Shared(P.Step->Scaler.Decl))
      Keys.insert(cast<ValueDecl>(P.Step->Scaler.Decl->getCanonicalDecl()));
    for (const ValueDecl *H : P.ScalerHolders)
      if (Shared(H))
        Keys.insert(cast<ValueDecl>(H->getCanonicalDecl()));
    for (const ValueDecl *K : Keys)
      ByScaler[K].push_back(&P);
  }
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (auto &[D, Group] : ByScaler) {
      const MigrationPlan *Blocked = nullptr;
      for (MigrationPlan *P : Group)
        if (!P->Blockers.empty())
          Blocked = P;
      if (!Blocked)
        continue;
      for (MigrationPlan *P : Group)
        if (P->Blockers.empty()) {
          P->Blockers.push_back({P->Step->Scope ? P->Step->Scope->ReportLoc : D->getLocation(),
                                 "another step of the scaler '" + D->getNameAsString() +
                                     "' cannot be migrated, and the scaler's type is shared"});
          P->Edits.clear();
          Changed = true;
        }
    }
  }
  // The halves of a step split over two methods: one fix holding both halves' edits, on the
  // scaling half (the shared scaler member blocked both above when one was blocked).
  for (MigrationPlan &P : Plans) {
    if (!P.SplitOther || P.Step->Backwards.empty() || !P.Blockers.empty())
      continue;
    for (MigrationPlan &Q : Plans) {
      if (Q.Step != P.SplitOther || !Q.Blockers.empty())
        continue;
      std::set<std::tuple<std::string, unsigned, unsigned, std::string>> Seen;
      for (const tooling::Replacement &R : P.Edits)
        Seen.insert({R.getFilePath().str(), R.getOffset(), R.getLength(), R.getReplacementText().str()});
      for (const tooling::Replacement &R : Q.Edits)
        if (Seen.insert({R.getFilePath().str(), R.getOffset(), R.getLength(), R.getReplacementText().str()}).second)
          P.Edits.push_back(R);
      Q.Edits.clear();
      Q.JoinedInto = &P;
    }
  }
  return Plans;
}

} // namespace ampmigrate
