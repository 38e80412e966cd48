// What an exported fixes file records of the bytes its edits were computed from (one digest per
// edited file), so that a merge or an apply never splices offsets into other bytes.
#include "ampmigrate/FixApplier.h"

#include "llvm/ADT/StringExtras.h"

namespace ampmigrate {
namespace {
constexpr llvm::StringLiteral Prefix = "# amp-migrate-parsed: ";
constexpr llvm::StringLiteral Different = "different";
} // namespace

std::string fixFileDigestLines(const std::map<std::string, std::string> &Digests) {
  std::string Out;
  for (const auto &[Path, Digest] : Digests) {
    if (llvm::StringRef(Path).contains('\n'))
      continue; // not a name one line holds: the file's edits go unchecked, so a merge refuses them
    Out += Prefix;
    Out += Digest.empty() ? Different.str() : "sha256=" + llvm::toHex(Digest, /*LowerCase=*/true);
    Out += " " + Path + "\n";
  }
  return Out;
}

std::map<std::string, std::string> readFixFileDigests(llvm::StringRef Text) {
  std::map<std::string, std::string> Out;
  while (!Text.empty()) {
    auto [Line, Rest] = Text.split('\n');
    Text = Rest;
    if (!Line.consume_front(Prefix)) {
      if (Line.starts_with("#") || Line.trim().empty())
        continue;
      break; // the comments come before the document
    }
    auto [Digest, Path] = Line.split(' ');
    if (Path.empty())
      continue;
    // Anything but 64 hex digits cannot be checked: its file's edits are refused like "different".
    bool Valid = Digest.consume_front("sha256=") && Digest.size() == 64 && llvm::all_of(Digest, llvm::isHexDigit);
    Out[Path.str()] = Valid ? Digest.lower() : Different.str();
  }
  return Out;
}

} // namespace ampmigrate
