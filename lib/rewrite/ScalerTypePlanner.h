// The scaler's type where it is declared and, held outside the step's function, wherever it
// flows (planScalerType): the edits are computed while checking that each can be made.
// ScalerDeclaration.cpp: the local declaration and the constructions' options; ScalerFlow.cpp:
// the holders it flows through.
#pragma once

#include "StepContext.h"
#include "StepFacts.h"
#include "clang/Tooling/Core/Replacement.h"
#include <set>

namespace ampmigrate {

/// The scaler type's slice of the descriptor, and what planMigrations groups steps by.
struct ScalerTypePlan {
  /// The type's and the constructions' edits, the target's include in the headers changed.
  PlannedEdits Edits;
  /// The holders this plan changes (grouping).
  std::vector<const clang::ValueDecl *> Holders;
  /// Other scalers declared in the scaler's declaration statement (they change type with it).
  std::vector<const clang::VarDecl *> Siblings;
};

ConcernPlan<ScalerTypePlan> planScalerType(const StepContext &C, const StepFacts &F);

class ScalerUseIndex;

/// The planner behind planScalerType (one object per call).
class ScalerTypePlanner : public StepConcern {
public:
  ScalerTypePlanner(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers,
                    ScalerTypePlan &Out)
      : StepConcern(C, F, Blockers), Out(Out) {}

  /// The scaler's type where it is declared (or, held outside the function, wherever it flows).
  void checkScalerDecl();

private:
  ScalerTypePlan &Out;
  /// The other files (headers) the edits change.
  std::set<clang::FileID> OtherFilesEdited;
  std::vector<clang::SourceRange> FlowTypeRanges;
  std::vector<const clang::CXXConstructExpr *> FlowConstructs;
  /// make_shared<T>(...), make_unique<T>(...) and optional.emplace(...) of the scaler: their
  /// arguments are mapped like a constructor's.
  std::vector<const clang::CallExpr *> FlowMakeCalls;

  // ---- ScalerDeclaration.cpp -------------------------------------------------------------------
  /// The declaration statement of a local variable of the step's function.
  const clang::DeclStmt *declStmtOf(const clang::VarDecl *VD) const;
  /// A scaler class's default for the option `Setter`, written for the target where it differs
  /// from the target's default; nullopt where it does not, "" where it is not a constant.
  std::optional<std::string> differingDefault(const std::string &Setter, const clang::Expr *Default) const;
  /// `amp::GradScalerOptions().init_scale(a)...` from the arguments of the user's constructor.
  bool mapOptions(const clang::CXXConstructorDecl *Ctor, llvm::ArrayRef<const clang::Expr *> Args,
                  clang::SourceLocation Loc, std::string &Opts);
  /// The setters of an options object the constructor takes (`GradScalerOptions{}.enabled(false)`,
  /// or its default), and the options class's defaults where they differ from the target's,
  /// appended to \p Opts; false with a blocker when they cannot be mapped.
  bool mapOptionsObject(const clang::CXXRecordDecl *Options, const clang::Expr *Arg,
                        clang::SourceLocation Loc, std::string &Opts);
  /// The options that replace the written arguments of one construction of the scaler (a
  /// constructor call, or a make_shared/make_unique-style call, whose constructor is picked by
  /// arity): false with a blocker when they cannot be mapped. \p Written is the range of the
  /// written arguments, invalid when there are none (nothing to edit).
  bool constructionOptions(const clang::Expr *Construction, const clang::CXXRecordDecl *Class,
                           std::string &Opts, clang::SourceRange &Written);
  /// A replacement of a token range in any editable file, into Out.Edits; false inside a macro
  /// body.
  bool planEditAnywhere(clang::SourceRange R, const std::string &Text);
  /// A header whose declarations now name the target class includes its header itself
  /// (planIncludeInsertion decides where).
  void includeIn(clang::FileID F);

  // ---- ScalerFlow.cpp: the scaler held outside the step's function --------------------------
  // A parameter, a member, a global, or a local handed on to another function: the object flows
  // through declarations in several functions (and headers). Each one that holds it changes to
  // the target class, with the constructions that make it; the class itself is never edited (it
  // may serve other, unmigrated code).
  void checkScalerFlow(const clang::CXXRecordDecl *Class);
  /// The edits of the spellings and constructions the flow collected (as the local path makes).
  bool checkFlowSpellings(const clang::CXXRecordDecl *Class);
  /// Adds the type spellings and constructions of the class inside `S` (an initializer, an
  /// argument); false when there are none.
  bool collectSpellings(const clang::Stmt *S, const clang::CXXRecordDecl *Class);
  /// A scaler call on the holder (scale/unscale_/step/update/get_scale) that stays valid on the
  /// target class: one of a training step, or one that takes no optimizer.
  bool isScalerCallOn(const clang::Expr *R, const clang::ValueDecl *H) const;
  std::string stateDictUseProblem(const clang::CXXMethodDecl *M) const;
  /// Where a use hands the object on: the holder it flows into is added; false (with a blocker)
  /// when the use would not survive the type change.
  template <class AddFn>
  bool followUse(const clang::Expr *R, const clang::ValueDecl *H, const clang::CXXRecordDecl *Class, AddFn Add);
  /// A parameter holds what its callers pass: each caller's argument is followed back.
  template <class AddFn>
  bool followCallers(const clang::ParmVarDecl *PV, const clang::CXXRecordDecl *Class,
                     const ScalerUseIndex &Index, AddFn Add);
  /// One holder: its declarations must be editable; its type spellings, initializers and
  /// constructions change; its uses and (for a parameter) its callers lead to further holders.
  template <class AddFn>
  bool followHolder(const clang::ValueDecl *H, const clang::CXXRecordDecl *Class,
                    const ScalerUseIndex &Index, AddFn Add);
};

} // namespace ampmigrate
