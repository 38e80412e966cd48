// amp-migrate --lsp: JSON-RPC over stdio with Content-Length framing (LSP 3.17 base protocol).
//
// Each open document is checked by the same driver as the command line, with the editor's text as
// an overlay, on open, change and save. Checks run on a worker thread: a burst of changes is
// debounced into one check, a check a newer version makes stale is cancelled (its result never
// published), and each document keeps a precompiled preamble of its includes
// (PreambleParser.cpp), so that a re-check parses only the body of the file. Diagnostics are
// published per document as soon as the analysis ends; the fixes are verified afterwards (the
// rewritten file re-parsed in memory, a whole parse) on a third thread, when a code action asks
// for them or once the file has been idle for a while, and a step whose rewrite does not compile
// is republished as amp-manual-migration. A code action request answers, for each fixable
// training step with a diagnostic in the range, one `quickfix` whose WorkspaceEdit holds the
// step's verified edits. The server never writes a file.
#include "ampmigrate/LanguageServer.h"
#include "PreambleParser.h"

#include "ampmigrate/Config.h"
#include "ampmigrate/Driver.h"
#include "ampmigrate/Finding.h"
#include "ampmigrate/InputLimits.h"
#include "ampmigrate/LspTransport.h"
#include "ampmigrate/Rules.h"

#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace json = llvm::json;
using llvm::StringRef;

namespace ampmigrate {
namespace {

// ---- Transport ---------------------------------------------------------------------------------

void writeMessage(std::FILE *Out, const json::Value &V) {
  std::string Body;
  llvm::raw_string_ostream OS(Body);
  OS << V;
  OS.flush();
  std::fprintf(Out, "Content-Length: %zu\r\n\r\n", Body.size());
  std::fwrite(Body.data(), 1, Body.size(), Out);
  std::fflush(Out);
}

// ---- URIs --------------------------------------------------------------------------------------

std::optional<std::string> uriToPath(StringRef Uri) {
  if (!Uri.consume_front("file://"))
    return std::nullopt;
  // file://host/path: only the local host.
  if (!Uri.starts_with("/")) {
    auto [Host, Rest] = Uri.split('/');
    if (!Host.equals_insensitive("localhost"))
      return std::nullopt;
    Uri = Uri.drop_front(Host.size());
  }
  std::string Path;
  for (size_t I = 0; I < Uri.size(); ++I) {
    if (Uri[I] == '%' && I + 2 < Uri.size() && llvm::isHexDigit(Uri[I + 1]) && llvm::isHexDigit(Uri[I + 2])) {
      Path.push_back(static_cast<char>(llvm::hexFromNibbles(Uri[I + 1], Uri[I + 2])));
      I += 2;
    } else {
      Path.push_back(Uri[I]);
    }
  }
  llvm::SmallString<256> P(Path);
  llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
  return std::string(P);
}

std::string pathToUri(StringRef Path) {
  std::string Uri = "file://";
  for (unsigned char C : Path) {
    if (llvm::isAlnum(C) || StringRef("-._~/!$&'()*+,;=:@").contains(C))
      Uri.push_back(static_cast<char>(C));
    else {
      Uri.push_back('%');
      Uri.push_back(llvm::hexdigit(C >> 4, /*LowerCase=*/false));
      Uri.push_back(llvm::hexdigit(C & 15, /*LowerCase=*/false));
    }
  }
  return Uri;
}

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

bool positionLess(const json::Object &A, const json::Object &B) {
  auto Key = [](const json::Object &P) {
    return std::make_pair(P.getInteger("line").value_or(0), P.getInteger("character").value_or(0));
  };
  return Key(A) < Key(B);
}

std::string readFileText(const std::string &Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  return Buf ? (*Buf)->getBuffer().str() : std::string();
}

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

class Server {
public:
  explicit Server(const LanguageServerOptions &Opts)
      : Opts(Opts), Worker([this] { work(); }), Builder([this] { build(); }), Verifier([this] { verify(); }) {}

  ~Server() {
    {
      std::lock_guard<std::mutex> L(StateM);
      Stopping = true;
      for (auto &[Uri, D] : Docs) {
        if (D.Cancel)
          D.Cancel->store(true);
        if (D.VerifyCancel)
          D.VerifyCancel->store(true);
      }
    }
    StateCV.notify_all();
    Worker.join();
    Builder.join();
    Verifier.join();
  }

