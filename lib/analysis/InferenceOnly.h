// The inference-only rule (FunctionAnalysis::InferenceOnly): what each function of a translation
// unit calls, and which of them training code reaches.
#pragma once

#include "ampmigrate/Rules.h"
#include "ampmigrate/TrainingStep.h"

#include "clang/AST/Decl.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include <memory>
#include <vector>

namespace ampmigrate {

class CalleeMemo;

/// The calls of the functions of one translation unit, summarised one function at a time, and the
/// functions that training code (a backward pass, an optimizer's step() or zero_grad(), a clip)
/// reaches through them.
class TrainingReach {
public:
  explicit TrainingReach(const RuleSet &Rules);
  ~TrainingReach();

  /// One key for a function, its redeclarations and its template's instantiations.
  static const clang::FunctionDecl *key(const clang::FunctionDecl *F);

  /// What `FD` calls (its body, a constructor's initializers too).
  void summariseCalls(const clang::FunctionDecl *FD);

  /// Summarises the functions the summarised code calls whose bodies this translation unit has
  /// outside the analysed functions (a project header's, not a system header's), and theirs in
  /// turn: each once. A scope around `train_once(model, opt, x)` of a header trains.
  void summariseCallees(const clang::SourceManager &SM);

  /// The keys of the functions reached from a function that calls backward(), following the
  /// calls of the summarised code from each, and the code handed to one (a callback).
  llvm::SmallPtrSet<const clang::FunctionDecl *, 32> trainingFunctions() const;

  /// For each function that runs a backward pass (or an optimizer's step(), zero_grad() or a
  /// clip), directly or through the functions it calls: the first such call on the way.
  llvm::DenseMap<const clang::FunctionDecl *, const clang::CallExpr *> backwardRunners() const;

  /// The keys of the functions the summarised code calls or names.
  llvm::SmallPtrSet<const clang::FunctionDecl *, 32> calledFunctions() const;

  /// Sets each scope's HandedTo / ReturnedUncalled / HandedToUnseen (TrainingStep.h) for a
  /// function with scopes.
  /// `Callees` (may be null) says which functions of other files call one and train.
  void traceScopeValues(FunctionAnalysis &FA, const clang::ASTContext &Ctx,
                        const llvm::DenseMap<const clang::FunctionDecl *, const clang::CallExpr *> &Runners,
                        const llvm::SmallPtrSetImpl<const clang::FunctionDecl *> &Called,
                        const CalleeFacts *Callees) const;

  /// A call handing code or values to the callee (a lambda, a function, a variable holding a
  /// lambda; a call's result, directly or through the variable it initialised): the functions
  /// that code calls run when the callee runs it, e.g. under its backward(), and the functions
  /// whose results it receives computed what it works on (a loss it calls backward() on).
  struct Callback {
    const clang::FunctionDecl *Callee;
    llvm::SmallVector<const clang::FunctionDecl *, 4> Runs;
  };

private:
  const RuleSet &Rules;
  struct FunctionCalls {
    bool CallsBackward = false;
    const clang::CallExpr *FirstBackward = nullptr;
    llvm::SmallPtrSet<const clang::FunctionDecl *, 8> Callees;
  };
  llvm::DenseMap<const clang::FunctionDecl *, FunctionCalls> Calls;
  std::vector<Callback> Callbacks;
  std::unique_ptr<CalleeMemo> Memo;
};

} // namespace ampmigrate
