// amp-migrate --lsp: a Language Server Protocol server over stdio (JSON-RPC, Content-Length
// framing). Diagnostics for each open document (re-checked with the unsaved text on every change)
// and a quick fix per fixable training step. It never writes files: the editor applies the edits.
#pragma once

#include "ampmigrate/AmpLevel.h"
#include <cstdio>
#include <string>
#include <vector>

namespace ampmigrate {

struct LanguageServerOptions {
  /// Extra rule files (--rules); `initializationOptions.rules` adds more.
  std::vector<std::string> RuleFiles;
  /// "O0".."O3"; empty: O2, or `initializationOptions.level`.
  std::string Level;
  /// Check globs (--checks); empty: every amp-* check, or `initializationOptions.checks`.
  std::string Checks;
  /// Directory holding compile_commands.json (-p); `initializationOptions.compilationDatabasePath`
  /// overrides it. Empty: found upward from each file like clangd, else `-std=c++17`.
  std::string CompilationDatabasePath;
  /// Compiler arguments appended to every compile command (the arguments after `--`);
  /// `initializationOptions.extraArgs` adds more.
  std::vector<std::string> ExtraArgs;
  /// Verify each check's fixes by an in-memory re-parse before offering them (--verify-fixes);
  /// that re-parse reads every header again, which is most of an edit's re-check time.
  bool VerifyFixes = true;
  /// The streams the protocol runs over (stdin/stdout by default). Logs go to stderr.
  std::FILE *In = stdin;
  std::FILE *Out = stdout;
};

/// Serves until `exit` (or end of input). Returns the process exit code: 0 after shutdown+exit,
/// 1 when the client exits without shutdown or the input ends.
int runLanguageServer(const LanguageServerOptions &Opts);

} // namespace ampmigrate
