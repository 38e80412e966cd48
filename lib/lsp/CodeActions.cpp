// The language server's code actions: one quick fix per fixable training step in the range.
#include "LanguageServerInternal.h"

namespace ampmigrate {
namespace lsp {
namespace {

bool positionLess(const json::Object &A, const json::Object &B) {
  auto Key = [](const json::Object &P) {
    return std::make_pair(P.getInteger("line").value_or(0), P.getInteger("character").value_or(0));
  };
  return Key(A) < Key(B);
}

} // namespace

// -- Code actions
json::Value Server::codeActions(const json::Value &Params) {
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

} // namespace lsp
} // namespace ampmigrate
