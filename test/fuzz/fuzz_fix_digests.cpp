// libFuzzer harness: the digest lines of an exported fixes file (--merge-fixes, --apply-fixes read
// them). Any input gives digests that are 64 hex digits or "different", and what is read is
// written back and read again unchanged.
#include "ampmigrate/FixApplier.h"
#include "llvm/ADT/StringExtras.h"
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  std::map<std::string, std::string> Read = ampmigrate::readFixFileDigests(Text);
  std::map<std::string, std::string> Raw;
  for (const auto &[Path, Digest] : Read) {
    if (Path.empty() || Path.find('\n') != std::string::npos)
      __builtin_trap(); // a path is the rest of one line
    if (Digest == "different") {
      Raw[Path] = "";
      continue;
    }
    if (Digest.size() != 64 || !llvm::all_of(Digest, [](char C) { return llvm::isHexDigit(C) && !llvm::isUpper(C); }))
      __builtin_trap();
    Raw[Path] = llvm::fromHex(Digest);
  }
  if (ampmigrate::readFixFileDigests(ampmigrate::fixFileDigestLines(Raw)) != Read)
    __builtin_trap(); // the merge writes back what it read
  return 0;
}
