// The core edit of the rewrite: a replacement in the step's file, by offsets. A step's edits meet
// other steps' (and other files') only as tooling::Replacements, merged once by EditMerge.
#pragma once

#include <string>

namespace ampmigrate {

/// An edit inside one file, by offsets; the planner turns its edits into tooling::Replacements.
struct Edit {
  unsigned Offset, Length;
  std::string Text;
};

} // namespace ampmigrate
