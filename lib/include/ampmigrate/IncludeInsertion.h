// Where a new `#include` goes in a file, from its text alone (no AST): the planner uses it for the
// migrated file and for every header whose declarations come to name the target API.
#pragma once

#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace ampmigrate {

struct IncludeInsertion {
  unsigned Offset = 0; ///< where Text goes (a line start, or the end of a file with no final newline)
  std::string Text;    ///< "#include <amp/torch.h>\n", with a leading newline when needed
};

/// The insertion of `#include Spelled` (`<amp/torch.h>` or `"amp.h"`, as written) into `Code`, or
/// nothing when a directive including exactly `Spelled` is already there (at any depth).
///
/// It goes after the last unconditional `#include` of the file's leading preprocessor block: the
/// lines before the first line of code, outside any `#if`/`#ifdef` (a header guard's
/// `#ifndef X`/`#define X` pair does not count as a condition). An `#include` inside a `#if` block
/// or after the first declaration (an X-macro table, an include at the end of the file) is not an
/// anchor. With no such include: after the header guard's `#define` or `#pragma once`, else at the
/// start of the file (after a UTF-8 byte-order mark).
std::optional<IncludeInsertion> planIncludeInsertion(llvm::StringRef Code, llvm::StringRef Spelled);

} // namespace ampmigrate
