// The language server's transport: LSP base-protocol framing (Content-Length headers) on stdio,
// tolerant of protocol errors (they are reported, not fatal) and bounded in what it allocates.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

namespace ampmigrate {

/// No editor sends a message near this size; a larger Content-Length is skipped, not allocated.
constexpr long long MaxLspMessageBytes = 256ll << 20;

/// One message read from the transport: a body, or why the header block was not usable (the
/// server answers that with a JSON-RPC error and goes on), or neither at the end of input.
struct LspIncoming {
  std::optional<std::string> Body;
  std::string FramingError;
};

/// Reads one message; Body and FramingError both empty at the end of input.
LspIncoming readLspMessage(std::FILE *In);

} // namespace ampmigrate
