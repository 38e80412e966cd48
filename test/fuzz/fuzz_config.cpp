// libFuzzer harness: .amp-migrate.yaml. Any input is a configuration or an error naming the file.
#include "ampmigrate/Config.h"
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  llvm::Expected<ampmigrate::ProjectConfig> C = ampmigrate::parseConfig("/p/.amp-migrate.yaml", Text);
  if (!C) {
    std::string Msg = llvm::toString(C.takeError());
    if (Msg.find(".amp-migrate.yaml") == std::string::npos)
      __builtin_trap(); // every error names the file
  }
  return 0;
}
