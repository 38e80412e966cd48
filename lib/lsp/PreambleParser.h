// One open document's parser for the language server: the includes at the top of the file are
// precompiled once (a clang::PrecompiledPreamble kept in memory) and each re-check parses only
// the rest of the file against them.
#pragma once

#include "ampmigrate/Driver.h"
#include <functional>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ampmigrate {
struct BuiltPreamble;

class PreambleParser {
public:
  /// `Progress(true, What)` before a long parse (a whole file, or the precompilation of its
  /// includes), `Progress(false, "")` after.
  /// `Verification`: the parser of the fix verification (DriverOptions::VerifyParser), for the
  /// rewritten text of the document: its preamble skips every function body, as the verification
  /// skips the bodies of files no fix edits.
  explicit PreambleParser(std::function<void(bool, const std::string &)> Progress, bool Verification = false);
  ~PreambleParser();

  /// A TUParser (DriverOptions::Parser) for `Text`, the editor's buffer of the document.
  /// `SkipBodies` and `Rules` decide the driver's body skipping (HeaderBodySkipper), applied to
  /// the preamble as the driver applies it to a whole parse, so that both see the same
  /// declarations. `Rules` must outlive the parser (the server keeps each configuration's).
  /// Without a preamble that fits, the parse is a whole one (as fast as the command line's) and
  /// the preamble is built afterwards by buildPreamble().
  TUParser parserFor(std::string Text, bool SkipBodies, const RuleSet &Rules);

  /// Whether the last parse found no preamble it could reuse.
  bool preambleWanted();
  /// Precompiles the includes of the last parsed text. Another thread (the server's builder) calls
  /// it. A parse whose includes it is precompiling waits for it (less than a whole parse would
  /// take next to it); other parses meanwhile are whole ones.
  void buildPreamble();

  /// How the last parse went (for the log and the benchmarks).
  bool lastReusedPreamble() const { return LastReused; }

private:
  struct Inputs {
    clang::tooling::CompileCommand Cmd;
    std::vector<std::string> Args; ///< after the driver's adjustments
    std::string File, Text;
    bool SkipBodies = true;
    const RuleSet *Rules = nullptr;
    bool Verification = false;
    /// The command and settings, and the text of the includes at the top (the preamble's bytes).
    std::vector<std::string> key(size_t PreambleSize) const;
  };
  bool parse(Inputs In, clang::tooling::FrontendActionFactory &Action, clang::DiagnosticConsumer &Diags);

  std::function<void(bool, const std::string &)> Progress;
  bool Verification;
  std::mutex ParseM; ///< one parse of the document at a time
  std::mutex BuildM; ///< one build at a time
  std::mutex M;      ///< guards the fields below
  std::condition_variable Built;
  /// The key of the preamble being built, if one is.
  std::optional<std::vector<std::string>> Building;
  /// Shared with the parse using it: a new build may replace it meanwhile.
  std::shared_ptr<const BuiltPreamble> Preamble;
  /// What the preamble was built from: another command or other settings need another.
  std::vector<std::string> PreambleKey;
  /// The inputs of a parse that found no preamble to reuse: buildPreamble() builds theirs.
  std::optional<Inputs> Wanted;
  bool LastReused = false;
};

} // namespace ampmigrate
