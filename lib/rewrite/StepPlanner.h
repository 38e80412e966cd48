// The planner of one training step (StepPlanner): its feasibility stage, which finds the blockers
// or fills the descriptor (StepDescriptor.h) that the emitters (StepEmitter.h) write out; one file
// per concern in lib/rewrite/ (docs/architecture.md, "planning").
#pragma once

#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/GenericLambdas.h"
#include "ampmigrate/IncludeInsertion.h"
#include "ampmigrate/MigrationPlan.h"
#include "ampmigrate/StepFinder.h"
#include "ForwardRegion.h"
#include "ModelQueries.h"
#include "RegionDeclarations.h"
#include "SplitSteps.h"
#include "StepDescriptor.h"
#include "StepLambda.h"

#include "clang/AST/ParentMap.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace ampmigrate {

/// Every name declared or referenced in a function (its lambdas and generic lambdas' instantiations
/// included): what a fresh name must avoid.
/// A conditional directive of a file (`#if`, `#ifdef`, `#ifndef` open; `#elif`, `#else` switch
/// branches; `#endif` closes), found by lexing the file: the AST keeps none.
struct PPDirective {
  unsigned Offset; ///< of the `#`
  enum Kinds { Open, Branch, Close } Kind;
};
std::vector<PPDirective> conditionalDirectives(const clang::SourceManager &SM, clang::FileID File,
                                               const clang::LangOptions &LO);

llvm::StringSet<> namesIn(const clang::FunctionDecl *FD);

/// `Base`, or `Base2`, `Base3`, ... : the first that `Used` does not hold (then it does).
std::string freshName(llvm::StringSet<> &Used, llvm::StringRef Base);

/// What the converted form of a model is called before it is made fresh: `amp_self` for `*this`,
/// else `amp_<name>` without a member's trailing underscore (`net_` -> `amp_net`).
std::string convertedModelBase(const ObjectRef &M);

/// The target API as the edits in `FD` spell it: globally qualified (`::amp::X`) where another
/// namespace of the target's first name is visible there.
TargetApi spelledTarget(clang::ASTContext &Ctx, const TargetApi &T, const clang::FunctionDecl *FD);

/// Feasibility alone for step `T` of `FA`, as planMigrations would plan it (its names fresh in its
/// function): what a test pins without looking at edits.
StepAssessment assessStep(clang::ASTContext &Ctx, const RuleSet &Rules, const TranslationUnitAnalysis &TU,
                          const FunctionAnalysis &FA, const TrainingStep &T, const PlannerOptions &Opts);

/// What the steps of one function share while they are planned: the names taken, and the models
/// converted once before a loop, keyed by model and insertion offset, so that two steps of one
/// loop (a GAN's discriminator and generator steps) convert a model they both run under one name
/// with one declaration (planMigrations joins their insertions).
struct FunctionPlanning {
  llvm::StringSet<> UsedNames;
  struct Conversion {
    std::string Name; ///< the converted model's variable
    std::string Line; ///< its declaration, indented, with its newline
  };
  std::map<std::pair<const clang::ValueDecl *, unsigned>, Conversion> Conversions;
};

/// Every variable an expression or statement names, in order (with repeats).
class VariablesRead : public AnalysedBodyVisitor {
public:
  std::vector<const clang::ValueDecl *> Found;
  bool visitStmt(clang::Stmt *S) override {
    if (const auto *E = llvm::dyn_cast<clang::DeclRefExpr>(S))
      Found.push_back(E->getDecl());
    return true;
  }
};

class StepPlanner {
public:
  StepPlanner(clang::ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
              const TrainingStep &T, const PlannerOptions &Opts, FunctionPlanning &Shared,
              const TargetApi &Tgt, const TranslationUnitAnalysis &TU);

  MigrationPlan plan();

  /// Feasibility alone: the blockers, or the descriptor the emitters would read (unit tests).
  StepAssessment assess();

private:
  clang::ASTContext &Ctx;
  const clang::SourceManager &SM;
  const clang::LangOptions &LO;
  const RuleSet &Rules;
  const FunctionAnalysis &FA;
  const TrainingStep &T;
  const PlannerOptions &Opts;
  clang::ParentMap PM;
  FunctionPlanning &Shared;
  llvm::StringSet<> &UsedNames;
  /// The target names as the edits spell them (globally qualified when needed).
  const TargetApi &Tgt;
  const TranslationUnitAnalysis &TU;
  /// The step's file: where its edits go (by offset) and the text they are computed from.
  clang::FileID File;
  std::string FilePath;
  llvm::StringRef Buffer;

