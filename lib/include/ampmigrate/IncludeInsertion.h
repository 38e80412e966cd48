// Where a new `#include` goes in a file, from its text alone (no AST; tooling::HeaderIncludes):
// the planner uses it for the migrated file and for every header whose declarations come to name
// the target API.
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
/// nothing when a directive including exactly `Spelled` is already there (at any depth, outside
/// comments).
///
/// Where it goes is clang's `tooling::HeaderIncludes` (the include inserter of clang-tidy,
/// clangd and clang-format) with the default style: after the last `#include` of the file's
/// leading block of includes (which ends at the first line that is not an include: a `#if`,
/// a `#define`, a declaration; includes after it, such as an X-macro table or an include at the
/// end of the file, are not anchors); with no such include, after the header guard's `#define`
/// or `#pragma once`, else after the comments that open the file. `FileName` tells a source file
/// from a header (its main header, included first, is kept first). A UTF-8 byte-order mark,
/// CRLF line endings and a missing final newline are kept.
std::optional<IncludeInsertion> planIncludeInsertion(llvm::StringRef Code, llvm::StringRef Spelled,
                                                     llvm::StringRef FileName = "");

} // namespace ampmigrate
