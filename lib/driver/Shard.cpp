// --shard=K/N (a deterministic, size-balanced share of the files) and the merge of the shards'
// exported fixes and SARIF logs into one consistent set.
#include "ampmigrate/Shard.h"
#include "ampmigrate/FixApplier.h"
#include "ampmigrate/InputFiles.h"

#include "clang/Tooling/Core/Diagnostic.h"
#include "clang/Tooling/DiagnosticsYaml.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/YAMLTraits.h"
#include <map>
#include <optional>
#include <set>

namespace json = llvm::json;
using clang::tooling::Replacement;
using llvm::StringRef;

namespace ampmigrate {

llvm::Error parseShard(StringRef Text, unsigned &K, unsigned &N) {
  auto [KS, NS] = Text.split('/');
  if (KS.getAsInteger(10, K) || NS.getAsInteger(10, N) || N == 0 || K == 0 || K > N)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "invalid --shard '%s': expected K/N with 1 <= K <= N, e.g. 2/4",
                                   Text.str().c_str());
  return llvm::Error::success();
}

std::vector<std::string> selectShard(const std::vector<std::string> &Files, unsigned K, unsigned N) {
  struct Sized {
    uint64_t Size;
    std::string Path;
  };
  std::vector<Sized> All;
  std::set<std::string> Seen;
  for (const std::string &F : Files) {
    if (!Seen.insert(F).second)
      continue;
    uint64_t Size = 0;
    if (llvm::sys::fs::file_size(F, Size))
      Size = 0;
    All.push_back({Size, F});
  }
  // Largest first, then by path: the same set of files gives the same shards in any order.
  llvm::sort(All, [](const Sized &A, const Sized &B) { return std::tie(B.Size, A.Path) < std::tie(A.Size, B.Path); });
  std::vector<uint64_t> Load(N, 0);
  std::vector<std::string> Mine;
  for (const Sized &F : All) {
    unsigned Least = 0;
    for (unsigned I = 1; I < N; ++I)
      if (Load[I] < Load[Least])
        Least = I;
    // A file of size 0 still costs a parse: count it as one byte so empty files spread out.
    Load[Least] += std::max<uint64_t>(F.Size, 1);
    if (Least == K - 1)
      Mine.push_back(F.Path);
  }
  // Back in the order given, so progress lines and reports read like an unsharded run.
  std::set<std::string> Chosen(Mine.begin(), Mine.end());
  std::vector<std::string> Out;
  for (const std::string &F : Files)
    if (Chosen.erase(F))
      Out.push_back(F);
  return Out;
}

namespace {

llvm::Error inputError(StringRef Path, const llvm::Twine &What) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), (Path + ": error: " + What).str());
}

struct RecordedDigest {
  std::string Input;  ///< the fixes file that records it
  std::string Digest; ///< hex SHA-256, or "different"
};

/// Why each file's edits must not be applied: the inputs were computed from different bytes of
/// it (two versions of the file, or one run whose TUs read it differently), or it exists here
/// with other bytes than they were computed from (absent, as on a CI job without a checkout, it
/// is not checked here; --apply-fixes checks it when it applies).
std::map<std::string, std::string> staleFiles(const std::map<std::string, std::vector<RecordedDigest>> &Recorded) {
  std::map<std::string, std::string> Stale;
  for (const auto &[File, List] : Recorded) {
    const RecordedDigest &First = List.front();
    auto Other = llvm::find_if(List, [&](const RecordedDigest &R) { return R.Digest != First.Digest; });
    if (First.Digest == "different" || Other != List.end()) {
      const RecordedDigest &B = Other != List.end() ? *Other : First;
      Stale[File] = "the fixes were computed from different contents of this file (" + First.Input + ": " +
                    First.Digest.substr(0, 12) + ", " + B.Input + ": " + B.Digest.substr(0, 12) + ")";
      continue;
    }
    auto Now = readSourceFile(File);
    if (!Now) {
      llvm::consumeError(Now.takeError());
      continue;
    }
    if (llvm::toHex(digestOf((*Now)->getBuffer()), /*LowerCase=*/true) != First.Digest)
      Stale[File] = "the file changed since " + First.Input + " was computed from it";
  }
  return Stale;
}

/// Edits whose order of application is not determined by their positions: overlapping ranges,
/// or two different insertions at one offset.
bool conflicts(const Replacement &A, const Replacement &B) {
  if (A == B)
    return false;
  // 64 bits: an offset and a length from a damaged file may add up past 32.
  uint64_t AE = uint64_t(A.getOffset()) + A.getLength(), BE = uint64_t(B.getOffset()) + B.getLength();
  if (A.getLength() == 0 && B.getLength() == 0)
    return A.getOffset() == B.getOffset();
  if (A.getLength() == 0)
    return A.getOffset() > B.getOffset() && A.getOffset() < BE;
  if (B.getLength() == 0)
    return B.getOffset() > A.getOffset() && B.getOffset() < AE;
  return A.getOffset() < BE && B.getOffset() < AE;
}