  /// The plan descriptor (StepDescriptor.h): what the feasibility stage decides, and all the
  /// emitters read.
  StepDescriptor Desc;

  /// The reasons the step is not rewritten, in the order the checks found them.
  std::vector<Blocker> Blockers;

  /// The grads list an optimizer's unscale_/step/clip takes (its own with several optimizers).
  const std::string &gradsFor(const ObjectRef &Optimizer) const;

  void block(clang::SourceLocation L, std::string Why) { Blockers.push_back({L, std::move(Why)}); }
  /// Where the step's reasons about the scaler go: its first step(), or its backward in the
  /// scaling half of a step split over two methods.
  clang::SourceLocation stepLoc() const {
    return !T.Steps.empty() ? T.Steps.front()->Call->getBeginLoc()
                            : T.Backwards.front()->Backward->getBeginLoc();
  }

  unsigned off(clang::SourceLocation L) const { return SM.getFileOffset(SM.getExpansionLoc(L)); }

  std::string text(clang::SourceRange R) const { return StepFinder::textOf(Ctx, R); }
  /// Argument `I` of `CE` as written, with the comments that stand before it after the previous
  /// argument's comma (`f(p, /* why */ n)` gives `/* why */ n`): the text an edit copies, so that
  /// no comment of a rewritten call is lost.
  std::string argumentText(const clang::CallExpr *CE, unsigned I) const;

  std::string freshName(llvm::StringRef Base);

  /// File char range of a statement including its trailing semicolon; invalid if in a macro body.
  clang::CharSourceRange stmtRange(const clang::Stmt *S) const;

  unsigned lineStart(unsigned O) const;
  unsigned lineEnd(unsigned O) const;
  std::string indentAt(unsigned O) const;
  bool onlySpace(unsigned B, unsigned E) const;

  /// Deletion of a whole statement: the full line when nothing else is on it.
  bool removal(const clang::Stmt *S, Edit &Out) const;

  bool fileRange(clang::SourceRange R, unsigned &B, unsigned &E) const;

  const clang::CompoundStmt *parentCompound(const clang::Stmt *S) const {
    return llvm::dyn_cast_or_null<clang::CompoundStmt>(PM.getParent(S));
  }

  /// The ancestor of `S` (or S) whose parent is `C`.
  const clang::Stmt *childOf(const clang::Stmt *S, const clang::CompoundStmt *C) const;

  bool within(const clang::Stmt *S, const clang::Stmt *Ancestor) const;

  std::string modelText(const ObjectRef &M) const;

  /// What value_and_grad differentiates: every parameter of every group of the optimizer
  /// (`amp::parameters_of(opt)`; Optimizer::parameters() is the first group only, and libtorch 1.x
  /// warns on each call). Without that target in the rules: `opt.parameters()`.
  std::string optimizerParams(const ScalerCall *C) const;

  // ---- the pipeline: feasibility here; the emitters are StepEmitter's (StepEmitter.h) ----------

  /// The feasibility stage: the split-step path (checkSplitHalf), or feasible(). True when the
  /// step has no blockers, and so is emitted.
  bool planAll();
  /// Why the step's edits in its own file would split a preprocessor conditional (an edit that
  /// replaces a directive, or edits in different branches), else nullopt. The include insertion
  /// is not part of the step's structure and is not compared.
  std::optional<std::string> splitsConditional(const std::vector<Edit> &Edits) const;

  /// The step's shape (backwards, steps, scope, optimizers, a mixed step's condition) and the
  /// names and parameters in Desc, then checkConcerns(). False (with the blockers) when the step
  /// cannot be rewritten.
  bool feasible();

  /// The checks of each concern an emitter writes, in the order the emitters run (so the first
  /// blocker is the one the planner has always reported): each records what it decided in Desc,
  /// or blocks. `B` is the step's first scaled backward.
  void checkConcerns(const ImplicitBackward &B);

  /// A scale() of the step's scaler that backward() runs on only through a larger expression
  /// (`(use_amp ? scaler.scale(loss) : loss).backward()`): there is a scaled backward, just not
  /// one of the shapes the rewrite knows. Reported at the backward with what to write instead.
  bool blockScaleInsideBackwardReceiver();