  int run() {
    for (;;) {
      LspIncoming In = readLspMessage(Opts.In);
      if (!In.Body && In.FramingError.empty())
        break; // end of input
      // A protocol error is answered, not fatal: the editor's next message may be fine.
      if (!In.Body) {
        llvm::errs() << "amp-migrate --lsp: " << In.FramingError << "\n";
        reply(nullptr, error(-32700, "parse error: " + In.FramingError));
        continue;
      }
      const std::string *Body = &*In.Body;
      // json::parse recurses per nesting level: bound the depth before it runs.
      if (jsonDepth(*Body) > MaxNestingDepth) {
        reply(nullptr, error(-32700, "parse error: JSON nested deeper than " +
                                         std::to_string(MaxNestingDepth) + " levels"));
        continue;
      }
      llvm::Expected<json::Value> V = json::parse(*Body);
      if (!V) {
        llvm::errs() << "amp-migrate --lsp: invalid JSON: " << llvm::toString(V.takeError()) << "\n";
        reply(nullptr, error(-32700, "parse error: invalid JSON"));
        continue;
      }
      const json::Object *Msg = V->getAsObject();
      if (!Msg) {
        reply(nullptr, error(-32600, "invalid request"));
        continue;
      }
      std::optional<StringRef> Method = Msg->getString("method");
      const json::Value *Id = Msg->get("id");
      if (!Method)
        continue; // a response to a request of ours (none are sent)
      json::Value Params = Msg->get("params") ? *Msg->get("params") : json::Value(json::Object());
      if (*Method == "exit")
        return ShutDown ? 0 : 1;
      if (Id)
        handleRequest(*Method, *Id, Params);
      else
        handleNotification(*Method, Params);
    }
    return 1;
  }

private:
  // -- Protocol plumbing
  static json::Object error(int Code, StringRef Message) {
    return json::Object{{"code", Code}, {"message", Message.str()}};
  }
  /// Both threads write: one message at a time.
  void send(const json::Value &V) {
    std::lock_guard<std::mutex> L(OutM);
    writeMessage(Opts.Out, V);
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

  void handleRequest(StringRef Method, const json::Value &Id, const json::Value &Params) {
    if (Method == "initialize")
      return result(Id, initialize(Params));
    if (!Initialized)
      return reply(Id, error(-32002, "server not initialized"));
    if (Method == "shutdown") {
      ShutDown = true;
      return result(Id, nullptr);
    }
    if (Method == "textDocument/codeAction")
      return result(Id, codeActions(Params));
    reply(Id, error(-32601, ("method not found: " + Method).str()));
  }

  void handleNotification(StringRef Method, const json::Value &Params) {
    if (!Initialized || ShutDown)
      return;
    const json::Object *P = Params.getAsObject();
    if (!P)
      return;
    const json::Object *TD = P->getObject("textDocument");
    std::optional<StringRef> Uri = TD ? TD->getString("uri") : std::nullopt;
    if (!Uri)
      return;
    std::unique_lock<std::mutex> L(StateM);
    if (Method == "textDocument/didOpen") {
      std::optional<std::string> Path = uriToPath(*Uri);
      if (!Path) {
        L.unlock();
        logMessage(2, "not a local file URI, not checked: " + Uri->str());
        return;
      }
      Document &D = Docs[Uri->str()];
      D.Uri = Uri->str();
      D.Path = *Path;
      D.Text = TD->getString("text").value_or("").str();
      D.Version = TD->getInteger("version").value_or(0);
      auto Progress = [this](bool Begin, const std::string &What) { progress(Begin, What); };
      D.Parser = std::make_shared<PreambleParser>(Progress);
      D.VerifyParser = std::make_shared<PreambleParser>(Progress, /*Verification=*/true);
      schedule(D, std::chrono::milliseconds(0));
    } else if (Method == "textDocument/didChange") {
      auto It = Docs.find(Uri->str());
      if (It == Docs.end())
        return;
      Document &D = It->second;
      D.Version = TD->getInteger("version").value_or(D.Version);
      if (const json::Array *Changes = P->getArray("contentChanges"))
        for (const json::Value &C : *Changes)
          applyChange(D, C);
      schedule(D, Debounce);
    } else if (Method == "textDocument/didSave") {
      auto It = Docs.find(Uri->str());
      if (It == Docs.end())
        return;
      if (std::optional<StringRef> Text = P->getString("text"))
        It->second.Text = Text->str();
      schedule(It->second, std::chrono::milliseconds(0)); // headers it includes may have changed on disk
    } else if (Method == "textDocument/didClose") {
      auto It = Docs.find(Uri->str());
      if (It == Docs.end())
        return;
      if (It->second.Cancel)
        It->second.Cancel->store(true);
      if (It->second.VerifyCancel)
        It->second.VerifyCancel->store(true);
      // Under the state lock: a check of this document finishing now cannot publish after this.
      notify("textDocument/publishDiagnostics",
             json::Object{{"uri", It->first}, {"diagnostics", json::Array()}});
      Docs.erase(It);
    }
    // initialized, $/cancelRequest, workspace/didChangeConfiguration...: nothing to do.
  }

  void applyChange(Document &D, const json::Value &Change) {
    const json::Object *C = Change.getAsObject();
    if (!C)
      return;
    std::string NewText = C->getString("text").value_or("").str();
    const json::Object *Range = C->getObject("range");
    if (!Range) {
      D.Text = std::move(NewText);
      return;
    }
    // An incremental change (we ask for full sync, but accept these too).
    const json::Object *S = Range->getObject("start"), *E = Range->getObject("end");
    if (!S || !E)
      return;
    LineIndex Idx(D.Text, Utf8);
    size_t B = Idx.offset(S->getInteger("line").value_or(0), S->getInteger("character").value_or(0));
    size_t En = Idx.offset(E->getInteger("line").value_or(0), E->getInteger("character").value_or(0));
    if (En < B)
      std::swap(B, En);
    D.Text.replace(B, En - B, NewText);
  }

  // -- initialize
  json::Value initialize(const json::Value &Params) {
    const json::Object *P = Params.getAsObject();
    LevelName = Opts.Level;
    ChecksGlob = Opts.Checks;
    DatabasePath = Opts.CompilationDatabasePath;
    ExtraArgs = Opts.ExtraArgs;
    RuleFiles = Opts.RuleFiles;
    if (P) {
      if (const json::Object *Caps = P->getObject("capabilities"))
        if (const json::Object *Window = Caps->getObject("window"))
          WorkDoneProgress = Window->getBoolean("workDoneProgress").value_or(false);
      if (const json::Object *IO = P->getObject("initializationOptions")) {
        if (auto S = IO->getString("compilationDatabasePath"))
          DatabasePath = S->str();
        if (const json::Array *A = IO->getArray("extraArgs"))
          for (const json::Value &V : *A)
            if (auto S = V.getAsString())
              ExtraArgs.push_back(S->str());
        if (auto S = IO->getString("level"))
          LevelName = S->str();
        if (auto S = IO->getString("checks"))
          ChecksGlob = S->str();
        if (const json::Array *A = IO->getArray("rules"))
          for (const json::Value &V : *A)
            if (auto S = V.getAsString())
              RuleFiles.push_back(S->str());
        if (auto Ms = IO->getInteger("debounceMs"); Ms && *Ms >= 0)
          Debounce = std::chrono::milliseconds(*Ms);
        if (auto Ms = IO->getInteger("verifyDelayMs"); Ms && *Ms >= 0)
          VerifyDelay = std::chrono::milliseconds(*Ms);
      }
      // Position encoding: utf-8 when the client offers it, else the default utf-16.
      if (const json::Object *Caps = P->getObject("capabilities"))
        if (const json::Object *General = Caps->getObject("general"))
          if (const json::Array *Encodings = General->getArray("positionEncodings"))
            for (const json::Value &E : *Encodings)
              if (E.getAsString() && *E.getAsString() == "utf-8")
                Utf8 = true;
    }
    // Settings the client (or the command line) gives win over each file's .amp-migrate.yaml.
    if (!LevelName.empty() && !parseLevel(LevelName, Level)) {
      logMessage(1, "unknown level '" + LevelName + "' (valid: O0, O1, O2, O3); using O2");
      LevelName = "O2";
      Level = AmpLevel::O2;
    }
    settingsFor(""); // the rules without a configuration file: report a bad rule file now
    Initialized = true;
    json::Object Caps{
        {"textDocumentSync", json::Object{{"openClose", true}, {"change", 1}, {"save", json::Object{{"includeText", false}}}}},
        {"codeActionProvider", json::Object{{"codeActionKinds", json::Array{"quickfix"}}}},
    };
    if (Utf8)
      Caps["positionEncoding"] = "utf-8";
    return json::Object{{"capabilities", std::move(Caps)},
                        {"serverInfo", json::Object{{"name", "amp-migrate"}, {"version", AMP_MIGRATE_VERSION}}}};
  }

  // -- Checking
  /// Compile commands for a file: the configured database directory, else compile_commands.json
  /// found upward from the file (commands for files it lacks are inferred from neighbours, like
  /// clangd), else `-std=c++17`. The extra arguments are appended to each command.
  std::unique_ptr<clang::tooling::CompilationDatabase> database(const std::string &Path) {
    std::string Err;
    std::unique_ptr<clang::tooling::CompilationDatabase> DB;
    if (!DatabasePath.empty()) {
      DB = clang::tooling::CompilationDatabase::autoDetectFromDirectory(DatabasePath, Err);
      if (!DB)
        logMessage(2, "no compile_commands.json in " + DatabasePath + ": " + Err);
    } else {
      DB = clang::tooling::CompilationDatabase::autoDetectFromSource(Path, Err);
    }
    if (DB) {
      DB = clang::tooling::inferMissingCompileCommands(std::move(DB));
      if (DB->getCompileCommands(Path).empty())
        DB.reset();
    }
    if (!DB) {
      std::vector<std::string> Args{"-std=c++17"};
      Args.insert(Args.end(), ExtraArgs.begin(), ExtraArgs.end());
      return std::make_unique<clang::tooling::FixedCompilationDatabase>(
          llvm::sys::path::parent_path(Path), Args);
    }
    auto Adjusting = std::make_unique<clang::tooling::ArgumentsAdjustingCompilations>(std::move(DB));
    if (!ExtraArgs.empty())
      Adjusting->appendArgumentsAdjuster(clang::tooling::getInsertArgumentAdjuster(
          ExtraArgs, clang::tooling::ArgumentInsertPosition::END));
    return Adjusting;
  }

  /// The settings of the files under one configuration file ("" for none): level, checks and
  /// rules, the client's settings over the file's. Read once per configuration file; a broken one
  /// is reported to the user once and its files get the defaults.
  struct Settings {
    AmpLevel Level = AmpLevel::O2;
    std::string Checks = "amp-*";
    RuleSet Rules;
  };
  const Settings &settingsFor(const std::string &ConfigPath) {
    std::lock_guard<std::mutex> L(SettingsM);
    auto It = SettingsByConfig.find(ConfigPath);
    if (It != SettingsByConfig.end())
      return It->second;
    Settings St;
    ProjectConfig Cfg;
    if (!ConfigPath.empty()) {
      auto Read = readConfig(ConfigPath);
      if (Read) {
        Cfg = std::move(*Read);
      } else {
        std::string Msg = llvm::toString(Read.takeError());
        notify("window/showMessage", json::Object{{"type", 1}, {"message", "amp-migrate: " + Msg}});
        logMessage(1, Msg);
      }
    }
    if (!LevelName.empty())
      St.Level = Level;
    else if (!Cfg.Level.empty())
      parseLevel(Cfg.Level, St.Level);
    St.Checks = !ChecksGlob.empty() ? ChecksGlob : (!Cfg.Checks.empty() ? Cfg.Checks : "amp-*");
    std::vector<std::string> AllRules = Cfg.Rules;
    AllRules.insert(AllRules.end(), RuleFiles.begin(), RuleFiles.end());
    llvm::Expected<RuleSet> R = loadRules(AllRules);
    if (!R) {
      std::string Msg = llvm::toString(R.takeError());
      notify("window/showMessage", json::Object{{"type", 1}, {"message", "amp-migrate: " + Msg}});
      logMessage(1, Msg);
      llvm::Expected<RuleSet> Builtin = loadRules({});
      if (Builtin)
        St.Rules = std::move(*Builtin);
      else
        llvm::consumeError(Builtin.takeError());
    } else {
      St.Rules = std::move(*R);
    }
    return SettingsByConfig.emplace(ConfigPath, std::move(St)).first->second;
  }

  // -- Scheduling (main thread: schedule; worker thread: work)

  /// A check of `D` is due after `Delay`; a running one is stale. Called with StateM held.
  void schedule(Document &D, std::chrono::milliseconds Delay) {
    ++D.Generation;
    if (D.Cancel)
      D.Cancel->store(true);
    if (D.VerifyCancel)
      D.VerifyCancel->store(true); // verifies fixes for text that is no longer the document's
    D.Pending = true;
    D.Due = std::chrono::steady_clock::now() + Delay;
    StateCV.notify_all();
  }

  /// The worker: runs the due checks one at a time, and publishes each unless a change came
  /// while it ran.
  /// Waits (with `L` held on StateM) until a document that `Ready` selects is due at its `Due`
  /// time, the earliest first, and returns it; null once the server is stopping.
  template <class Pred>
  Document *nextDue(std::unique_lock<std::mutex> &L, Pred Ready,
                    std::chrono::steady_clock::time_point Document::*Due) {
    for (;;) {
      if (Stopping)
        return nullptr;
      Document *Next = nullptr;
      for (auto &[Uri, D] : Docs)
        if (Ready(D) && (!Next || D.*Due < Next->*Due))
          Next = &D;
      if (!Next) {
        StateCV.wait(L);
        continue;
      }
      // A copy: wait_until takes the time by reference and reads it again after waking, when
      // the document may have been closed meanwhile (found by the ASan build of CI).
      const std::chrono::steady_clock::time_point When = Next->*Due;
      if (When > std::chrono::steady_clock::now())
        StateCV.wait_until(L, When);
      else
        return Next;
    }
  }

  void work() {
    std::unique_lock<std::mutex> L(StateM);
    for (;;) {
      Document *Next = nextDue(L, [](const Document &D) { return D.Pending; }, &Document::Due);
      if (!Next)
        return;
      Document &D = *Next;
      D.Pending = false;
      D.Cancel = std::make_shared<std::atomic<bool>>(false);
      std::string Uri = D.Uri, Path = D.Path, Text = D.Text;
      uint64_t Generation = D.Generation;
      std::shared_ptr<std::atomic<bool>> Cancel = D.Cancel;
      std::shared_ptr<PreambleParser> Parser = D.Parser;
      L.unlock();
      Report R = check(Path, Text, *Parser, Cancel.get());
      // With fixes to verify, the diagnostics go out now and the fixes wait (verify()).
      std::optional<Report> Unverified;
      if (Opts.VerifyFixes && !R.StepFixes.empty())
        Unverified = R;
      finishReport(R, driverOptions(Path, Text));
      L.lock();
      auto It = Docs.find(Uri);
      if (It == Docs.end() || It->second.Generation != Generation || Cancel->load())
        continue; // closed or changed meanwhile: a newer check is due
      Document &Doc = It->second;
      Doc.Cancel.reset();
      Doc.Verified = !Unverified;
      Doc.Unverified = std::move(Unverified);
      Doc.VerifyDue = std::chrono::steady_clock::now() + VerifyDelay;
      publish(Doc, Text, std::move(R));
      StateCV.notify_all();
    }
  }

  /// The verifier: verifies the fixes of a document's last check once the document has been
  /// idle for VerifyDelay (or at once when a code action waits for them), one at a time, and
  /// republishes the diagnostics when a step's fix is withdrawn. A newer version of the document
  /// cancels a running verification (its result is never used).
  void verify() {
    std::unique_lock<std::mutex> L(StateM);
    for (;;) {
      Document *Next = nextDue(
          L,
          [](const Document &D) {
            return D.Unverified && !D.VerifyRunning && !D.Pending &&
                   D.CheckedGeneration == D.Generation;
          },
          &Document::VerifyDue);
      if (!Next)
        return;
      Document &D = *Next;
      D.VerifyRunning = true;
      D.VerifyCancel = std::make_shared<std::atomic<bool>>(false);
      std::string Uri = D.Uri, Path = D.Path, Text = D.CheckedText;
      uint64_t Generation = D.Generation;
      std::shared_ptr<std::atomic<bool>> Cancel = D.VerifyCancel;
      Report R = *D.Unverified;
      size_t Offered = R.StepFixes.size();
      std::shared_ptr<PreambleParser> Parser = D.VerifyParser;
      L.unlock();
      auto Start = std::chrono::steady_clock::now();
      DriverOptions DO = driverOptions(Path, Text);
      DO.Cancelled = Cancel.get();
      const RuleSet &Rules = settingsFor(findConfigUpward(Path)).Rules;
      DO.VerifyParser = [Parser, &Rules](const std::string &Rewritten) {
        return Parser->parserFor(Rewritten, /*SkipBodies=*/true, Rules);
      };
      verifyReportFixes(R, DO, *database(Path));
      finishReport(R, DO);
      auto Ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - Start);
      llvm::errs() << "amp-migrate --lsp: verified the fixes of " << Path << ": " << R.StepFixes.size() << " of "
                   << Offered << " kept in " << Ms.count() << " ms" << (Cancel->load() ? " (cancelled)" : "")
                   << (Parser->lastReusedPreamble() ? " (preamble reused)" : "")
                   << "\n";
      L.lock();
      auto It = Docs.find(Uri);
      if (It == Docs.end())
        continue;
      Document &Doc = It->second;
      if (Doc.VerifyCancel == Cancel) {
        Doc.VerifyRunning = false;
        Doc.VerifyCancel.reset();
      }
      StateCV.notify_all();
      if (Doc.Generation != Generation || Cancel->load() || Doc.CheckedGeneration != Generation)
        continue; // changed meanwhile: its next check brings new fixes to verify
      Doc.Unverified.reset();
      Doc.Verified = true;
      if (R.StepFixes.size() != Offered) {
        publish(Doc, Text, std::move(R)); // a step withdrawn: amp-manual-migration, not fixable
      } else {
        Doc.Findings.clear();
        for (Finding &F : R.Findings)
          if (samePath(F.Pos.File, Doc.Path))
            Doc.Findings.push_back(std::move(F));
      }
    }
  }

