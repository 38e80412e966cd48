// The preprocessor around a step: the file's conditional directives, and the conditionals that go
// whole with the scope (per-version spellings of its calls, a compile-time AMP flag), decided
// before the step's shape (planPreprocessor, VersionBranches.cpp).
#pragma once

#include "StepContext.h"
#include "StepFacts.h"

namespace ampmigrate {

/// A conditional directive of a file (`#if`, `#ifdef`, `#ifndef` open; `#elif`, `#else` switch
/// branches; `#endif` closes), found by lexing the file: the AST keeps none.
struct PPDirective {
  unsigned Offset; ///< of the `#`
  enum Kinds { Open, Branch, Close } Kind;
};
std::vector<PPDirective> conditionalDirectives(const clang::SourceManager &SM, clang::FileID File,
                                               const clang::LangOptions &LO);

/// The conditionals that go with the step's scope (PreprocessorFacts), or, for AMP code under an
/// inactive branch that is not such a conditional, a blocker.
ConcernPlan<PreprocessorFacts> planPreprocessor(const StepContext &C);

} // namespace ampmigrate