  // ---- a step split over two methods of one class ---------------------------------------------
  // The grads travel as a new member of the class. `.grad` accumulated until a zero_grad(); the
  // member does the same: each backward's grads are added to it (amp::accumulate_grads) and
  // each zero_grad() of the optimizer or the model, in either method, clears it. Exact when no
  // other method of the class clears or reads `.grad`, which is checked.

  llvm::ArrayRef<const ZeroGradCall *> stepZeroGrads() const;

  /// The member's name: `grads_`, or another that no member of the class has.
  static std::string memberName(const clang::CXXRecordDecl *Class);

  /// The feasibility of one half of a split step: its checks, then the concerns of that half
  /// (the member holding the grads into Desc.SplitMember, for the scaling half).
  void checkSplitHalf();

  /// A statement of another method of the class that calls zero_grad() or reads or writes .grad
  /// (described), or "".
  std::string otherGradUse(const clang::CXXRecordDecl *Class, const SplitStep &S,
                           const std::set<const clang::CallExpr *> &Clears) const;

  /// Several losses, each `scaler.scale(loss_i).backward()`, as consecutive statements of one
  /// block (PyTorch's multi-loss pattern, the first with retain_graph): `.grad` held the sum of
  /// their grads, which is the grad of the sum of the scaled losses. The function handed to
  /// value_and_grad returns that sum. Sets Desc.AllBackwards.
  bool planSeveralBackwards();


  /// A model of the callee's scope as this function names it: a member or global is itself; a
  /// parameter of the callee is the argument the call passes.
  const clang::ValueDecl *callerModel(const ObjectRef &M) const;

  /// Finds the scope in a called function (Desc.CalleeFA and the rest); false when there is none.
  bool findCalleeScope();

  /// Deletes a statement of a scope (its line when alone on it) into `Out`; false (and a blocker)
  /// when it sits in a macro body with other code.
  bool removeInto(const clang::Stmt *St, clang::SourceLocation Why, std::vector<Edit> &Out);

  /// A forward call through the converted model `Conv`, its tensors back to ordinary ones
  /// (`model->forward(x)` -> `amp::cast_to_adapter_tensor(amp_model->forward(x))`), into `Out`.
  bool rewriteForward(const ForwardCall &F, const std::string &Conv, std::vector<Edit> &Out);

  /// The edits in the callee, computed while checking them into Desc.Callee: the scope's calls
  /// go, its forward calls use the converted model, and the model is converted in place of the
  /// scope's first statement.
  void checkCalleeScope();

  /// The converted model's name per model, and the forward region's extent in
  /// the file (set by checkRegion; the zero_grad() calls inside it are handled with it, and
  /// checkZeroGrads skips them).
  std::map<const clang::ValueDecl *, std::string> ModelNames;
  unsigned RegionBegin = 0, RegionEnd = 0;
  /// Preprocessor conditionals that hold nothing but the scope's calls in per-version spellings:
  /// removed whole with the scope (VersionBranches.cpp).
  std::vector<Edit> VersionGroups;
  bool versionBranches(clang::SourceRange Inactive);
  /// Where the scope's own call statements are (their removals' extents), written outside macros.
  std::vector<std::pair<unsigned, unsigned>> scopeStatements(const AutocastScope &S) const;
  /// `#ifdef USE_AMP` (one branch, read by the compiler) around the scope's calls and nothing
  /// else: the conditionals go with the scope and the conversion is spelled per configuration
  /// (PPFlagOpen: the directive; the other configuration converts at O0).
  void flagConditionals();
  std::string PPFlagOpen;
  /// The conversion statement `Line` (indented, ending in a newline) under PPFlagOpen: at `Level`
  /// where the flag holds, at O0 where it does not; `Line` as it is without a flag.
  std::string perConfiguration(const std::string &Line, const std::string &Level) const;
  /// At O2/O3: whether the forward region [RB, BodyEnd) reads a tensor another step's scope
  /// computed (a GAN's generator output), or another step's scope reads one this region computes;
  /// blocks the step if so (the graph would cross two value_and_grad calls).
  bool checkCrossStepGraph(unsigned RB, unsigned BodyEnd);
  /// The region's statements from the first one that leaves the iteration (return, break,
  /// continue, goto) to the backward, when they can run after the value_and_grad call instead:
  /// after the scope, no forward, scaler, zero_grad or autocast call, no write of a variable the
  /// scaled loss reads. TailAt: their first index (Region.size() if none); returns the statement
  /// that prevents it, if any, with the reason in Why.
  const clang::Stmt *guardTail(const AutocastScope &S, llvm::ArrayRef<const clang::Stmt *> Region,
                               bool Enclosing, size_t &TailAt, std::string &Why);
  /// The conversions this step inserts before a loop (offset, line), for planMigrations to join
  /// with those of the function's other steps at the same offset.
  std::vector<std::pair<unsigned, std::string>> LoopConversions;


