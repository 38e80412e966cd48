// Bounds on what the tool reads from its users (rule files, configuration, LSP messages): regular
// files of bounded size and bounded nesting, checked before any recursive parser sees the text.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include <cstdint>
#include <memory>
#include <string>

namespace ampmigrate {

/// Rule and configuration files are a few kilobytes; anything near this is not one.
constexpr uint64_t MaxSettingsFileBytes = 8u << 20;
/// Deeper than any real rule file, configuration or LSP message, and far below the depth at which
/// LLVM's recursive YAML and JSON parsers exhaust the stack.
constexpr unsigned MaxNestingDepth = 256;

/// Reads `Path` if it is a regular file of at most `MaxBytes` bytes. Devices, FIFOs, directories
/// and larger files are refused without reading them ("<path>: error: cannot read <What>: ...").
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readBoundedRegularFile(llvm::StringRef Path, llvm::StringRef What,
                       uint64_t MaxBytes = MaxSettingsFileBytes);

/// An upper bound of the nesting depth of a YAML text: indentation, compact "- "/"? " entries and
/// flow brackets outside quotes and comments. Counts generously: it may exceed the real depth.
unsigned estimateYamlDepth(llvm::StringRef Text);

/// The bracket nesting depth of a JSON text ([ and { outside strings).
unsigned jsonDepth(llvm::StringRef Text);

/// Collects the first YAML diagnostic as "<file>:<line>:<col>: error: <message>", or as
/// "<Path>: error: <message>" when the parser gives no position (some errors have none).
struct FirstYamlError {
  llvm::StringRef Path;
  std::string Message;
  /// A yaml::Input diagnostic handler; its context is a FirstYamlError.
  static void handle(const llvm::SMDiagnostic &D, void *Self);
};

/// Whether a YAML text holds a second document ("---"), which yaml::Input would ignore silently.
/// Run it only on text that passed checkYamlDepth (the YAML parser recurses).
bool hasSeveralYamlDocuments(llvm::StringRef Text);

/// "" when the YAML text is shallow enough, else "<Path>:<line>: error: ..." naming the limit.
std::string checkYamlDepth(llvm::StringRef Path, llvm::StringRef Text,
                           unsigned Limit = MaxNestingDepth);

} // namespace ampmigrate
