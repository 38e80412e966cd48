// The language server's threads: the checker, the verifier of fixes, the preamble builder.
#include "LanguageServerInternal.h"

#include "ampmigrate/Config.h"

#include "llvm/Support/raw_ostream.h"

namespace ampmigrate {
namespace lsp {

/// Waits (with `L` held on StateM) until a document that `Ready` selects is due at its `Due`
/// time, the earliest first, and returns it; null once the server is stopping.
template <class Pred>
Document *Server::nextDue(std::unique_lock<std::mutex> &L, Pred Ready,
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

/// The worker: runs the due checks one at a time, and publishes each unless a change came
/// while it ran.
void Server::work() {
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

/// Runs the driver over one version of a document (worker thread, no lock held): the analysis
/// as it came (DriverOptions::Unfinished), its fixes not verified.
Report Server::check(const std::string &Path, const std::string &Text, PreambleParser &Parser,
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

/// The verifier: verifies the fixes of a document's last check once the document has been
/// idle for VerifyDelay (or at once when a code action waits for them), one at a time, and
/// republishes the diagnostics when a step's fix is withdrawn. A newer version of the document
/// cancels a running verification (its result is never used).
void Server::verify() {
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
void Server::build() {
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

} // namespace lsp
} // namespace ampmigrate