  /// Where the model is converted: before the outermost loop around the step that the model's
  /// declaration precedes (converted once, not per iteration); otherwise at the start of the step.
  /// The run-time flag that switched autocast on for this scope, if any: the condition of
  /// `if (use_amp) set_enabled(true);`, or the argument a guard constructor takes for its
  /// `bool` parameter (`AmpGuard g(cfg.use_amp);`). Null for a scope that is always on.
  const clang::Expr *runTimeFlag(const AutocastScope &S, bool *OnWhenFalse = nullptr) const;
  /// `if (use_amp) { enable; ...forward...; disable; } else { ...forward...; }`: the if whose
  /// branch holds the scope's calls beside other code, the other branch running without autocast;
  /// its condition switches the scope (`OnWhenFalse` when the scope is in the else branch).
  const clang::Expr *branchFlag(const AutocastScope &S, bool &OnWhenFalse) const;

  /// The level expression of a conversion inserted at `At`: the chosen level, or, when autocast
  /// was switched by a run-time flag, that flag choosing between it and O0 (so the fp32 mode
  /// stays fp32). False (and a blocker) when the flag cannot be evaluated at `At`.
  bool levelExpr(const AutocastScope &S, unsigned At, std::string &Out);

  /// The device an autocast call names ("cuda", "cpu"; "" when not known).
  std::string deviceOf(const clang::CallExpr *CE, const AutocastFunctionRule &R) const;

  /// The autocast calls a guard's constructor makes (the guard's use is the scope).
    class GuardCalls;

  /// The low-precision dtype the scope sets for the device it enables (`set_autocast_gpu_dtype(
  /// at::kBFloat16)` beside `set_enabled(true)`, or in a guard's constructor), as the conversion's
  /// third argument (`", at::kBFloat16"`), so that the converted model computes in the dtype the
  /// scope chose; "" when the scope sets none (the runtime's default for the model's device).
  /// False (and a blocker) when it cannot be carried to the conversion at `At`.
  /// The conversion's arguments after the level: `, dtype` when the scope sets one, then the
  /// device type of a CUDA scope (`, torch::kCUDA`).
  bool conversionArgs(const AutocastScope &S, unsigned At, std::string &Out);
  bool dtypeArg(const AutocastScope &S, unsigned At, std::string &Out, std::string &EnableDevice);

  /// What goes when an autocast call's statement goes: the statement, or the whole
  /// `if (use_amp) { ... }` around it when that block holds nothing but this scope's calls (an
  /// empty `if` would be left otherwise).
  const clang::Stmt *removalUnit(const AutocastScope &S, const clang::Stmt *St) const;

  bool conversionBeforeLoop(const ObjectRef &M, const clang::Stmt *Anchor, unsigned &InsertAt) const;

  /// Before the outermost loop around `Anchor` that the model's declaration precedes, or before
  /// `Anchor` itself (a statement holding the lambda of the step).
  bool conversionBefore(const ObjectRef &M, const clang::Stmt *Anchor, unsigned &InsertAt) const;

  /// The outermost loop around `S` that starts after offset `After` (a declaration it must not
  /// precede), with only blocks and loops between; null if none.
  /// A loop holding one of `Writes` (offsets where the object is assigned anew, a fold's
  /// `model = Net();`) is not left either: what is converted before it would be the old object.
  const clang::Stmt *outermostLoop(const clang::Stmt *S, unsigned After,
                                   llvm::ArrayRef<unsigned> Writes = {}) const;
  /// Where the function assigns the object `M` anew after its declaration (`m = Net()`,
  /// `m.reset(...)`, `m.emplace(...)`, `std::swap(m, o)`): file offsets, in no order.
  std::vector<unsigned> writesOf(const ObjectRef &M) const;

  /// Several optimizers after an accumulation: the summed grads are split per optimizer just
  /// before the first unscale_/step, which must stand in a block holding all of them.
  bool checkSplitAfterAccumulation();

