// libFuzzer harness: rule files. Any input is a rule set or an error naming the file; never a
// crash, a hang in a recursive parser, or a sanitizer report. A rule set that loads merges and
// yields prefilter tokens.
#include "ampmigrate/Rules.h"
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  llvm::Expected<ampmigrate::RuleSet> R = ampmigrate::parseRules("fuzz.yaml", Text);
  if (!R) {
    std::string Msg = llvm::toString(R.takeError());
    if (Msg.find("fuzz.yaml") == std::string::npos)
      __builtin_trap(); // every error names the file
    return 0;
  }
  ampmigrate::RuleSet All;
  All.merge(*R);
  All.merge(*R);
  (void)All.prefilterTokens();
  return 0;
}