  /// The builder: precompiles the includes a whole parse has just read, for the edits that follow.
  /// On its own thread, so that a check never waits for it (checks meanwhile parse whole files).
  void build() {
    std::unique_lock<std::mutex> L(StateM);
    for (;;) {
      if (Stopping)
        return;
      std::shared_ptr<PreambleParser> Wanted;
      for (auto &[Uri, D] : Docs)
        for (const std::shared_ptr<PreambleParser> &P : {D.Parser, D.VerifyParser})
          if (!Wanted && P->preambleWanted())
            Wanted = P;
      if (!Wanted) {
        StateCV.wait(L);
        continue;
      }
      L.unlock();
      Wanted->buildPreamble();
      L.lock();
    }
  }

  /// Waits until the findings of `Uri` are those of its current text (StateM held); nullptr when
  /// the document is not open.
  Document *current(std::unique_lock<std::mutex> &L, const std::string &Uri) {
    for (;;) {
      auto It = Docs.find(Uri);
      if (It == Docs.end())
        return nullptr;
      Document &D = It->second;
      if (!D.Pending && D.CheckedGeneration == D.Generation)
        return &D;
      if (D.Pending && D.Due > std::chrono::steady_clock::now()) {
        D.Due = std::chrono::steady_clock::now(); // the user is waiting: no debounce
        StateCV.notify_all();
      }
      StateCV.wait(L);
    }
  }