  /// Gradient accumulation: the scaled backward runs several times (in a nested loop, or every
  /// iteration of a loop whose step() runs under a condition) before one unscale_/step/update.
  /// The explicit grads of each micro-step are then summed into a list declared before the loop
  /// (`.grad` accumulates the same way), and each zero_grad() of the step clears that list.
  bool checkAccumulation(const ImplicitBackward &B, const clang::CompoundStmt *C);

  /// A scope opened before the loop that holds the step and closed after it
  /// (`set_enabled(true); for (...) { forward; loss; scale(loss).backward(); step; update; }
  /// set_enabled(false);`, a guard declared before the loop, a guard ended after it): autocast is
  /// on for every iteration's forward, so the step's forward region is its block's statements
  /// from the first one that runs the model up to the scaled backward, and the scope's calls go
  /// where they are. Sets R0; false (blocked, with the reason) otherwise.
  bool enclosingScopeRegion(const AutocastScope &S, const clang::Stmt *ScopeStart, const clang::CompoundStmt *C,
                            const clang::Stmt *EndStmt, const clang::Stmt *&R0);

  /// The forward region: whether it can become the function handed to value_and_grad, and, as
  /// that is found by building it, its new text and the scope's removals (Desc.Region). Its
  /// steps, below, each hand a value to the next; each returns nothing (nullopt) when it blocked.
  void checkRegion(const ImplicitBackward &B);
  /// The region's statements, from the scope's start (or the scope around the loop) to the
  /// scaled backward, in its block (runs checkAccumulation).
  std::optional<ForwardRegion> forwardRegion(const ImplicitBackward &B);
  /// The index of the guard tail in the region (its size when none), when no other statement
  /// leaves the region (RegionBounds.cpp).
  std::optional<size_t> tailStart(const ForwardRegion &R);
  /// Where the region's pieces lie (sets RegionBegin and RegionEnd), when each starts its line
  /// and no graph crosses another step's region.
  std::optional<RegionOffsets> regionOffsets(const ImplicitBackward &B, const ForwardRegion &R);
  /// The scope's calls removed: those in the region's text as its edits, the others into
  /// Desc.Region (or the scope in a called function, checkCalleeScope).
  RegionTextEdits removeScope(const ForwardRegion &R, const RegionOffsets &O);
  /// The models the region's forwards run, converted (before a loop into Desc.Region, or at the
  /// region's start: the lines returned) and their forwards rewritten into `Body`.
  std::optional<std::vector<std::string>> convertModels(const ForwardRegion &R, const RegionOffsets &O,
                                                        std::vector<Edit> &Body);
  /// The step's zero_grad()s inside the region go (or clear the summed grads), into `Body`.
  void clearRegionZeroGrads(const RegionOffsets &O, std::vector<Edit> &Body);
  /// The lines declaring, before the lambda, the region's declarations that the code after it
  /// still names; their edits inside the region into `Body`.
  std::optional<std::string> hoistedDeclarations(const ForwardRegion &R, const RegionOffsets &O,
                                                 std::vector<Edit> &Body);
  /// The lambda's body: the region's text with `Edits`, re-indented.
  std::optional<std::string> lambdaBody(const ForwardRegion &R, const RegionOffsets &O, std::vector<Edit> Edits);
  /// What the lambda returns: the scaled loss (the sum of them, with several backwards).
  std::optional<std::string> scaledReturn();
  /// The guard tail's text, less the scope's calls in it (`TailEdits`).
  std::optional<std::string> guardText(const RegionOffsets &O, std::vector<Edit> TailEdits);
  /// The text that stays around the call: comments after the statements it replaces, the
  /// statements between the scale statement and backward, comments between several backwards.
  void keepTextAroundCall(const ImplicitBackward &B, const ForwardRegion &R, RegionLambda &L) const;

  // ---- mixed steps: a plain path beside the scaled one ------------------------------------------
  // `if (COND) { scaled backward, unscale_, clip, step, update } else { loss.backward(); clip;
  // optimizer.step(); }` (or the same split over ifs on COND). The forward region before the if
  // becomes the function handed to value_and_grad, returning `COND ? scaler.scale(loss) : loss`:
  // the grads are those of whichever backward ran. Inside the branches the backwards go, the
  // scaled path takes the grads as any scaled step, the plain path as a step without a scaler.