/// A pair of conflicting edits among `Edits` (each with the fixes file it came from), sorted by
/// position, or nothing.
std::optional<std::pair<size_t, size_t>> firstConflict(const std::vector<std::pair<Replacement, std::string>> &Edits) {
  for (size_t I = 0; I < Edits.size(); ++I)
    for (size_t J = I + 1; J < Edits.size() && Edits[J].first.getOffset() <=
                                                   uint64_t(Edits[I].first.getOffset()) + Edits[I].first.getLength();
         ++J)
      if (conflicts(Edits[I].first, Edits[J].first))
        return std::make_pair(I, J);
  return std::nullopt;
}

std::string describe(const Replacement &R) {
  return "offset " + std::to_string(R.getOffset()) + " (length " + std::to_string(R.getLength()) + ")";
}

} // namespace

llvm::Expected<MergeOutcome> mergeExportedFixes(const std::vector<std::string> &Inputs, llvm::raw_ostream &OS) {
  MergeOutcome Out;
  std::vector<clang::tooling::Diagnostic> Diags;
  std::string BuildDir;
  std::map<std::string, std::vector<RecordedDigest>> Recorded; // by file identity
  for (const std::string &In : Inputs) {
    auto Buf = llvm::MemoryBuffer::getFile(In);
    if (!Buf)
      return inputError(In, "cannot read: " + Buf.getError().message());
    clang::tooling::TranslationUnitDiagnostics TUD;
    llvm::yaml::Input YIn((*Buf)->getBuffer());
    YIn >> TUD;
    if (YIn.error())
      return inputError(In, "not an exported-fixes YAML file (amp-migrate or clang-tidy --export-fixes)");
    ++Out.Inputs;
    for (const auto &[Path, Digest] : readFixFileDigests((*Buf)->getBuffer()))
      Recorded[fileIdentity(Path)].push_back({In, Digest});
    for (clang::tooling::Diagnostic &D : TUD.Diagnostics) {
      // Every path absolute and canonical, so that the shards' names for one file meet.
      D.Message.FilePath = fileIdentity(D.Message.FilePath, D.BuildDirectory);
      for (clang::tooling::DiagnosticMessage &N : D.Notes)
        N.FilePath = fileIdentity(N.FilePath, D.BuildDirectory);
      llvm::StringMap<clang::tooling::Replacements> Fix;
      for (const auto &[File, Reps] : D.Message.Fix) {
        std::string Canon = fileIdentity(File, D.BuildDirectory);
        for (const Replacement &R : Reps)
          if (llvm::Error E = Fix[Canon].add(Replacement(Canon, R.getOffset(), R.getLength(), R.getReplacementText())))
            return inputError(In, "a fix of " + D.DiagnosticName + " overlaps itself: " + llvm::toString(std::move(E)));
      }
      D.Message.Fix = std::move(Fix);
      if (BuildDir.empty())
        BuildDir = D.BuildDirectory;
      Diags.push_back(std::move(D));
    }
  }

  // The same finding from several shards (a header seen by many TUs): once.
  auto Key = [](const clang::tooling::Diagnostic &D) {
    std::vector<std::string> Edits;
    for (const auto &[File, Reps] : D.Message.Fix)
      for (const Replacement &R : Reps)
        Edits.push_back(R.toString());
    llvm::sort(Edits);
    return std::make_tuple(D.Message.FilePath, D.Message.FileOffset, D.DiagnosticName, D.Message.Message, Edits);
  };
  std::set<decltype(Key(Diags.front()))> SeenDiags;
  std::vector<clang::tooling::Diagnostic> Unique;
  for (clang::tooling::Diagnostic &D : Diags)
    if (SeenDiags.insert(Key(D)).second)
      Unique.push_back(std::move(D));
    else
      ++Out.DuplicateDiagnostics;

  // Distinct edits per file; an edit that overlaps a different one makes both fixes unsafe.
  std::map<std::string, std::vector<Replacement>> ByFile;
  for (const clang::tooling::Diagnostic &D : Unique)
    for (const auto &[File, Reps] : D.Message.Fix)
      for (const Replacement &R : Reps)
        if (!llvm::is_contained(ByFile[File.str()], R))
          ByFile[File.str()].push_back(R);
  std::set<Replacement> Conflicting;
  for (auto &[File, Reps] : ByFile) {
    llvm::sort(Reps);
    for (size_t I = 0; I < Reps.size(); ++I)
      for (size_t J = I + 1; J < Reps.size() && Reps[J].getOffset() <= Reps[I].getOffset() + Reps[I].getLength(); ++J)
        if (conflicts(Reps[I], Reps[J])) {
          Conflicting.insert(Reps[I]);
          Conflicting.insert(Reps[J]);
        }
  }

  // A file the inputs computed edits from different bytes of, or that has changed since: offsets
  // into other bytes would corrupt it.
  std::map<std::string, std::string> Stale = staleFiles(Recorded);
  std::map<std::string, std::string> KeptDigests;

  clang::tooling::TranslationUnitDiagnostics Merged;
  std::set<Replacement> Emitted;
  for (clang::tooling::Diagnostic &D : Unique) {
    bool Refused = false;
    for (const auto &[File, Reps] : D.Message.Fix)
      if (auto It = Stale.find(File.str()); !Refused && It != Stale.end()) {
        Refused = true;
        Out.Conflicts.push_back(File.str() + ": error: " + It->second + "; the fix of " + D.DiagnosticName +
                                " at " + D.Message.FilePath + ":" + std::to_string(D.Message.FileOffset) +
                                " is refused");
      }
    for (const auto &[File, Reps] : D.Message.Fix)
      for (const Replacement &R : Reps)
        if (!Refused && Conflicting.count(R)) {
          Refused = true; // one line per refused fix, at its first conflicting edit
          Out.Conflicts.push_back(R.getFilePath().str() + ":" + std::to_string(R.getOffset()) +
                                  ": conflict: the fix of " + D.DiagnosticName + " at " + D.Message.FilePath + ":" +
                                  std::to_string(D.Message.FileOffset) +
                                  " edits text another fix edits differently; both refused");
        }
    llvm::StringMap<clang::tooling::Replacements> Kept;
    if (!Refused) {
      for (const auto &[File, Reps] : D.Message.Fix)
        for (const Replacement &R : Reps) {
          if (!Emitted.insert(R).second) {
            ++Out.DuplicateEdits; // applied once, with the first fix that proposes it
            continue;
          }
          llvm::cantFail(Kept[File].add(R));
          ++Out.Edits;
        }
      for (const auto &Entry : Kept)
        if (auto It = Recorded.find(Entry.first().str()); It != Recorded.end())
          KeptDigests[It->first] = llvm::fromHex(It->second.front().Digest);
    }
    D.Message.Fix = std::move(Kept);
    Merged.Diagnostics.push_back(std::move(D));
  }
  Out.Diagnostics = Merged.Diagnostics.size();
  if (!Merged.Diagnostics.empty())
    Merged.MainSourceFile = Merged.Diagnostics.front().Message.FilePath;
  OS << fixFileDigestLines(KeptDigests);
  llvm::yaml::Output YOut(OS);
  YOut << Merged;
  return Out;
}