  /// $/progress around the long parses: a whole file, the precompilation of its includes, the
  /// verification of its fixes. Each thread (checks, builds, verifications) has one at a time, so
  /// an end belongs to the last begin of the same thread: ranges on several threads overlap.
  void progress(bool Begin, const std::string &What) {
    if (!WorkDoneProgress)
      return;
    thread_local unsigned Current = 0;
    if (Begin)
      Current = ++ProgressRequests;
    std::string Token = "amp-migrate/parse/" + std::to_string(Current);
    if (Begin) {
      send(json::Object{{"jsonrpc", "2.0"},
                        {"id", "amp-migrate/progress/" + std::to_string(Current)},
                        {"method", "window/workDoneProgress/create"},
                        {"params", json::Object{{"token", Token}}}});
      notify("$/progress", json::Object{{"token", Token},
                                        {"value", json::Object{{"kind", "begin"},
                                                               {"title", "amp-migrate"},
                                                               {"message", What},
                                                               {"cancellable", false}}}});
    } else {
      notify("$/progress", json::Object{{"token", Token}, {"value", json::Object{{"kind", "end"}}}});
    }
  }

  // -- Checking

  /// The driver's options for one version of a document.
  DriverOptions driverOptions(const std::string &Path, const std::string &Text) {
    const Settings &St = settingsFor(findConfigUpward(Path));
    DriverOptions DO;
    DO.Files = {Path};
    DO.Overlays[Path] = Text;
    DO.Engine.Planner.Level = St.Level;
    std::string Glob = St.Checks;
    DO.Engine.CheckEnabled = [Glob](StringRef Id) { return checkEnabledByGlobs(Glob, Id); };
    DO.VerifyFixes = Opts.VerifyFixes;
    return DO;
  }

