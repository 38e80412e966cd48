// What every concern planner of one training step reads and never changes (StepContext): the
// AST, the step and its function, the step's file, and the range and spelling helpers over them;
// and the base of the concern planners (StepConcern), which adds the facts decided before them and
// where their blockers go (docs/architecture.md, "planning").
#pragma once

#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/ExpressionFacts.h"
#include "Edit.h"
#include "ampmigrate/GenericLambdas.h"
#include "ampmigrate/MigrationPlan.h"
#include "ampmigrate/StepFinder.h"

#include "clang/AST/ParentMap.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"
#include <string>
#include <vector>

namespace ampmigrate {

struct StepFacts;

/// `S`'s first line, with ` ...` when it has more: a statement as a reason quotes it.
std::string firstLine(llvm::StringRef S);

/// A scaler method as amp::GradScaler spells it (`unscale_`, `get_scale`).
std::string canonicalMethod(ScalerCall::Method M);

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

/// What one step's planning reads, by reference: the AST, the rules, the step and its function's
/// analysis, the options, the target's names. StepContext holds them, and every concern planner
/// (StepConcern) has them under the same short names.
struct StepInputs {
  clang::ASTContext &Ctx;
  const clang::SourceManager &SM;
  const clang::LangOptions &LO;
  const RuleSet &Rules;
  const FunctionAnalysis &FA;
  const TrainingStep &T;
  const PlannerOptions &Opts;
  /// The target names as the edits spell them (globally qualified when needed).
  const TargetApi &Tgt;
  const TranslationUnitAnalysis &TU;
};

/// The immutable context of one step's planning. Built once per step; every planner takes it by
/// const reference.
class StepContext : public StepInputs {
public:
  StepContext(clang::ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
              const TrainingStep &T, const PlannerOptions &Opts, const TargetApi &Tgt,
              const TranslationUnitAnalysis &TU);
  StepContext(const StepContext &) = delete;
  StepContext &operator=(const StepContext &) = delete;

  /// The parents of the function's statements (its generic lambdas' bodies grafted in; the
  /// constructor's only change to it).
  clang::ParentMap PM;
  /// The step's file: where its edits go (by offset) and the text they are computed from.
  const clang::FileID File;
  const std::string FilePath;
  const llvm::StringRef Buffer;

  unsigned off(clang::SourceLocation L) const { return SM.getFileOffset(SM.getExpansionLoc(L)); }
  std::string text(clang::SourceRange R) const { return StepFinder::textOf(Ctx, R); }
  /// Argument `I` of `CE` as written, with the comments that stand before it after the previous
  /// argument's comma (`f(p, /* why */ n)` gives `/* why */ n`): the text an edit copies, so that
  /// no comment of a rewritten call is lost.
  std::string argumentText(const clang::CallExpr *CE, unsigned I) const;

  /// Where the step's reasons about the scaler go: its first step(), or its backward in the
  /// scaling half of a step split over two methods.
  clang::SourceLocation stepLoc() const;

  /// File char range of a statement including its trailing semicolon; invalid if in a macro body.
  clang::CharSourceRange stmtRange(const clang::Stmt *S) const;
  unsigned lineStart(unsigned O) const;
  /// The offset just past the line's '\n'.
  unsigned lineEnd(unsigned O) const;
  std::string indentAt(unsigned O) const;
  bool onlySpace(unsigned B, unsigned E) const;
  /// Deletion of a whole statement: the full line when nothing else is on it.
  bool removal(const clang::Stmt *S, Edit &Out) const;
  /// The offsets of a token range in the step's file; false inside a macro body or elsewhere.
  bool fileRange(clang::SourceRange R, unsigned &B, unsigned &E) const;

  const clang::CompoundStmt *parentCompound(const clang::Stmt *S) const {
    return llvm::dyn_cast_or_null<clang::CompoundStmt>(PM.getParent(S));
  }
  /// The ancestor of `S` (or S) whose parent is `C`.
  const clang::Stmt *childOf(const clang::Stmt *S, const clang::CompoundStmt *C) const;
  bool within(const clang::Stmt *S, const clang::Stmt *Ancestor) const;
  /// Whether a call's value is used (it is not a statement of its own).
  bool resultUsed(const clang::Expr *Call) const;

  /// The step's backward as a reason names it: "the scaled backward", or for a step without a
  /// loss scaler "the backward" (it is a plain `loss.backward()`).
  std::string backwardWords() const { return T.Unscaled ? "the backward" : "the scaled backward"; }
  /// "file.h:12" for a reason text.
  std::string where(clang::SourceLocation L) const;
  /// Why a declaration at `L` cannot be edited by this run; "" when it can.
  std::string whyNotEditable(clang::SourceLocation L) const;

  std::string modelText(const ObjectRef &M) const;
  /// What value_and_grad differentiates: every parameter of every group of the optimizer
  /// (`amp::parameters_of(opt)`; Optimizer::parameters() is the first group only, and libtorch 1.x
  /// warns on each call). Without that target in the rules: `opt.parameters()`.
  std::string optimizerParams(const ScalerCall *C) const;
};

/// What a concern planner returns: its slice of the descriptor, or the reasons the step cannot be
/// rewritten (then the slice is not read).
template <class Slice> struct ConcernPlan {
  Slice Plan;
  std::vector<Blocker> Blockers;
};

/// The base of a concern's planner: the context, the facts decided before the concern, and the
/// list its blockers go to, with the context's members under their short names.
class StepConcern : protected StepInputs {
protected:
  StepConcern(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers)
      : StepInputs(C), C(C), F(F), PM(C.PM), File(C.File), Buffer(C.Buffer), Blockers(Blockers) {}

  const StepContext &C;
  const StepFacts &F;
  const clang::ParentMap &PM;
  const clang::FileID File;
  const llvm::StringRef Buffer;
  std::vector<Blocker> &Blockers;

  void block(clang::SourceLocation L, std::string Why) const { Blockers.push_back({L, std::move(Why)}); }
};

} // namespace ampmigrate