  const ImplicitBackward &plainBackward() const { return *T.Plain.Backwards.front(); }

  /// Whether `E` lies in one of the backward statements the branches lose (their operands move
  /// into the function's return).
  bool inMixedBackward(const clang::Stmt *E) const;

  /// `COND ? <scaled> : <plain>` (or the other way round when the scaled path is the else).
  std::string mixedReturn(const std::string &Scaled) const;

  static const clang::Expr *bare(const clang::Expr *E);

  static bool isNullPointer(const clang::Expr *E, clang::ASTContext &Ctx) {
    return E->IgnoreParenImpCasts()->isNullPointerConstant(Ctx, clang::Expr::NPC_ValueDependentIsNotNull) !=
           clang::Expr::NPCK_NotNull;
  }

  /// A condition that only reads: a variable, a member, `this`, `!x`, `*x`, `x && y`, `x || y`,
  /// `x == nullptr` / `x != nullptr`, an optional's or a smart pointer's truth, `->` on one, or a
  /// call of a const method without arguments (`scaler.is_enabled()`, `cfg.amp()`).
  bool onlyReads(const clang::Expr *E) const;

  /// The declarations a condition reads (variables and members).
  static std::vector<const clang::ValueDecl *> declsRead(const clang::Expr *E);

  /// The expression names `D` (through parentheses, casts, `*`, members of it and `->`).
  static bool names(const clang::Expr *E, const clang::ValueDecl *D);

  /// The first expression in `S` that may write `D`: an assignment to it, ++/--, its address, a
  /// non-const reference or pointer argument, a non-const method called on it (reset(),
  /// emplace()). Writes through calls of other functions (a member set elsewhere) are not seen.
  const clang::Expr *writeOf(const clang::Stmt *S, const clang::ValueDecl *D) const;

  /// Whether two conditions are the same expression (same declarations, same operators).
  bool sameCondition(const clang::Expr *A, const clang::Expr *B) const;

  /// The statement of branch `Side` that comes first (Side itself when it is not a block).
  static const clang::Stmt *firstOf(const clang::Stmt *Side);

  /// Whether `S` is all that branch `Side` holds.
  static bool onlyStatement(const clang::Stmt *Side, const clang::Stmt *S);

  /// Whether the path from `E` up to `Top` crosses only blocks and the ifs of the mixed step:
  /// no loop, no other condition (each element runs once, when its path is taken).
  bool onMixedPath(const clang::Stmt *E, const clang::Stmt *Top) const;

  /// Validates a mixed step; false (with a blocker) when it cannot be rewritten with the same
  /// meaning.
  bool planMixed(const ImplicitBackward &B);

  /// The backwards leave the branches; a branch left empty goes (the whole if when both do).
  void checkMixedBackwards(const ImplicitBackward &B);

  // The scaler's and the optimizers' calls: each check records its CallEdits in Desc.Calls (or
  // the list it is given) or blocks.

  std::string canonicalMethod(ScalerCall::Method M) const;

  /// Renames CamelCase or other spellings of a scaler method to amp::GradScaler's.
  void checkRename(const ScalerCall *C);

  void checkGradsArgument(const ScalerCall *C);

  /// Whether a call's value is used (it is not a statement of its own).
  bool resultUsed(const clang::Expr *Call) const;

  void checkScalerCalls();

  /// A checked unscale whose answer is used (`bool finite = scaler.unscale_and_check(opt);`)
  /// becomes the target's checked unscale on the grads, which answers whether every grad is
  /// finite (`scaler.unscale_and_check(opt, grads)`), negated for a method whose true means
  /// "an inf or NaN was found". What the user's answer means comes from the rules, never from
  /// its name: a method in neither list, or one that answers something other than a bool, is
  /// reported.
  void checkCheckedUnscale(const ScalerCall *U);

  /// A step without a scaler: `optimizer.step();` becomes `amp::step(optimizer, grads);`, which
  /// puts the explicit grads where step() reads them for the duration of the call.
  void checkOptimizerSteps(llvm::ArrayRef<const ScalerCall *> Steps, std::vector<CallEdit> &Out);

  /// `OfOptimizer` is set when the parameters are named through one of the step's optimizers.
  bool paramsOfStep(const clang::Expr *Params, const ScalerCall **OfOptimizer = nullptr) const;

