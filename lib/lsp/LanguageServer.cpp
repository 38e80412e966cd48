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
#include "LanguageServerInternal.h"

#include "ampmigrate/InputLimits.h"
#include "ampmigrate/LspTransport.h"

#include "llvm/Support/raw_ostream.h"
#include <cstdio>

namespace ampmigrate {
namespace lsp {

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

// ---- The server --------------------------------------------------------------------------------

Server::~Server() {
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

int Server::run() {
  for (;;) {
    LspIncoming In = readLspMessage(Opts.In);
    if (!In.Body && In.FramingError.empty())
      break; // end of input
    // A protocol error is answered, not fatal: the editor's next message may be fine.
    if (!In.Body) {
      llvm::errs() << "amp-migrate --lsp: " << In.FramingError << "\n";
      Client.reply(nullptr, ClientChannel::error(-32700, "parse error: " + In.FramingError));
      continue;
    }
    const std::string *Body = &*In.Body;
    // json::parse recurses per nesting level: bound the depth before it runs.
    if (jsonDepth(*Body) > MaxNestingDepth) {
      Client.reply(nullptr, ClientChannel::error(-32700, "parse error: JSON nested deeper than " +
                                                            std::to_string(MaxNestingDepth) + " levels"));
      continue;
    }
    llvm::Expected<json::Value> V = json::parse(*Body);
    if (!V) {
      llvm::errs() << "amp-migrate --lsp: invalid JSON: " << llvm::toString(V.takeError()) << "\n";
      Client.reply(nullptr, ClientChannel::error(-32700, "parse error: invalid JSON"));
      continue;
    }
    const json::Object *Msg = V->getAsObject();
    if (!Msg) {
      Client.reply(nullptr, ClientChannel::error(-32600, "invalid request"));
      continue;
    }
    std::optional<StringRef> Method = Msg->getString("method");
    const json::Value *Id = Msg->get("id");
    // JSON-RPC 2.0: an id is a string, a number or null; anything else is not echoed back.
    if (Id && !Id->getAsString() && !Id->getAsNumber() && Id->kind() != json::Value::Null) {
      Client.reply(nullptr, ClientChannel::error(-32600, "invalid request: an id must be a string, a number or null"));
      continue;
    }
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

void Server::handleRequest(StringRef Method, const json::Value &Id, const json::Value &Params) {
  if (Method == "initialize")
    return Client.result(Id, initialize(Params));
  if (!Initialized)
    return Client.reply(Id, ClientChannel::error(-32002, "server not initialized"));
  if (Method == "shutdown") {
    ShutDown = true;
    return Client.result(Id, nullptr);
  }
  if (Method == "textDocument/codeAction")
    return Client.result(Id, codeActions(Params));
  Client.reply(Id, ClientChannel::error(-32601, ("method not found: " + Method).str()));
}

// -- initialize
json::Value Server::initialize(const json::Value &Params) {
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
    if (const json::Value *IO = P->get("initializationOptions"))
      readInitializationOptions(*IO);
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
    Client.logMessage(1, "unknown level '" + LevelName + "' (valid: O0, O1, O2, O3); using O2");
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

void Server::readInitializationOptions(const json::Value &Options) {
  if (Options.kind() == json::Value::Null)
    return;
  const json::Object *IO = Options.getAsObject();
  if (!IO)
    return Client.warnUser("initializationOptions is not an object; ignored");
  auto Wrong = [&](StringRef Key, StringRef Expected) {
    Client.warnUser(("initializationOptions." + Key + " is not " + Expected + "; ignored").str());
  };
  auto Strings = [&](StringRef Key, std::vector<std::string> &Into) {
    const json::Value *V = IO->get(Key);
    const json::Array *A = V ? V->getAsArray() : nullptr;
    if (V && !A)
      return Wrong(Key, "an array of strings");
    for (const json::Value &E : A ? *A : json::Array())
      if (auto S = E.getAsString())
        Into.push_back(S->str());
      else
        Wrong(Key, "an array of strings (an element is not a string)");
  };
  for (const auto &[Key, V] : *IO) {
    StringRef K = Key;
    if (K == "compilationDatabasePath" || K == "level" || K == "checks") {
      std::optional<StringRef> S = V.getAsString();
      if (!S) {
        Wrong(K, "a string");
        continue;
      }
      (K == "level" ? LevelName : K == "checks" ? ChecksGlob : DatabasePath) = S->str();
    } else if (K == "debounceMs" || K == "verifyDelayMs") {
      std::optional<int64_t> Ms = V.getAsInteger();
      if (!Ms || *Ms < 0) {
        Wrong(K, "a non-negative integer");
        continue;
      }
      (K == "debounceMs" ? Debounce : VerifyDelay) = std::chrono::milliseconds(*Ms);
    } else if (K != "extraArgs" && K != "rules") {
      Client.warnUser(("unknown initializationOptions." + K + "; ignored").str());
    }
  }
  Strings("extraArgs", ExtraArgs);
  Strings("rules", RuleFiles);
}

/// $/progress around the long parses: a whole file, the precompilation of its includes, the
/// verification of its fixes. Each thread (checks, builds, verifications) has one at a time, so
/// an end belongs to the last begin of the same thread: ranges on several threads overlap.
void Server::progress(bool Begin, const std::string &What) {
  if (!WorkDoneProgress)
    return;
  thread_local unsigned Current = 0;
  if (Begin)
    Current = ++ProgressRequests;
  std::string Token = "amp-migrate/parse/" + std::to_string(Current);
  if (Begin) {
    Client.send(json::Object{{"jsonrpc", "2.0"},
                             {"id", "amp-migrate/progress/" + std::to_string(Current)},
                             {"method", "window/workDoneProgress/create"},
                             {"params", json::Object{{"token", Token}}}});
    Client.notify("$/progress", json::Object{{"token", Token},
                                             {"value", json::Object{{"kind", "begin"},
                                                                    {"title", "amp-migrate"},
                                                                    {"message", What},
                                                                    {"cancellable", false}}}});
  } else {
    Client.notify("$/progress", json::Object{{"token", Token}, {"value", json::Object{{"kind", "end"}}}});
  }
}

} // namespace lsp

int runLanguageServer(const LanguageServerOptions &Opts) {
  lsp::Server S(Opts);
  return S.run();
}

} // namespace ampmigrate
