// Applies one file's edits to its text, keeping the file's line endings and its UTF-8 BOM.
#include "ampmigrate/FixApplier.h"
#include "llvm/Support/Error.h"

namespace ampmigrate {
namespace {

const llvm::StringRef Utf8Bom = "\xEF\xBB\xBF";

/// Whether the file's lines end in "\r\n": by majority, a tie going to the first line ending.
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

llvm::Expected<std::string> applyEdits(llvm::StringRef File, llvm::StringRef Original,
                                       const clang::tooling::Replacements &Reps) {
  const bool Crlf = usesCrlf(Original);
  // Clang's offsets count the BOM; an edit "at the start of the file" belongs after it.
  const unsigned Floor = Original.starts_with(Utf8Bom) ? Utf8Bom.size() : 0;

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
    Begin = std::max(Begin, Floor);
    End = std::max(End, Floor);
    if (Begin < Cursor)
      return llvm::createStringError(std::errc::invalid_argument,
                                     "%s: overlapping edits at offset %u", File.str().c_str(),
                                     Rep.getOffset());
    Out.append(Original.data() + Cursor, Begin - Cursor);
    Out += Crlf ? toCrlf(Rep.getReplacementText()) : Rep.getReplacementText().str();
    Cursor = End;
  }
  Out.append(Original.data() + Cursor, Original.size() - Cursor);
  return Out;
}

} // namespace ampmigrate
