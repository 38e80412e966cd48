// libFuzzer harness: the language server's transport. Any byte stream is split into messages and
// framing errors until its end (no hang, no read past it, no unbounded allocation), and each body
// the depth check lets through is parsed by llvm::json without exhausting the stack.
#include "ampmigrate/InputLimits.h"
#include "ampmigrate/LspTransport.h"
#include "llvm/Support/JSON.h"
#include <cstddef>
#include <cstdint>
#include <cstdio>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size == 0)
    return 0;
  std::FILE *In = fmemopen(const_cast<uint8_t *>(Data), Size, "rb");
  if (!In)
    return 0;
  size_t Read = 0;
  for (unsigned Messages = 0;; ++Messages) {
    ampmigrate::LspIncoming M = ampmigrate::readLspMessage(In);
    if (!M.Body && M.FramingError.empty())
      break;
    if (Messages > Size)
      __builtin_trap(); // every message consumes input: more messages than bytes is a loop
    if (!M.Body)
      continue;
    Read += M.Body->size();
    if (Read > Size)
      __builtin_trap(); // bodies come from the input
    if (ampmigrate::jsonDepth(*M.Body) <= ampmigrate::MaxNestingDepth) {
      llvm::Expected<llvm::json::Value> V = llvm::json::parse(*M.Body);
      if (!V)
        llvm::consumeError(V.takeError());
    }
  }
  std::fclose(In);
  return 0;
}
