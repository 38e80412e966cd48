// libFuzzer mutation driver over C++ sources (seed it with test/checks/*.cpp). Each input is
// written to a file and run through `amp-migrate --fix` (the real tool: $AMP_MIGRATE, else this
// build's), against the mock libtorch headers. Invariants, each an abort when broken:
//   - the tool exits 0, 1 or 3 (no crash, no sanitizer report in a sanitized tool);
//   - a file it could not parse (exit 3, "could not be parsed") is byte-identical afterwards;
//   - a file it changed parses: a second run reports no parse failure.
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <cstdlib>
#include <optional>

namespace {

std::string Tool, Dir, Src, Err;

int runTool(bool Fix) {
  std::string Include = std::string("-I") + AMP_MOCK_TORCH;
  std::vector<llvm::StringRef> Args = {Tool};
  if (Fix)
    Args.push_back("--fix");
  for (llvm::StringRef A : {llvm::StringRef(Src), llvm::StringRef("--"), llvm::StringRef("-std=c++17"),
                            llvm::StringRef(Include)})
    Args.push_back(A);
  std::optional<llvm::StringRef> Redirects[] = {llvm::StringRef(""), llvm::StringRef(""),
                                                llvm::StringRef(Err)};
  return llvm::sys::ExecuteAndWait(Tool, Args, std::nullopt, Redirects, /*SecondsToWait=*/120);
}

std::string slurp(llvm::StringRef Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  return Buf ? (*Buf)->getBuffer().str() : std::string("\x01<unreadable>");
}

[[noreturn]] void broken(const char *What) {
  llvm::errs() << "fuzz-mutate: " << What << "\n--- input: " << Src << "\n--- stderr:\n" << slurp(Err) << "\n";
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *Env = std::getenv("AMP_MIGRATE");
  Tool = Env ? Env : AMP_DEFAULT_TOOL;
  llvm::SmallString<128> D;
  if (llvm::sys::fs::createUniqueDirectory("amp-fuzz-mutate", D))
    std::abort();
  Dir = std::string(D);
  Src = Dir + "/input.cpp";
  Err = Dir + "/stderr.txt";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  std::string Input(reinterpret_cast<const char *>(Data), Size);
  {
    std::error_code EC;
    llvm::raw_fd_ostream OS(Src, EC);
    if (EC)
      std::abort();
    OS << Input;
  }
  int RC = runTool(/*Fix=*/true);
  if (RC != 0 && RC != 1 && RC != 3)
    broken("amp-migrate --fix crashed or exited with an unexpected status");
  std::string After = slurp(Src);
  if (RC == 3 && slurp(Err).find("could not be parsed") != std::string::npos && After != Input)
    broken("a file that failed to parse was rewritten");
  if (After != Input) {
    int Again = runTool(/*Fix=*/false);
    if (Again != 0 && Again != 1)
      broken("the fixed file does not parse (or the second run failed)");
  }
  return 0;
}