  /// Runs the driver over one version of a document (worker thread, no lock held): the analysis
  /// as it came (DriverOptions::Unfinished), its fixes not verified.
  Report check(const std::string &Path, const std::string &Text, PreambleParser &Parser,
               const std::atomic<bool> *Cancel) {
    auto Start = std::chrono::steady_clock::now();
    const Settings &St = settingsFor(findConfigUpward(Path));
    DriverOptions DO = driverOptions(Path, Text);
    DO.Parser = Parser.parserFor(Text, DO.SkipBodies, St.Rules);
    DO.Cancelled = Cancel;
    DO.Unfinished = true;
    auto DB = database(Path);
    Report R = runDriver(DO, St.Rules, *DB);
    auto Ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - Start);
    llvm::errs() << "amp-migrate --lsp: checked " << Path << ": " << R.Findings.size() << " findings in "
                 << Ms.count() << " ms" << (Parser.lastReusedPreamble() ? " (preamble reused)" : "") << "\n";
    return R;
  }

  /// Keeps a check's findings for code actions and publishes them (StateM held). The fixes of
  /// findings not verified yet are not kept (D.Unverified holds them for verification).
  void publish(Document &D, const std::string &Text, Report R) {
    D.CheckedGeneration = D.Generation;
    D.CheckedText = Text;
    D.Findings.clear();
    json::Array Diags;
    LineIndex Idx(D.CheckedText, Utf8);
    for (Finding &F : R.Findings)
      if (samePath(F.Pos.File, D.Path)) {
        Diags.push_back(diagnostic(F, D, Idx));
        if (!D.Verified)
          F.Fixes.clear();
        D.Findings.push_back(std::move(F));
      }
    for (const FileOutcome &O : R.Files)
      if (O.Status == FileOutcome::State::Failed)
        Diags.push_back(parseFailure(O, D, Idx));
    notify("textDocument/publishDiagnostics",
           json::Object{{"uri", D.Uri}, {"version", D.Version}, {"diagnostics", std::move(Diags)}});
  }