ApplyOutcome applyExportedFixes(const std::vector<std::string> &Inputs) {
  ApplyOutcome Out;
  // By file identity: its distinct edits, each with the fixes file that proposes it first.
  std::map<std::string, std::vector<std::pair<Replacement, std::string>>> Edits;
  std::map<std::string, std::vector<RecordedDigest>> Recorded;
  for (const std::string &In : Inputs) {
    auto Buf = llvm::MemoryBuffer::getFile(In);
    if (!Buf) {
      Out.Errors.push_back(In + ": error: cannot read: " + Buf.getError().message());
      continue;
    }
    clang::tooling::TranslationUnitDiagnostics TUD;
    llvm::yaml::Input YIn((*Buf)->getBuffer());
    YIn >> TUD;
    if (YIn.error()) {
      Out.Errors.push_back(In + ": error: not an exported-fixes YAML file (amp-migrate --export-fixes)");
      continue;
    }
    for (const auto &[Path, Digest] : readFixFileDigests((*Buf)->getBuffer()))
      Recorded[fileIdentity(Path)].push_back({In, Digest});
    for (const clang::tooling::Diagnostic &D : TUD.Diagnostics)
      for (const auto &[File, Reps] : D.Message.Fix) {
        std::string Id = fileIdentity(File, D.BuildDirectory);
        for (const Replacement &R : Reps) {
          if (R.getLength() == 0 && R.getReplacementText().empty())
            continue; // an empty insertion edits nothing
          Replacement Mine(Id, R.getOffset(), R.getLength(), R.getReplacementText());
          auto &List = Edits[Id];
          if (llvm::none_of(List, [&](const auto &E) { return E.first == Mine; }))
            List.push_back({Mine, In}); // the same edit from two files: once
        }
      }
  }
  // Conflicting edits leave their file alone, by the merge's rule (overlapping ranges, two
  // insertions at one offset): clang's Replacements would merge overlapping deletions into one
  // that neither fix proposed.
  std::map<std::string, clang::tooling::Replacements> ByFile;
  for (auto &[Id, List] : Edits) {
    llvm::sort(List, [](const auto &A, const auto &B) { return A.first < B.first; });
    if (auto C = firstConflict(List)) {
      const auto &[A, AIn] = List[C->first];
      const auto &[B, BIn] = List[C->second];
      Out.Errors.push_back(BIn + ": error: conflicting edits of " + Id + ": the edit at " + describe(B) + " and the edit at " +
                           describe(A) + (AIn == BIn ? std::string() : " (" + AIn + ")") +
                           " overlap; not rewritten");
      continue;
    }
    for (const auto &[R, In] : List)
      if (llvm::Error E = ByFile[Id].add(R)) {
        Out.Errors.push_back(In + ": error: conflicting edits of " + Id + ": " + llvm::toString(std::move(E)));
        ByFile.erase(Id);
        break;
      }
  }
  std::map<std::string, std::string> Stale = staleFiles(Recorded);
  for (const auto &[File, Reps] : ByFile) {
    if (Reps.empty())
      continue;
    auto Rec = Recorded.find(File);
    if (Rec == Recorded.end()) {
      Out.Errors.push_back(File + ": error: the fixes do not record what this file held when they were "
                                  "computed (not written by amp-migrate --export-fixes); not rewritten");
      continue;
    }
    if (auto It = Stale.find(File); It != Stale.end()) {
      Out.Errors.push_back(File + ": error: " + It->second + "; not rewritten");
      continue;
    }
    // Under the lock and only over the recorded bytes, as --fix writes.
    llvm::Expected<bool> Written = rewriteFileIfUnchanged(
        File, llvm::fromHex(Rec->second.front().Digest),
        [&, &File = File, &Reps = Reps](StringRef Old) { return applyEdits(File, Old, Reps); });
    if (!Written)
      Out.Errors.push_back(llvm::toString(Written.takeError()));
    else
      Out.Changed += *Written;
  }
  return Out;
}

