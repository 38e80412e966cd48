// Formatting of changed lines after a fix (clang-format's library, only the affected ranges).
#include "ampmigrate/Formatting.h"

#include "clang/Format/Format.h"

namespace ampmigrate {

llvm::Expected<std::string> formatChangedLines(llvm::StringRef File, llvm::StringRef NewCode,
                                               const clang::tooling::Replacements &Reps,
                                               llvm::StringRef Style) {
  // The edits were applied with "\r\n" in CRLF files: measure the ranges the same way.
  bool CRLF = NewCode.contains("\r\n");
  clang::tooling::Replacements Adjusted;
  for (const clang::tooling::Replacement &R : Reps) {
    std::string Text = R.getReplacementText().str();
    if (CRLF) {
      std::string T;
      for (char C : Text) {
        if (C == '\n')
          T += '\r';
        T += C;
      }
      Text = T;
    }
    if (auto E = Adjusted.add(clang::tooling::Replacement(File, R.getOffset(), R.getLength(), Text)))
      return E;
  }
  std::vector<clang::tooling::Range> Ranges = Adjusted.getAffectedRanges();
  auto FS = clang::format::getStyle(Style, File, "LLVM", NewCode);
  if (!FS)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: error: --format-style: %s",
                                   File.str().c_str(), llvm::toString(FS.takeError()).c_str());
  clang::tooling::Replacements F = clang::format::reformat(*FS, NewCode, Ranges, File);
  auto Out = clang::tooling::applyAllReplacements(NewCode, F);
  if (!Out)
    return Out.takeError();
  return *Out;
}

} // namespace ampmigrate
