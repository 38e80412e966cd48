// Declarations shared by the language server's files (lib/lsp): not part of the public API.
#pragma once

#include "PreambleParser.h"

#include "ampmigrate/AmpLevel.h"
#include "ampmigrate/Driver.h"
#include "ampmigrate/Finding.h"
#include "ampmigrate/LanguageServer.h"
#include "ampmigrate/Rules.h"

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ampmigrate {
namespace lsp {

namespace json = llvm::json;
using llvm::StringRef;

// ---- Transport (LanguageServer.cpp) -------------------------------------------------------------

void writeMessage(std::FILE *Out, const json::Value &V);

// ---- URIs (Documents.cpp) ----------------------------------------------------------------------

std::optional<std::string> uriToPath(StringRef Uri);
std::string pathToUri(StringRef Path);

// ---- Positions ---------------------------------------------------------------------------------

/// Converts between byte offsets and LSP positions (line, character in UTF-16 code units, or in
/// bytes when the client negotiated utf-8).
class LineIndex {
public:
  LineIndex(StringRef Text, bool Utf8) : Text(Text), Utf8(Utf8) {
    Starts.push_back(0);
    for (size_t I = 0; I < Text.size(); ++I)
      if (Text[I] == '\n')
        Starts.push_back(I + 1);
  }

  json::Object position(unsigned Offset) const {
    Offset = std::min<size_t>(Offset, Text.size());
    size_t Line = llvm::upper_bound(Starts, Offset) - Starts.begin() - 1;
    StringRef Prefix = Text.slice(Starts[Line], Offset);
    return json::Object{{"line", static_cast<int64_t>(Line)}, {"character", units(Prefix)}};
  }

  /// Byte offset of an LSP position (clamped to its line).
  size_t offset(int64_t Line, int64_t Character) const {
    if (Line < 0)
      return 0;
    if (static_cast<size_t>(Line) >= Starts.size())
      return Text.size();
    size_t Begin = Starts[Line];
    size_t End = static_cast<size_t>(Line) + 1 < Starts.size() ? Starts[Line + 1] - 1 : Text.size();
    size_t I = Begin;
    int64_t Units = 0;
    while (I < End && Units < Character) {
      unsigned char C = static_cast<unsigned char>(Text[I]);
      size_t Len = C < 0x80 ? 1 : C < 0xE0 ? 2 : C < 0xF0 ? 3 : 4;
      Units += Utf8 ? static_cast<int64_t>(Len) : (Len == 4 ? 2 : 1);
      I = std::min(End, I + Len);
    }
    return I;
  }

  size_t lineStart(unsigned Line1) const {
    return Line1 >= 1 && Line1 <= Starts.size() ? Starts[Line1 - 1] : Text.size();
  }

private:
  int64_t units(StringRef S) const {
    if (Utf8)
      return static_cast<int64_t>(S.size());
    int64_t N = 0;
    for (unsigned char C : S) {
      if ((C & 0xC0) == 0x80)
        continue; // continuation byte
      N += C >= 0xF0 ? 2 : 1;
    }
    return N;
  }

  StringRef Text;
  bool Utf8;
  std::vector<size_t> Starts;
};

// (Diagnostics.cpp)
std::string readFileText(const std::string &Path);

// ---- The server --------------------------------------------------------------------------------

struct Document {
  std::string Uri, Path, Text;
  int64_t Version = 0;
  /// The text the last check saw and what it found (published). Until `Verified`, the findings'
  /// fixes are unverified and held apart, in `Unverified`: none is offered.
  std::string CheckedText;
  std::vector<Finding> Findings;
  /// The last check's analysis as it came (DriverOptions::Unfinished), while its fixes wait for
  /// verification (due at `VerifyDue`; `VerifyCancel` stops a running one).
  std::optional<Report> Unverified;
  bool Verified = false, VerifyRunning = false;
  std::chrono::steady_clock::time_point VerifyDue;
  std::shared_ptr<std::atomic<bool>> VerifyCancel;
  /// Bumped by every change: a check's result is published only when no change came after it.
  uint64_t Generation = 0, CheckedGeneration = 0;
  /// A check is due (at `Due`: changes are debounced), or running (`Cancel` stops it).
  bool Pending = false;
  std::chrono::steady_clock::time_point Due;
  std::shared_ptr<std::atomic<bool>> Cancel;
  std::shared_ptr<PreambleParser> Parser;
  /// The verification's parser: a preamble of the rewritten file's includes (<amp/torch.h> added).
  std::shared_ptr<PreambleParser> VerifyParser;
};

/// The server's end of the connection: every message to the client goes out here, one at a time
/// (the reader thread and the workers both write).
class ClientChannel {
public:
  explicit ClientChannel(std::FILE *Out) : Out(Out) {}

  /// A response error object.
  static json::Object error(int Code, StringRef Message) {
    return json::Object{{"code", Code}, {"message", Message.str()}};
  }
  void send(const json::Value &V) {
    std::lock_guard<std::mutex> L(M);
    writeMessage(Out, V);
  }
  void reply(json::Value Id, json::Object Error) {
    send(json::Object{{"jsonrpc", "2.0"}, {"id", std::move(Id)}, {"error", std::move(Error)}});
  }
  void result(json::Value Id, json::Value Result) {
    send(json::Object{{"jsonrpc", "2.0"}, {"id", std::move(Id)}, {"result", std::move(Result)}});
  }
  void notify(StringRef Method, json::Value Params) {
    send(json::Object{{"jsonrpc", "2.0"}, {"method", Method.str()}, {"params", std::move(Params)}});
  }
  void logMessage(int Type, const std::string &Text) {
    llvm::errs() << "amp-migrate --lsp: " << Text << "\n";
    notify("window/logMessage", json::Object{{"type", Type}, {"message", Text}});
  }
  /// A warning the user should see: window/showMessage (type 2) and the log.
  void warnUser(const std::string &Text) {
    notify("window/showMessage", json::Object{{"type", 2}, {"message", "amp-migrate: " + Text}});
    logMessage(2, Text);
  }

private:
  std::mutex M;
  std::FILE *Out;
};

/// The server: messages are read and answered on the main thread (LanguageServer.cpp, the
/// documents in Documents.cpp, diagnostics and code actions in Diagnostics.cpp and CodeActions.cpp);
/// checks, verifications and preamble builds run on threads of their own (Workers.cpp).
class Server {
public:
  explicit Server(const LanguageServerOptions &Opts)
      : Opts(Opts), Worker([this] { work(); }), Builder([this] { build(); }), Verifier([this] { verify(); }) {}
  ~Server();
  int run();

private:
  // -- Requests and notifications (LanguageServer.cpp, Documents.cpp)
  void handleRequest(StringRef Method, const json::Value &Id, const json::Value &Params);
  void handleNotification(StringRef Method, const json::Value &Params);
  void applyChange(Document &D, const json::Value &Change);

  // -- initialize (LanguageServer.cpp)
  json::Value initialize(const json::Value &Params);
  /// Takes the settings of `initializationOptions`; a value of the wrong type is ignored with a
  /// warning naming it (window/showMessage and window/logMessage).
  void readInitializationOptions(const json::Value &Options);
  // -- Checking: compile commands, settings, the driver's options (Documents.cpp)
  std::unique_ptr<clang::tooling::CompilationDatabase> database(const std::string &Path);
  /// The settings of the files under one configuration file ("" for none): level, checks and
  /// rules, the client's settings over the file's. Read once per configuration file; a broken one
  /// is reported to the user once and its files get the defaults.
  struct Settings {
    AmpLevel Level = AmpLevel::O2;
    std::string Checks = "amp-*";
    RuleSet Rules;
  };
  const Settings &settingsFor(const std::string &ConfigPath);
  DriverOptions driverOptions(const std::string &Path, const std::string &Text);

  // -- Scheduling (main thread: schedule; worker thread: work) (Documents.cpp, Workers.cpp)
  void schedule(Document &D, std::chrono::milliseconds Delay);
  Document *current(std::unique_lock<std::mutex> &L, const std::string &Uri);
  template <class Pred>
  Document *nextDue(std::unique_lock<std::mutex> &L, Pred Ready,
                    std::chrono::steady_clock::time_point Document::*Due);
  void work();
  void verify();
  void build();
  Report check(const std::string &Path, const std::string &Text, PreambleParser &Parser,
               const std::atomic<bool> *Cancel);
  void progress(bool Begin, const std::string &What); // (LanguageServer.cpp)

  // -- Diagnostics (Diagnostics.cpp)
  void publish(Document &D, const std::string &Text, Report R);
  static bool samePath(StringRef A, StringRef B);
  static json::Object range(const LineIndex &Idx, StringRef Text, unsigned Offset);
  json::Value diagnostic(const Finding &F, const Document &D, const LineIndex &Idx);
  json::Value parseFailure(const FileOutcome &O, const Document &D, const LineIndex &Idx);
  static std::string absolute(StringRef P);

  // -- Code actions (CodeActions.cpp)
  json::Value codeActions(const json::Value &Params);

  const LanguageServerOptions &Opts;
  ClientChannel Client{Opts.Out};
  bool Initialized = false, ShutDown = false, Utf8 = false, WorkDoneProgress = false;
  std::chrono::milliseconds Debounce{50};
  /// How long a document stays unchanged before its fixes are verified unasked
  /// (`initializationOptions.verifyDelayMs`): a pause in typing, longer than a keystroke's.
  std::chrono::milliseconds VerifyDelay{500};
  std::mutex SettingsM;
  /// Guards the documents, shared by the reader (main) thread and the worker.
  std::mutex StateM;
  std::condition_variable StateCV;
  bool Stopping = false;
  std::atomic<unsigned> ProgressRequests{0};
  std::string LevelName, ChecksGlob, DatabasePath;
  std::vector<std::string> ExtraArgs;
  AmpLevel Level = AmpLevel::O2;
  std::vector<std::string> RuleFiles;
  std::map<std::string, Settings> SettingsByConfig;
  std::map<std::string, Document> Docs;
  std::thread Worker, Builder, Verifier; // last: they start once everything above is constructed
};

} // namespace lsp
} // namespace ampmigrate
