// Where a location is, as text for messages: "line 12", "file.cpp:12", "file.cpp:12:5".
#pragma once

#include "llvm/ADT/StringRef.h"
#include <string>

namespace clang {
class SourceLocation;
class SourceManager;
} // namespace clang

namespace ampmigrate {

/// "line N": the line of `L`'s expansion (where a macro is used, not where it is defined).
std::string lineText(const clang::SourceManager &SM, clang::SourceLocation L);

/// "file:line", as a message names a line of a file.
std::string positionText(llvm::StringRef File, unsigned Line);

/// "file:line:column", as a diagnostic names its position (a column of 0 is printed as 0).
std::string positionText(llvm::StringRef File, unsigned Line, unsigned Column);

} // namespace ampmigrate