  /// Each clip: refused, or its form and names recorded in Desc.Clips.
  void checkClips();
  /// Why a clip of a model's parameters would cover more than the optimizer's, where seen.
  std::optional<std::string> clipWiderThanOptimizer(const clang::Expr *Params) const;
  /// Why a clip of `optimizer.parameters()` (its first group) would cover more once migrated.
  std::optional<std::string> clipOfFirstGroup(const clang::Expr *Params, const ScalerCall &Of) const;

  /// Statements between the backward and step() that touch `.grad`: the explicit grads never
  /// reach it, so such a statement would silently act on nothing after the rewrite. Each one is
  /// refused, or carried over onto the grads (Desc.GradAccesses).
  void checkGradAccesses();

  /// An element-wise loop over the step's parameters that touches nothing of them but their
  /// gradients:
  ///   for (auto &p : model->parameters()) { if (p.grad().defined()) p.grad().div_(world); }
  /// Each iteration works on one gradient alone, so the loop carries over to the explicit grads
  /// one for one, whatever their order: `for (auto &p_grad : grads) { ... p_grad.div_(world); }`.
  /// `Why` is set when the statement is such a loop that cannot be carried over (said with it).
    struct GradLoop;

  /// Every `.grad()`/`.mutable_grad()` call in a statement, and whether all are on `P`.
    class GradAccessors;

  std::optional<GradLoop> matchGradLoop(const clang::Stmt *S, std::string &Why) const;

  /// `for (auto &p : X.parameters())` -> `for (auto &p_grad : grads)`, each `p.grad()` ->
  /// `p_grad`.
  void checkGradLoop(const GradLoop &L);

  /// A data-parallel gradient all-reduce over the step's parameters, as libtorch projects write
  /// it (there is no DDP in C++):
  ///   for (auto &p : model->parameters()) {
  ///     std::vector<torch::Tensor> bufs{p.grad()};   // or allreduce on {p.grad()} directly
  ///     pg->allreduce(bufs)->wait();                  // default options: SUM
  ///     p.grad().div_(world);                         // optional; world = pg->getSize()
  ///   }
  /// becomes `amp::all_reduce_grads(grads, pg)` (average when it divides by the group's size).
  /// Anything else in the loop, other options, or another divisor: no match (reported).
    struct GradAllReduce;

  static const clang::CXXMemberCallExpr *memberCall(const clang::Expr *E, llvm::StringRef Name);

  /// `p.grad()` / `p.mutable_grad()` of the loop variable.
  static bool isGradOf(const clang::Expr *E, const clang::VarDecl *P);

  /// Whether an expression holds exactly one `p.grad()` and nothing else that computes.
    class GradOnly;

  /// The process group an `allreduce` is called on, as written, when it is an intrusive_ptr
  /// (what amp::ProcessGroupRef takes); "" otherwise.
  std::string groupOf(const clang::CXXMemberCallExpr *Call) const;

  /// `X` is the group's size: `<group>->getSize()`, or a variable initialised from it.
  bool isGroupSize(const clang::Expr *X, llvm::StringRef Group) const;

  std::optional<GradAllReduce> matchGradAllReduce(const clang::Stmt *S) const;

  static std::string firstLine(llvm::StringRef S) {
    llvm::StringRef L = S.split('\n').first.rtrim();
    return L.size() < S.rtrim().size() ? (L + " ...").str() : L.str();
  }

  /// The step's zero_grad()s outside the region: removed, or clearing the summed grads
  /// (Desc.ZeroGrads).
  void checkZeroGrads(const ImplicitBackward &);
  /// A zero_grad() statement of the step goes (its line when alone on it); kept inside a macro.
  void removeZeroGrad(const ZeroGradCall *Z);

  // ---- the scaler's declaration -------------------------------------------------------------

    class TypeLocFinder;

    class ConstructFinder;

  /// `amp::GradScalerOptions().init_scale(a)...` from the arguments of the user's constructor.
  /// A scaler class's default for the option `Setter`, written for the target where it differs
  /// from the target's default; nullopt where it does not, "" where it is not a constant.
  std::optional<std::string> differingDefault(const std::string &Setter,
                                              const clang::Expr *Default) const;
  bool mapOptions(const clang::CXXConstructorDecl *Ctor, llvm::ArrayRef<const clang::Expr *> Args,
                  clang::SourceLocation Loc, std::string &Out);
  /// The options that replace the written arguments of one construction of the scaler (a
  /// constructor call, or a make_shared/make_unique-style call, whose constructor is picked by
  /// arity): false with a blocker when they cannot be mapped. \p Written is the range of the
  /// written arguments, invalid when there are none (nothing to edit).
  bool constructionOptions(const clang::Expr *Construction, const clang::CXXRecordDecl *Class,
                           std::string &Opts, clang::SourceRange &Written);

