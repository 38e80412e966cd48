// What a step's statements mean beyond the shapes the rewrite carries over: arguments the rewrite
// would drop, values it would leave behind, classes it would delete with their side effects. Each
// such thing is a blocker naming it; nothing here builds an edit (feasibility, issue #37).
#pragma once

#include "ampmigrate/MigrationPlan.h"
#include "ampmigrate/Rules.h"
#include "ampmigrate/TrainingStep.h"

#include "clang/AST/ASTContext.h"
#include <vector>

namespace ampmigrate {

/// The statements and arguments of step `T` (in `FA`) whose meaning the rewrite cannot carry:
/// - `backward(gradient)`, `backward(g, retain_graph, create_graph)` (value_and_grad takes none);
/// - the scaled loss of a split backward used other than by that backward (`s.div_(k)`);
/// - a clip whose max norm is a constant that is not a positive number (NaN, 0, negative);
/// - an autocast guard class whose constructor or destructor does more than autocast calls (a
///   counter, a log line, a timer): removing the guard would remove that too.
/// Empty when there are none. Locations are where a report should point.
std::vector<Blocker> meaningBlockers(clang::ASTContext &Ctx, const RuleSet &Rules,
                                     const FunctionAnalysis &FA, const TrainingStep &T);

/// The first thing the constructor `Ctor` (with its initialisers) or the class's destructor does
/// besides calling autocast functions and keeping state in the guard's own members: a call of
/// another function, a write or read of a variable outside the guard, a non-trivial object made.
/// Null when there is none or the bodies are not visible.
const clang::Stmt *guardSideEffect(const clang::CXXConstructorDecl *Ctor, const RuleSet &Rules);

} // namespace ampmigrate
