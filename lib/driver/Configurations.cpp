// Several analyses of one source: each compile command of a file (its configurations), and each
// translation unit that sees a header's step. A step is fixed only if every analysis agrees.
#include "DriverInternal.h"
#include "ampmigrate/SourceText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <set>
#include <tuple>

using namespace clang;
namespace ampmigrate {
namespace driver {
namespace {

using EditKey = std::tuple<std::string, unsigned, unsigned, std::string>;

std::vector<EditKey> editKeys(const StepFix &Fix) {
  std::vector<EditKey> Keys;
  for (const tooling::Replacement &R : Fix.Edits)
    Keys.emplace_back(absolutePath(R.getFilePath()), R.getOffset(), R.getLength(), R.getReplacementText().str());
  llvm::sort(Keys);
  Keys.erase(std::unique(Keys.begin(), Keys.end()), Keys.end());
  return Keys;
}

/// "file:line" of the first edit in which two fixes of one step differ.
std::string firstDifference(const std::vector<EditKey> &A, const std::vector<EditKey> &B, SourceTexts &Texts) {
  size_t I = 0;
  while (I < A.size() && I < B.size() && A[I] == B[I])
    ++I;
  const EditKey &K = I < A.size() ? A[I] : B[I];
  const std::string &File = std::get<0>(K);
  const std::string *Text = Texts.get(File);
  unsigned Line = 0;
  if (Text) {
    size_t End = std::min<size_t>(std::get<1>(K), Text->size());
    Line = static_cast<unsigned>(std::count(Text->begin(), Text->begin() + End, '\n')) + 1;
  }
  return positionText(llvm::sys::path::filename(File), Line);
}

/// What each analysis says about one step: its fix, or none (seen, not fixed).
struct StepViews {
  std::vector<std::pair<size_t, const StepFix *>> Views; ///< (analysis, fix or nullptr)
};

/// Why the analyses of one step do not agree on its fix, or "".
std::string disagreement(const StepViews &S, const std::vector<Analysis> &Parts, SourceTexts &Texts) {
  const StepFix *First = nullptr;
  size_t FirstPart = 0;
  for (const auto &[Part, Fix] : S.Views)
    if (Fix && !First) {
      First = Fix;
      FirstPart = Part;
    }
  if (!First)
    return "";
  for (const auto &[Part, Fix] : S.Views) {
    if (!Fix)
      return Parts[Part].Label + " does not migrate this step (see its reason), while " + Parts[FirstPart].Label +
             " would; a rewrite must suit every configuration that compiles the step";
    std::vector<EditKey> A = editKeys(*First), B = editKeys(*Fix);
    if (A != B)
      return Parts[FirstPart].Label + " and " + Parts[Part].Label +
             " plan different edits for this step (the first difference at " + firstDifference(A, B, Texts) +
             "); migrate it by hand, or analyse one configuration";
  }
  return "";
}

/// A template that one analysis instantiates and another sees only in its definition (a header's
/// trainer that one translation unit calls and another merely includes): the second could not
/// resolve the calls on its template parameters, so the first speaks for the template alone.
/// The definition's text is the same in both, and the first verifies its rewrite.
void dropUninstantiatedViews(std::vector<Analysis> &Parts) {
  std::set<std::string> Resolved;
  for (const Analysis &A : Parts)
    for (const Finding &F : A.Result.Findings)
      if (!F.Template.empty() && !F.Uninstantiated)
        Resolved.insert(F.Template);
  for (Analysis &A : Parts)
    llvm::erase_if(A.Result.Findings, [&](const Finding &F) {
      return F.Uninstantiated && Resolved.count(F.Template);
    });
}

} // namespace

TUResult agreeOnFixes(std::vector<Analysis> Parts, const DriverOptions &Opts) {
  TUResult Out;
  if (Parts.size() == 1)
    return std::move(Parts.front().Result);
  dropUninstantiatedViews(Parts);
  FileTexts Texts(Opts.Overlays);
  std::map<std::string, StepViews> Steps;
  for (size_t P = 0; P < Parts.size(); ++P) {
    std::set<std::string> Seen;
    for (const StepFix &Fix : Parts[P].Result.Fixes)
      if (Seen.insert(Fix.StepId).second)
        Steps[Fix.StepId].Views.push_back({P, &Fix});
    for (const Finding &F : Parts[P].Result.Findings)
      if (!F.StepId.empty() && Seen.insert(F.StepId).second)
        Steps[F.StepId].Views.push_back({P, nullptr});
  }
  std::map<std::string, std::string> Refused; // step -> why
  for (const auto &[Id, S] : Steps)
    if (std::string Why = disagreement(S, Parts, Texts); !Why.empty())
      Refused[Id] = std::move(Why);
  for (Analysis &A : Parts) {
    for (StepFix &Fix : A.Result.Fixes)
      if (!Refused.count(Fix.StepId) &&
          llvm::none_of(Out.Fixes, [&](const StepFix &K) { return K.StepId == Fix.StepId; }))
        Out.Fixes.push_back(std::move(Fix));
    for (Finding &F : A.Result.Findings)
      Out.Findings.push_back(std::move(F));
    mergeDigests(Out.Digests, A.Result.Digests);
    Out.Summaries.merge(A.Result.Summaries);
    Out.UnknownCallees.insert(A.Result.UnknownCallees.begin(), A.Result.UnknownCallees.end());
    Out.SkippedBodies += A.Result.SkippedBodies;
    Out.FixesDeferred |= A.Result.FixesDeferred;
  }
  for (const auto &[Id, Why] : Refused) {
    const Finding *Lead = nullptr;
    for (Finding &F : Out.Findings)
      if (F.StepId == Id && F.Fixable &&
          (!Lead || std::tie(F.Pos.File, F.Pos.Offset) < std::tie(Lead->Pos.File, Lead->Pos.Offset)))
        Lead = &F;
    if (Lead && Opts.Engine.CheckEnabled("amp-manual-migration")) {
      Finding M;
      M.Check = "amp-manual-migration";
      M.Pos = Lead->Pos;
      M.StepId = Id;
      M.Message = "not migrated automatically: " + Why;
      Out.Findings.push_back(std::move(M));
    }
    for (Finding &F : Out.Findings)
      if (F.StepId == Id)
        F.Fixable = false;
  }
  return Out;
}

} // namespace driver
} // namespace ampmigrate
