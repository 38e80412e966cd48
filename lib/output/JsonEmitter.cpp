// The JSON report (schema version 1, docs/output-formats.md): every finding with its notes and
// fixes, and a summary for dashboards.
#include "OutputCommon.h"
#include "ampmigrate/Emitters.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace ampmigrate {
namespace {

llvm::json::Value position(output::LineTable &Lines, const std::string &File, unsigned Offset) {
  auto Pos = Lines.position(File, Offset);
  if (!Pos)
    return nullptr;
  return llvm::json::Object{{"line", Pos->first}, {"column", Pos->second}};
}

llvm::json::Array jsonFixes(const Finding &F, output::LineTable &Lines) {
  llvm::json::Array Fixes;
  for (const clang::tooling::Replacement &Rep : F.Fixes) {
    std::string File = Rep.getFilePath().str();
    Fixes.push_back(llvm::json::Object{
        {"file", Rep.getFilePath()},
        {"offset", Rep.getOffset()},
        {"length", Rep.getLength()},
        {"replacement", Rep.getReplacementText()},
        {"start", position(Lines, File, Rep.getOffset())},
        {"end", position(Lines, File, Rep.getOffset() + Rep.getLength())},
    });
  }
  return Fixes;
}

llvm::json::Object findingObject(const Finding &F, output::LineTable &Lines) {
  llvm::json::Array Notes;
  for (const Note &N : F.Notes)
    Notes.push_back(llvm::json::Object{{"file", N.Pos.File},
                                       {"line", N.Pos.Line},
                                       {"column", N.Pos.Column},
                                       {"message", N.Message}});
  return llvm::json::Object{
      {"check", F.Check},
      {"file", F.Pos.File},
      {"line", F.Pos.Line},
      {"column", F.Pos.Column},
      {"offset", F.Pos.Offset},
      {"severity", output::severityName(F.Level)},
      {"message", F.Message},
      {"fixable", F.Fixable},
      {"notes", std::move(Notes)},
      {"fixes", jsonFixes(F, Lines)},
      {"step", F.StepId.empty() ? llvm::json::Value(nullptr) : llvm::json::Value(F.StepId)},
  };
}

llvm::json::Object summaryObject(const Report &R) {
  llvm::json::Object ByCheck;
  int64_t Fixable = 0;
  for (const Finding &F : R.Findings) {
    llvm::json::Value &Count = ByCheck[F.Check];
    Count = Count.getAsInteger().value_or(0) + 1;
    Fixable += F.Fixable;
  }
  int64_t Scanned = 0, Skipped = 0, Failed = 0;
  for (const FileOutcome &FO : R.Files) {
    switch (FO.Status) {
    case FileOutcome::State::Scanned:
      ++Scanned;
      break;
    case FileOutcome::State::Skipped:
      ++Skipped;
      break;
    case FileOutcome::State::Failed:
      ++Failed;
      break;
    }
  }
  return llvm::json::Object{
      {"findings", static_cast<int64_t>(R.Findings.size())},
      {"by_check", std::move(ByCheck)},
      {"files", llvm::json::Object{{"scanned", Scanned}, {"skipped", Skipped}, {"failed", Failed}}},
      {"fixable", Fixable},
  };
}

} // namespace

void emitJson(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS, const EmitOptions &) {
  output::LineTable Lines(Texts);
  llvm::json::Array Findings;
  for (const Finding &F : R.Findings)
    Findings.push_back(findingObject(F, Lines));
  // The files the compiler could not parse: nothing in them was analysed or rewritten.
  llvm::json::Array Failures;
  for (const FileOutcome &FO : R.Files)
    if (FO.Status == FileOutcome::State::Failed)
      Failures.push_back(llvm::json::Object{{"file", FO.File}, {"error", FO.Error}});
  llvm::json::Value Doc = llvm::json::Object{
      {"version", 1},
      {"findings", std::move(Findings)},
      {"failures", std::move(Failures)},
      {"summary", summaryObject(R)},
  };
  OS << llvm::formatv("{0:2}", Doc) << '\n';
}

} // namespace ampmigrate
