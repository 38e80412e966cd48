// The facts the concern planners of one step share (StepFacts): each computed once, by the stage
// that decides it, in order, and handed on as a value; no concern reads another's plan
// (docs/architecture.md, "planning").
#pragma once

#include "Edit.h"
#include "StepDescriptor.h"
#include <string>
#include <vector>

namespace ampmigrate {

/// The preprocessor around the step's scope (planPreprocessor, VersionBranches.cpp).
struct PreprocessorFacts {
  /// Preprocessor conditionals that hold nothing but the scope's calls in per-version spellings
  /// (or under a flag): removed whole with the scope, as edits deleting them.
  std::vector<Edit> VersionGroups;
  /// `#ifdef USE_AMP` (one branch, read by the compiler) around the scope's calls and nothing
  /// else: the directive; the conversion is then spelled per configuration.
  std::string FlagOpen;

  /// The conversion statement `Line` (indented, ending in a newline) under FlagOpen: at `Level`
  /// where the flag holds, at O0 (`LevelEnum`::O0) where it does not; `Line` as it is without a flag.
  std::string perConfiguration(const std::string &Line, const std::string &Level,
                               const std::string &LevelEnum) const;
  /// Whether offset `O` lies in one of VersionGroups.
  bool inVersionGroup(unsigned O) const {
    for (const Edit &G : VersionGroups)
      if (O >= G.Offset && O < G.Offset + G.Length)
        return true;
    return false;
  }
};

/// The forward region's extent in the step's file (planRegion): the zero_grad() calls inside it
/// are handled with it, and planZeroGrads skips them.
struct RegionExtent {
  unsigned Begin = 0, End = 0;
};

/// What the concern planners read besides the context: the step's shape, then each shared fact
/// as the stage that decides it sets it.
struct StepFacts : StepShape {
  PreprocessorFacts Preprocessor;
  /// An earlier stage (the preprocessor, the shape, the step's meaning) refused the step: the
  /// forward region stops before building the function's text (and taking its names).
  bool Refused = false;
  /// Gradient accumulation (decided with the forward region, or by a split step: always on).
  AccumulationPlan Accumulation;
  RegionExtent Region;
};

} // namespace ampmigrate