  static bool samePath(StringRef A, StringRef B) {
    if (A == B)
      return true;
    llvm::SmallString<256> PA(A), PB(B);
    llvm::sys::fs::make_absolute(PA);
    llvm::sys::fs::make_absolute(PB);
    llvm::sys::path::remove_dots(PA, true);
    llvm::sys::path::remove_dots(PB, true);
    return PA == PB;
  }

  /// The range of a finding: from its position to the end of the name there (`a::b::c`, `x.y`).
  static json::Object range(const LineIndex &Idx, StringRef Text, unsigned Offset) {
    size_t End = std::min<size_t>(Offset, Text.size());
    auto IsName = [](char C) { return llvm::isAlnum(C) || C == '_'; };
    while (End < Text.size()) {
      if (IsName(Text[End]))
        ++End;
      else if (Text.substr(End).starts_with("::") && End + 2 < Text.size() && IsName(Text[End + 2]))
        End += 2;
      else
        break;
    }
    if (End == Offset && End < Text.size() && Text[End] != '\n')
      ++End;
    return json::Object{{"start", Idx.position(Offset)}, {"end", Idx.position(static_cast<unsigned>(End))}};
  }

  json::Value diagnostic(const Finding &F, const Document &D, const LineIndex &Idx) {
    // Pos.Offset is into the checked text; the line and column say the same, in bytes.
    unsigned Offset = F.Pos.Offset;
    if (Offset > D.CheckedText.size())
      Offset = static_cast<unsigned>(std::min(D.CheckedText.size(), Idx.lineStart(F.Pos.Line) + F.Pos.Column - 1));
    json::Object Diag{{"range", range(Idx, D.CheckedText, Offset)},
                      {"severity", F.Level == Severity::Error ? 1 : 2},
                      {"code", F.Check},
                      {"source", "amp-migrate"},
                      {"message", F.Message}};
    json::Array Related;
    for (const Note &N : F.Notes) {
      if (N.Pos.File.empty())
        continue;
      json::Object Loc;
      if (samePath(N.Pos.File, D.Path)) {
        Loc = json::Object{{"uri", D.Uri}, {"range", range(Idx, D.CheckedText, N.Pos.Offset)}};
      } else {
        std::string Text = readFileText(N.Pos.File);
        LineIndex NI(Text, Utf8);
        Loc = json::Object{{"uri", pathToUri(absolute(N.Pos.File))}, {"range", range(NI, Text, N.Pos.Offset)}};
      }
      Related.push_back(json::Object{{"location", std::move(Loc)}, {"message", N.Message}});
    }
    if (!Related.empty())
      Diag["relatedInformation"] = std::move(Related);
    if (!F.StepId.empty())
      Diag["data"] = json::Object{{"stepId", F.StepId}, {"fixable", F.Fixable}};
    return Diag;
  }

