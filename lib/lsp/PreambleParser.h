// One open document's parser for the language server: the includes at the top of the file are
// precompiled once (a clang::PrecompiledPreamble kept in memory) and each re-check parses only
// the rest of the file against them.
#pragma once

#include "ampmigrate/Driver.h"
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace clang {
class PrecompiledPreamble;
}

namespace ampmigrate {

class PreambleParser {
public:
  /// `Progress(true)` before a preamble is built (a long parse of every header), `Progress(false)`
  /// after.
  explicit PreambleParser(std::function<void(bool)> Progress);
  ~PreambleParser();

  /// A TUParser (DriverOptions::Parser) for `Text`, the editor's buffer of the document.
  /// `SkipBodies` and `Tokens` are the driver's body-skipping settings, applied to the preamble
  /// as the driver applies them to a whole parse, so that both see the same declarations.
  TUParser parserFor(std::string Text, bool SkipBodies, std::vector<std::string> Tokens);

  /// How the last parse went (for the log and the benchmarks).
  bool lastReusedPreamble() const { return LastReused; }

private:
  bool parse(const std::vector<clang::tooling::CompileCommand> &Cmds, const std::string &File,
             const std::string &Text, bool SkipBodies, const std::vector<std::string> &Tokens,
             clang::tooling::FrontendActionFactory &Action, clang::DiagnosticConsumer &Diags);

  std::function<void(bool)> Progress;
  std::mutex M; ///< one parse of the document at a time
  std::unique_ptr<clang::PrecompiledPreamble> Preamble;
  /// The command line and settings the preamble was built with: another one needs another.
  std::vector<std::string> PreambleArgs;
  bool LastReused = false;
};

} // namespace ampmigrate
