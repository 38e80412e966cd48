// Applies one file's edits to its text, keeping the file's line endings and its UTF-8 BOM.
#include "ampmigrate/FixApplier.h"
#include "llvm/Support/Error.h"

namespace ampmigrate {
namespace {

const llvm::StringRef Utf8Bom = "\xEF\xBB\xBF";

std::string toCrlf(llvm::StringRef S) {
  std::string Out;
  Out.reserve(S.size() + S.count('\n'));
  for (size_t I = 0; I < S.size(); ++I) {
    if (S[I] == '\n' && (I == 0 || S[I - 1] != '\r'))
      Out += '\r';
    Out += S[I];
  }
  return Out;
}

} // namespace

bool usesCrlf(llvm::StringRef Text) {
  unsigned Crlf = 0, Lf = 0;
  int First = -1;
  for (size_t I = 0; I < Text.size(); ++I) {
    if (Text[I] != '\n')
      continue;
    bool IsCrlf = I > 0 && Text[I - 1] == '\r';
    ++(IsCrlf ? Crlf : Lf);
    if (First < 0)
      First = IsCrlf;
  }
  if (Crlf != Lf)
    return Crlf > Lf;
  return First == 1;
}

namespace {
clang::tooling::Replacement adapt(const clang::tooling::Replacement &R, llvm::StringRef FileText,
                                  bool Crlf) {
  // Clang's offsets count the BOM; an edit "at the start of the file" belongs after it.
  const unsigned Floor = FileText.starts_with(Utf8Bom) ? Utf8Bom.size() : 0;
  unsigned Begin = R.getOffset(), End = Begin + R.getLength();
  if (End < Begin || End > FileText.size())
    return R; // out of range: the caller reports it
  Begin = std::max(Begin, Floor);
  End = std::max(End, Floor);
  std::string Text = Crlf ? toCrlf(R.getReplacementText()) : R.getReplacementText().str();
  return clang::tooling::Replacement(R.getFilePath(), Begin, End - Begin, Text);
}
} // namespace

clang::tooling::Replacement adaptToFile(const clang::tooling::Replacement &R, llvm::StringRef FileText) {
  return adapt(R, FileText, usesCrlf(FileText));
}

llvm::Expected<std::string> applyEdits(llvm::StringRef File, llvm::StringRef Original,
                                       const clang::tooling::Replacements &Reps) {
  const bool Crlf = usesCrlf(Original);
  std::string Out;
  Out.reserve(Original.size());
  unsigned Cursor = 0;
  for (const clang::tooling::Replacement &Rep : Reps) {
    unsigned Begin = Rep.getOffset();
    unsigned End = Begin + Rep.getLength();
    if (End > Original.size() || End < Begin)
      return llvm::createStringError(
          std::errc::invalid_argument,
          "%s: edit at offset %u (length %u) lies outside the file (%zu bytes); was it "
          "changed since it was analysed?",
          File.str().c_str(), Rep.getOffset(), Rep.getLength(), Original.size());
    clang::tooling::Replacement Adapted = adapt(Rep, Original, Crlf);
    Begin = Adapted.getOffset();
    End = Begin + Adapted.getLength();
    if (Begin < Cursor)
      return llvm::createStringError(std::errc::invalid_argument,
                                     "%s: overlapping edits at offset %u", File.str().c_str(),
                                     Rep.getOffset());
    Out.append(Original.data() + Cursor, Begin - Cursor);
    Out += Adapted.getReplacementText();
    Cursor = End;
  }
  Out.append(Original.data() + Cursor, Original.size() - Cursor);
  return Out;
}

} // namespace ampmigrate
