// Where a location is, as text for messages (SourceText.h): one spelling for every message.
#include "ampmigrate/SourceText.h"

#include "clang/Basic/SourceManager.h"

namespace ampmigrate {

std::string lineText(const clang::SourceManager &SM, clang::SourceLocation L) {
  return "line " + std::to_string(SM.getExpansionLineNumber(L));
}

std::string positionText(llvm::StringRef File, unsigned Line) {
  return File.str() + ":" + std::to_string(Line);
}

std::string positionText(llvm::StringRef File, unsigned Line, unsigned Column) {
  return positionText(File, Line) + ":" + std::to_string(Column);
}

} // namespace ampmigrate