  /// A file that does not parse is not analysed: say so once, at the first error.
  json::Value parseFailure(const FileOutcome &O, const Document &D, const LineIndex &Idx) {
    StringRef First = StringRef(O.Error).split('\n').first;
    unsigned Line = 1, Col = 1;
    // "file:line:col: error: message"
    size_t E = First.find(": error: ");
    if (E != StringRef::npos) {
      StringRef Loc = First.take_front(E);
      auto [Rest, ColS] = Loc.rsplit(':');
      auto [FileS, LineS] = Rest.rsplit(':');
      unsigned L, C;
      if (!LineS.getAsInteger(10, L) && !ColS.getAsInteger(10, C) && samePath(FileS, D.Path)) {
        Line = L;
        Col = C;
      }
      First = First.drop_front(E + 2);
    }
    size_t Offset = std::min(D.CheckedText.size(), Idx.lineStart(Line) + Col - 1);
    return json::Object{{"range", json::Object{{"start", Idx.position(static_cast<unsigned>(Offset))},
                                               {"end", Idx.position(static_cast<unsigned>(Offset))}}},
                        {"severity", 3},
                        {"source", "amp-migrate"},
                        {"message", ("not analysed, the file does not parse: " + First).str()}};
  }

  static std::string absolute(StringRef P) {
    llvm::SmallString<256> S(P);
    llvm::sys::fs::make_absolute(S);
    llvm::sys::path::remove_dots(S, true);
    return std::string(S);
  }

