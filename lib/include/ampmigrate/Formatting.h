// --format-style: formats only the lines a fix changed, with clang-format's library.
#pragma once

#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/Error.h"
#include <string>

namespace ampmigrate {

/// Reformats the parts of `NewCode` that `Reps` (applied to the original) changed. `Style` is a
/// clang-format style name, "file" (.clang-format found from `File`), or an inline {...} style.
llvm::Expected<std::string> formatChangedLines(llvm::StringRef File, llvm::StringRef NewCode,
                                               const clang::tooling::Replacements &Reps,
                                               llvm::StringRef Style);

} // namespace ampmigrate