  /// The scaler's type where it is declared (or, held outside the function, wherever it flows):
  /// the edits are computed while checking that each can be made (Desc.ScalerType).
  void checkScalerDecl();

  // ---- the scaler held outside the step's function --------------------------------------------
  // A parameter, a member, a global, or a local handed on to another function: the object flows
  // through declarations in several functions (and headers). Each one that holds it changes to
  // the target class, with the constructions that make it; the class itself is never edited (it
  // may serve other, unmigrated code).

  /// The holders this plan changes (grouping), and the other files (headers) its edits change.
  std::vector<const clang::ValueDecl *> FlowHolders;
  /// Other scalers declared in the scaler's declaration statement (they change type with it).
  std::vector<const clang::VarDecl *> ScalerSiblings;
  /// The declaration statement of a local variable of the step's function.
  const clang::DeclStmt *declStmtOf(const clang::VarDecl *VD) const;
  std::set<clang::FileID> OtherFilesEdited;
  std::vector<clang::SourceRange> FlowTypeRanges;
  std::vector<const clang::CXXConstructExpr *> FlowConstructs;
  /// make_shared<T>(...), make_unique<T>(...) and optional.emplace(...) of the scaler: their
  /// arguments are mapped like a constructor's.
  std::vector<const clang::CallExpr *> FlowMakeCalls;

  std::string stateDictUseProblem(const clang::CXXMethodDecl *M) const;

  /// The uses, in the code of the translation unit outside system headers, of every declaration
  /// holding the class, and the calls of every function taking it.
    class ScalerUseIndex;

  /// "file.h:12" for a reason text.
  std::string where(clang::SourceLocation L) const;

  /// Why a declaration at `L` cannot be edited by this run; "" when it can.
  std::string whyNotEditable(clang::SourceLocation L) const;

  /// A replacement of a token range in any editable file, into the scaler type's edits; false
  /// inside a macro body.
  bool planEditAnywhere(clang::SourceRange R, const std::string &Text);

  /// Adds the type spellings and constructions of the class inside `S` (an initializer, an
  /// argument); false when there are none.
  bool collectSpellings(const clang::Stmt *S, const clang::CXXRecordDecl *Class);

  /// A scaler call on the holder (scale/unscale_/step/update/get_scale) that stays valid on the
  /// target class: one of a training step, or one that takes no optimizer.
  bool isScalerCallOn(const clang::Expr *R, const clang::ValueDecl *H) const;

  /// Where a use hands the object on: the holder it flows into is added; false (with a blocker)
  /// when the use would not survive the type change.
  template <class AddFn>
  bool followUse(const clang::Expr *R, const clang::ValueDecl *H, const clang::CXXRecordDecl *Class, AddFn Add);

  /// A parameter holds what its callers pass: each caller's argument is followed back.
  template <class AddFn>
  bool followCallers(const clang::ParmVarDecl *PV, const clang::CXXRecordDecl *Class, const ScalerUseIndex &Index,
                     AddFn Add);

  /// One holder: its declarations must be editable; its type spellings, initializers and
  /// constructions change; its uses and (for a parameter) its callers lead to further holders.
  template <class AddFn>
  bool followHolder(const clang::ValueDecl *H, const clang::CXXRecordDecl *Class, const ScalerUseIndex &Index,
                    AddFn Add);

  void checkScalerFlow(const clang::CXXRecordDecl *Class);

  /// The edits of the spellings and constructions the flow collected (as the local path makes),
  /// into Desc.ScalerType.
  bool checkFlowSpellings(const clang::CXXRecordDecl *Class);

  /// A header whose declarations now name the target class includes its header itself
  /// (planIncludeInsertion decides where).
  void includeIn(clang::FileID F);

  /// Where the target's include goes in the step's file (Desc.Include).
  void decideInclude() {
    if (auto Ins = planIncludeInsertion(Buffer, Tgt.Include, FilePath))
      Desc.Include = Edit{Ins->Offset, 0, Ins->Text};
  }
};

} // namespace ampmigrate