  // -- Code actions
  json::Value codeActions(const json::Value &Params) {
    json::Array Actions;
    const json::Object *P = Params.getAsObject();
    const json::Object *TD = P ? P->getObject("textDocument") : nullptr;
    std::optional<StringRef> Uri = TD ? TD->getString("uri") : std::nullopt;
    const json::Object *Range = P ? P->getObject("range") : nullptr;
    if (!Uri || !Range)
      return Actions;
    // Never offer edits computed for other text, nor unverified ones: wait for the check of the
    // current text and the verification of its fixes (hurried: the user is waiting).
    std::unique_lock<std::mutex> L(StateM);
    Document *Current = nullptr;
    for (;;) {
      Current = current(L, Uri->str());
      if (!Current || Current->Verified)
        break;
      if (!Current->VerifyRunning && Current->VerifyDue > std::chrono::steady_clock::now()) {
        Current->VerifyDue = std::chrono::steady_clock::now();
        StateCV.notify_all();
      }
      StateCV.wait(L);
    }
    if (!Current)
      return Actions;
    Document &D = *Current;
    const json::Object *RS = Range->getObject("start"), *RE = Range->getObject("end");
    if (!RS || !RE)
      return Actions;
    LineIndex Idx(D.CheckedText, Utf8);
    std::map<std::string, json::Array> DiagsByStep; // step -> its diagnostics in the range
    std::vector<std::string> StepOrder;
    for (const Finding &F : D.Findings) {
      if (!F.Fixable || F.StepId.empty())
        continue;
      json::Value Diag = diagnostic(F, D, Idx);
      const json::Object *DR = Diag.getAsObject()->getObject("range");
      // Intersects [RS, RE] (an empty request range at the cursor touches the diagnostic).
      if (positionLess(*RE, *DR->getObject("start")) || positionLess(*DR->getObject("end"), *RS))
        continue;
      if (!DiagsByStep.count(F.StepId))
        StepOrder.push_back(F.StepId);
      DiagsByStep[F.StepId].push_back(std::move(Diag));
    }
    for (const std::string &Step : StepOrder) {
      const Finding *Lead = nullptr;
      for (const Finding &F : D.Findings)
        if (F.StepId == Step && !F.Fixes.empty())
          Lead = &F;
      if (!Lead)
        continue;
      json::Object Changes;
      std::map<std::string, std::vector<const clang::tooling::Replacement *>> ByFile;
      for (const clang::tooling::Replacement &Rep : Lead->Fixes)
        ByFile[Rep.getFilePath().str()].push_back(&Rep);
      bool Ok = true;
      for (auto &[File, Reps] : ByFile) {
        bool Main = samePath(File, D.Path);
        std::string Text = Main ? D.CheckedText : readFileText(File);
        LineIndex FI(Text, Utf8);
        json::Array Edits;
        for (const clang::tooling::Replacement *Rep : Reps) {
          if (Rep->getOffset() + Rep->getLength() > Text.size()) {
            Ok = false;
            break;
          }
          Edits.push_back(json::Object{
              {"range", json::Object{{"start", FI.position(Rep->getOffset())},
                                     {"end", FI.position(Rep->getOffset() + Rep->getLength())}}},
              {"newText", Rep->getReplacementText().str()}});
        }
        Changes[Main ? D.Uri : pathToUri(absolute(File))] = std::move(Edits);
      }
      if (!Ok)
        continue;
      Actions.push_back(json::Object{{"title", "Migrate this training step to amp::value_and_grad"},
                                     {"kind", "quickfix"},
                                     {"isPreferred", true},
                                     {"diagnostics", std::move(DiagsByStep[Step])},
                                     {"edit", json::Object{{"changes", std::move(Changes)}}}});
    }
    return Actions;
  }

  const LanguageServerOptions &Opts;
  bool Initialized = false, ShutDown = false, Utf8 = false, WorkDoneProgress = false;
  std::chrono::milliseconds Debounce{50};
  /// How long a document stays unchanged before its fixes are verified unasked
  /// (`initializationOptions.verifyDelayMs`): a pause in typing, longer than a keystroke's.
  std::chrono::milliseconds VerifyDelay{500};
  std::mutex OutM, SettingsM;
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

} // namespace

int runLanguageServer(const LanguageServerOptions &Opts) {
  Server S(Opts);
  return S.run();
}

} // namespace ampmigrate