llvm::Expected<unsigned> mergeSarif(const std::vector<std::string> &Inputs, llvm::raw_ostream &OS) {
  std::optional<json::Object> Run;
  json::Array Rules, Results, Invocations;
  std::map<std::string, int64_t> RuleIndex;
  std::set<std::string> SeenResults;
  for (const std::string &In : Inputs) {
    auto Buf = llvm::MemoryBuffer::getFile(In);
    if (!Buf)
      return inputError(In, "cannot read: " + Buf.getError().message());
    llvm::Expected<json::Value> V = json::parse((*Buf)->getBuffer());
    if (!V)
      return inputError(In, "not JSON: " + llvm::toString(V.takeError()));
    const json::Array *Runs = V->getAsObject() ? V->getAsObject()->getArray("runs") : nullptr;
    if (!Runs)
      return inputError(In, "not a SARIF log (no \"runs\")");
    for (const json::Value &RV : *Runs) {
      const json::Object *R = RV.getAsObject();
      if (!R)
        return inputError(In, "a run that is not an object");
      if (!Run)
        Run = *R; // the first run's tool, columnKind and base URIs
      const json::Object *Driver = R->getObject("tool") ? R->getObject("tool")->getObject("driver") : nullptr;
      if (const json::Array *RA = Driver ? Driver->getArray("rules") : nullptr)
        for (const json::Value &Rule : *RA) {
          auto Id = Rule.getAsObject() ? Rule.getAsObject()->getString("id") : std::nullopt;
          if (Id && RuleIndex.emplace(Id->str(), static_cast<int64_t>(Rules.size())).second)
            Rules.push_back(Rule);
        }
      if (const json::Array *IA = R->getArray("invocations"))
        for (const json::Value &I : *IA)
          Invocations.push_back(I);
      if (const json::Array *RA = R->getArray("results"))
        for (const json::Value &ResV : *RA) {
          json::Value Res = ResV;
          json::Object *O = Res.getAsObject();
          if (!O)
            return inputError(In, "a result that is not an object");
          // Indexes into the merged rule list.
          if (auto Id = O->getString("ruleId"); Id && RuleIndex.count(Id->str()))
            (*O)["ruleIndex"] = RuleIndex[Id->str()];
          std::string Text;
          llvm::raw_string_ostream TOS(Text);
          TOS << Res;
          if (SeenResults.insert(TOS.str()).second)
            Results.push_back(std::move(Res));
        }
    }
  }
  if (!Run)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "no SARIF runs to merge");
  if (json::Object *Tool = Run->getObject("tool"))
    if (json::Object *Driver = Tool->getObject("driver"))
      (*Driver)["rules"] = std::move(Rules);
  unsigned N = Results.size();
  (*Run)["results"] = std::move(Results);
  (*Run)["invocations"] = std::move(Invocations);
  json::Object Log{{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
                   {"version", "2.1.0"},
                   {"runs", json::Array{json::Value(std::move(*Run))}}};
  OS << llvm::formatv("{0:2}", json::Value(std::move(Log))) << "\n";
  return N;
}

} // namespace ampmigrate
