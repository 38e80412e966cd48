// Per-function summaries of what a function does that a rewrite depends on (it turns autocast
// on; it reads or writes .grad), so that a callee whose body is in another file of the project is
// judged by what it does rather than refused or trusted blindly (issues #37, #38 item 2).
//
// Each translation unit summarises the functions defined in its main file, with what it sees of
// their callees folded in; the callees whose bodies it does not have stay named (by USR). The
// driver merges the summaries of a run (and of the database's files that define what a TU
// asked about) into one SummaryIndex, and analyses again the TUs whose questions it answers.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace clang {
class ASTContext;
class CallExpr;
class FunctionDecl;
} // namespace clang

namespace ampmigrate {

class RuleSet;

/// What one function does, through every callee whose body its translation unit has.
struct FunctionSummary {
  std::string Name;       ///< qualified name
  std::string Where;      ///< `file:line` of its definition
  std::string AutocastAt; ///< `file:line` of an autocast enable it runs; empty: none
  std::string GradAt;     ///< `file:line` of a .grad()/mutable_grad() it runs; empty: none
  std::string GradReadAt; ///< the same, for one that does more than clear .grad
  std::string BackwardAt; ///< `file:line` of a backward() it runs; empty: none
  /// `file:line` of a call through a function pointer or a std::function (what runs is not
  /// known); empty: none
  std::string IndirectAt;
  /// USRs of the project functions it calls (directly or through the callees above) whose bodies
  /// its translation unit does not have.
  std::vector<std::string> External;
};

/// The summaries of a run, by USR.
class SummaryIndex {
public:
  std::map<std::string, FunctionSummary> Functions;

  /// A function summarised twice (an inline function, or two programs of one database defining
  /// the same name) keeps every fact either summary has.
  void add(const std::string &USR, FunctionSummary S);
  void merge(const SummaryIndex &O) {
    for (const auto &[USR, S] : O.Functions)
      add(USR, S);
  }
  bool empty() const { return Functions.empty(); }

  llvm::json::Value toJSON() const;
  static std::optional<SummaryIndex> fromJSON(const llvm::json::Value &V);
};

/// A fact a rewrite asks of a callee.
enum class CalleeFact { EnablesAutocast, TouchesGrad, ReadsGrad, RunsBackward, CallsIndirectly };

/// The run's answer for a function: it does (Yes, with where), it does not (No), or some code it
/// runs is in no summary (Unknown, naming that function).
struct CalleeAnswer {
  enum class Kind { No, Yes, Unknown } K = Kind::No;
  std::string Function; ///< Yes: the function that does it; Unknown: the one with no summary
  std::string Where;    ///< Yes: `file:line`
};

/// Follows `USR` through the index's summaries (every function it reaches in other files).
CalleeAnswer askIndex(const SummaryIndex &Index, llvm::StringRef USR, CalleeFact F);

/// A summarised function that calls `USR` (with no body in its own file) and runs a backward.
const FunctionSummary *trainingCallerIn(const SummaryIndex &Index, llvm::StringRef USR);

/// A function asked about that no summary of the run had yet.
struct UnknownCallee {
  std::string Name;      ///< qualified name
  std::string Pattern;   ///< what its out-of-line definition spells: `Class::method`, or `name`
  /// The question is who calls it (CalleeFacts::trainingCaller): Pattern is then what a caller's
  /// file spells, `Class name` for a method (the class's name, and a call of the name), or `name`.
  bool Callers = false;
};

/// The questions of one translation unit about callees with no body in it, answered from the
/// run's index (null: none yet). Records what it could not answer.
class CalleeFacts {
public:
  explicit CalleeFacts(const SummaryIndex *Run = nullptr) : Run(Run) {}

  /// For a project function whose body this translation unit does not have.
  CalleeAnswer ask(const clang::FunctionDecl *FD, CalleeFact F) const;

  /// A function of another file of the run that calls `FD` and runs a backward (Yes, naming it
  /// and where its backward is); Unknown when none is known (the question is recorded).
  CalleeAnswer trainingCaller(const clang::FunctionDecl *FD) const;

  /// The functions asked about that the run's index does not have, by USR.
  const std::map<std::string, UnknownCallee> &unknown() const { return Unknown; }

private:
  const SummaryIndex *Run;
  mutable std::map<std::string, UnknownCallee> Unknown;
};

/// The summaries of functions of one translation unit, any of its functions (the main file's or a
/// header's), each body walked once however many summaries reach it.
class FunctionSummariser {
public:
  FunctionSummariser(clang::ASTContext &Ctx, const RuleSet &Rules);
  ~FunctionSummariser();
  FunctionSummariser(const FunctionSummariser &) = delete;
  FunctionSummariser &operator=(const FunctionSummariser &) = delete;

  /// What `Def` (a function with a body) does through every callee whose body this TU has.
  /// `External`, when given, receives the project functions it reaches whose bodies this TU
  /// does not have (the declarations behind FunctionSummary::External).
  FunctionSummary summarise(const clang::FunctionDecl *Def,
                            std::vector<const clang::FunctionDecl *> *External = nullptr);

private:
  class Impl;
  std::unique_ptr<Impl> P;
};

/// A library call that reads or writes .grad without a `.grad()` in the project's code: an
/// optimizer's step() or zero_grad(), a model's zero_grad(), a clip function of the rules.
bool actsOnGradInLibrary(const clang::CallExpr *CE, const RuleSet &Rules);

/// The callee as written (`h.after_backward`) of a call through a function pointer or a
/// std::function, which may run anything; nullopt for a direct call (or a call not yet resolved
/// in a template).
std::optional<std::string> indirectCallee(const clang::CallExpr *CE, const clang::ASTContext &Ctx);

/// The USR of a function (its identity across translation units); empty when clang has none.
std::string usrOf(const clang::FunctionDecl *FD);

/// Whether the fast path skipped the function's body (HeaderBodySkipper): it is in a header that
/// names no autocast, scaler or grad token, so it turns nothing on and touches no .grad.
bool hasSkippedBody(const clang::FunctionDecl *FD);

/// Whether a function is the project's: not in a system header, not in a namespace of libtorch
/// or the standard library.
bool isProjectFunction(const clang::FunctionDecl *FD);

/// The summaries of the functions defined in the main file of a translation unit.
SummaryIndex summariseMainFile(clang::ASTContext &Ctx, const RuleSet &Rules);

} // namespace ampmigrate
