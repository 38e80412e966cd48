// The language server's document store: notifications, edits, scheduling, per-file settings.
#include "LanguageServerInternal.h"

#include "ampmigrate/Checks.h"
#include "ampmigrate/Config.h"

#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

namespace ampmigrate {
namespace lsp {

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

// ---- Notifications ------------------------------------------------------------------------------

void Server::handleNotification(StringRef Method, const json::Value &Params) {
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
      Client.logMessage(2, "not a local file URI, not checked: " + Uri->str());
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
    Client.notify("textDocument/publishDiagnostics",
                  json::Object{{"uri", It->first}, {"diagnostics", json::Array()}});
    Docs.erase(It);
  }
  // initialized, $/cancelRequest, workspace/didChangeConfiguration...: nothing to do.
}

void Server::applyChange(Document &D, const json::Value &Change) {
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

// ---- Scheduling (main thread: schedule; worker thread: work, Workers.cpp) ----------------------

/// A check of `D` is due after `Delay`; a running one is stale. Called with StateM held.
void Server::schedule(Document &D, std::chrono::milliseconds Delay) {
  ++D.Generation;
  if (D.Cancel)
    D.Cancel->store(true);
  if (D.VerifyCancel)
    D.VerifyCancel->store(true); // verifies fixes for text that is no longer the document's
  D.Pending = true;
  D.Due = std::chrono::steady_clock::now() + Delay;
  StateCV.notify_all();
}

/// Waits until the findings of `Uri` are those of its current text (StateM held); nullptr when
/// the document is not open.
Document *Server::current(std::unique_lock<std::mutex> &L, const std::string &Uri) {
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

// ---- Checking: compile commands, settings, the driver's options --------------------------------

/// Compile commands for a file: the configured database directory, else compile_commands.json
/// found upward from the file (commands for files it lacks are inferred from neighbours, like
/// clangd), else `-std=c++17`. The extra arguments are appended to each command.
std::unique_ptr<clang::tooling::CompilationDatabase> Server::database(const std::string &Path) {
  std::string Err;
  std::unique_ptr<clang::tooling::CompilationDatabase> DB;
  if (!DatabasePath.empty()) {
    DB = clang::tooling::CompilationDatabase::autoDetectFromDirectory(DatabasePath, Err);
    if (!DB)
      Client.logMessage(2, "no compile_commands.json in " + DatabasePath + ": " + Err);
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

const Server::Settings &Server::settingsFor(const std::string &ConfigPath) {
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
      Client.notify("window/showMessage", json::Object{{"type", 1}, {"message", "amp-migrate: " + Msg}});
      Client.logMessage(1, Msg);
    }
  }
  if (!LevelName.empty())
    St.Level = Level;
  else if (!Cfg.Level.empty())
    parseLevel(Cfg.Level, St.Level);
  St.Checks = !ChecksGlob.empty() ? ChecksGlob : (!Cfg.Checks.empty() ? Cfg.Checks : "amp-*");
  if (llvm::none_of(allChecks(), [&](const CheckInfo &C) { return checkEnabledByGlobs(St.Checks, C.Id); }))
    Client.warnUser("checks '" + St.Checks + "' enables no check (see amp-migrate --list-checks); no diagnostics" +
                    (ConfigPath.empty() ? std::string() : " for files under " + ConfigPath));
  std::vector<std::string> AllRules = Cfg.Rules;
  AllRules.insert(AllRules.end(), RuleFiles.begin(), RuleFiles.end());
  llvm::Expected<RuleSet> R = loadRules(AllRules);
  if (!R) {
    std::string Msg = llvm::toString(R.takeError());
    Client.notify("window/showMessage", json::Object{{"type", 1}, {"message", "amp-migrate: " + Msg}});
    Client.logMessage(1, Msg);
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

/// The driver's options for one version of a document.
DriverOptions Server::driverOptions(const std::string &Path, const std::string &Text) {
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

} // namespace lsp
} // namespace ampmigrate
