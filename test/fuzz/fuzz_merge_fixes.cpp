// libFuzzer harness: merging exported fixes (--merge-fixes, mergeExportedFixes) and applying them
// (--apply-fixes, applyExportedFixes). The input makes up to three sources in a temporary
// directory and up to three fixes files over them: digest lines that match, do not, disagree or
// are missing; edits that overlap, repeat, insert at one offset or lie past the end; names that are
// relative, absolute or a symlink; and garbage YAML. Invariants: no crash; a garbage input is an
// error naming it; the merged file holds no two conflicting edits and no edit of a file whose
// recorded contents disagree or differ from the disk; applying (the merged file, or the inputs
// themselves) leaves each source either untouched or with every one of its edits applied (never a
// partial write, never a temporary left behind), and never writes a file with conflicting edits
// or other contents than the fixes were computed from.
#include "ampmigrate/FixApplier.h"
#include "ampmigrate/Shard.h"

#include "clang/Tooling/Core/Diagnostic.h"
#include "clang/Tooling/DiagnosticsYaml.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/YAMLTraits.h"
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace {

using Edit = std::tuple<unsigned, unsigned, std::string>; // offset, length, text

void fail(const std::string &What) {
  std::fprintf(stderr, "fuzz-merge_fixes: %s\n", What.c_str());
  __builtin_trap();
}

std::string readAll(const std::string &Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path);
  return Buf ? (*Buf)->getBuffer().str() : std::string("<unreadable>");
}

void writeAll(const std::string &Path, const std::string &Text) {
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  OS << Text;
}

std::string hexDigest(const std::string &Text) { return llvm::toHex(ampmigrate::digestOf(Text), true); }

/// Two edits whose order of application their positions do not decide (as the merge defines it).
bool conflicting(const Edit &A, const Edit &B) {
  if (A == B)
    return false;
  uint64_t AO = std::get<0>(A), AL = std::get<1>(A), BO = std::get<0>(B), BL = std::get<1>(B);
  if (AL == 0 && BL == 0)
    return AO == BO;
  if (AL == 0)
    return AO > BO && AO < BO + BL;
  if (BL == 0)
    return BO > AO && BO < AO + AL;
  return AO < BO + BL && BO < AO + AL;
}

bool anyConflict(const std::set<Edit> &Edits) {
  for (auto I = Edits.begin(); I != Edits.end(); ++I)
    for (auto J = std::next(I); J != Edits.end(); ++J)
      if (conflicting(*I, *J))
        return true;
  return false;
}

/// `Edits` applied to `Text` (no conflicts, all in range), or nothing.
std::optional<std::string> applied(const std::string &Text, const std::set<Edit> &Edits) {
  std::string Out;
  size_t Cursor = 0;
  for (const auto &[O, L, T] : Edits) { // ordered by offset, an insertion before a replacement there
    if (O < Cursor || uint64_t(O) + L > Text.size())
      return std::nullopt;
    Out += Text.substr(Cursor, O - Cursor) + T;
    Cursor = O + L;
  }
  return Out + Text.substr(Cursor);
}

/// The sources and fixes files an input describes.
struct World {
  std::string Dir;
  std::vector<std::string> Sources;  ///< real paths
  std::vector<std::string> Original; ///< their texts
  std::vector<std::string> FixFiles;
};

std::string yamlString(const std::string &S) {
  std::string Out = "\"";
  for (char C : S) {
    if (C == '"' || C == '\\')
      Out += '\\';
    if (C == '\n') {
      Out += "\\n";
      continue;
    }
    Out += C;
  }
  return Out + "\"";
}

std::string fixesFile(FuzzedDataProvider &In, const World &W) {
  std::string Text;
  auto Name = [&](size_t S) {
    switch (In.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return llvm::sys::path::filename(W.Sources[S]).str(); // relative to the build directory
    case 1:
      return W.Dir + "/link.cpp"; // a symlink to the first source
    default:
      return W.Sources[S];
    }
  };
  // What the fixes were computed from: these bytes, other bytes, two TUs that disagreed, nothing.
  for (size_t S = 0; S < W.Sources.size(); ++S)
    switch (In.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
      break;
    case 1:
      Text += "# amp-migrate-parsed: sha256=" + hexDigest(W.Original[S] + "x") + " " + Name(S) + "\n";
      break;
    case 2:
      Text += "# amp-migrate-parsed: different " + W.Sources[S] + "\n";
      break;
    default:
      Text += "# amp-migrate-parsed: sha256=" + hexDigest(W.Original[S]) + " " + W.Sources[S] + "\n";
    }
  Text += "---\nMainSourceFile: " + yamlString(W.Sources[0]) + "\nDiagnostics:\n";
  static const char *const Pool[] = {"", "x", "amp::", "scaler.step(opt);", "\n", "{", "}", "'\""};
  for (unsigned D = 0, ND = In.ConsumeIntegralInRange<unsigned>(0, 4); D < ND; ++D) {
    size_t Main = In.ConsumeIntegralInRange<size_t>(0, W.Sources.size() - 1);
    Text += "  - DiagnosticName: amp-zero-grad\n    DiagnosticMessage:\n      Message: 'm'\n      FilePath: " +
            yamlString(W.Sources[Main]) + "\n      FileOffset: " + std::to_string(In.ConsumeIntegral<uint8_t>()) +
            "\n      Replacements:\n";
    for (unsigned R = 0, NR = In.ConsumeIntegralInRange<unsigned>(0, 3); R < NR; ++R) {
      size_t S = In.ConsumeIntegralInRange<size_t>(0, W.Sources.size() - 1);
      unsigned Size = unsigned(W.Original[S].size());
      Text += "        - FilePath: " + yamlString(Name(S)) +
              "\n          Offset: " + std::to_string(In.ConsumeIntegralInRange<unsigned>(0, Size + 2)) +
              "\n          Length: " + std::to_string(In.ConsumeIntegralInRange<unsigned>(0, 6)) +
              "\n          ReplacementText: " +
              yamlString(Pool[In.ConsumeIntegralInRange<size_t>(0, std::size(Pool) - 1)]) + "\n";
    }
    Text += "    Level: Warning\n    BuildDirectory: " + yamlString(W.Dir) + "\n";
  }
  Text += "...\n";
  return Text;
}

World makeWorld(FuzzedDataProvider &In, const std::string &Dir) {
  World W;
  W.Dir = Dir;
  for (unsigned I = 0, N = In.ConsumeIntegralInRange<unsigned>(1, 3); I < N; ++I) {
    std::string Text = In.ConsumeRandomLengthString(160);
    // LF text without a byte order mark, so that the edits land exactly where they say.
    Text.erase(std::remove(Text.begin(), Text.end(), '\r'), Text.end());
    if (llvm::StringRef(Text).starts_with("\xEF\xBB\xBF"))
      Text[0] = 'x';
    W.Sources.push_back(Dir + "/s" + std::to_string(I) + ".cpp");
    W.Original.push_back(Text);
    writeAll(W.Sources.back(), Text);
  }
  (void)::symlink("s0.cpp", (Dir + "/link.cpp").c_str());
  for (unsigned I = 0, N = In.ConsumeIntegralInRange<unsigned>(1, 3); I < N; ++I) {
    std::string Path = Dir + "/f" + std::to_string(I) + ".yaml", Text;
    int Kind = In.ConsumeIntegralInRange<int>(0, 9);
    if (Kind == 0) {
      Text = In.ConsumeRandomLengthString(256);
    } else {
      Text = fixesFile(In, W);
      if (Kind == 1 && !Text.empty()) { // one byte changed: still YAML, or not
        Text[In.ConsumeIntegralInRange<size_t>(0, Text.size() - 1)] = In.ConsumeIntegral<char>();
      }
    }
    W.FixFiles.push_back(Path);
    writeAll(Path, Text);
  }
  return W;
}

/// What a fixes file says, read independently of the code under test: per real path, its edits
/// and recorded digests. Nothing when it is not a fixes file.
struct Recorded {
  std::map<std::string, std::set<Edit>> Edits;
  std::map<std::string, std::set<std::string>> Digests;
};

std::string realOr(const std::string &Path, const std::string &Base) {
  llvm::SmallString<256> P(Path);
  if (!llvm::sys::path::is_absolute(P)) {
    P = Base;
    llvm::sys::path::append(P, Path);
  }
  llvm::SmallString<256> Real;
  return llvm::sys::fs::real_path(P, Real) ? std::string(P) : std::string(Real);
}

std::optional<Recorded> readFixes(const std::string &Text) {
  clang::tooling::TranslationUnitDiagnostics TUD;
  llvm::yaml::Input YIn(Text);
  YIn >> TUD;
  if (YIn.error())
    return std::nullopt;
  Recorded R;
  for (const auto &[Path, Digest] : ampmigrate::readFixFileDigests(Text))
    R.Digests[realOr(Path, "")].insert(Digest);
  for (const clang::tooling::Diagnostic &D : TUD.Diagnostics)
    for (const auto &[File, Reps] : D.Message.Fix)
      for (const clang::tooling::Replacement &Rep : Reps)
        if (Rep.getLength() || !Rep.getReplacementText().empty()) // an empty insertion edits nothing
          R.Edits[realOr(Rep.getFilePath().str(), D.BuildDirectory)].insert(
              {Rep.getOffset(), Rep.getLength(), Rep.getReplacementText().str()});
  return R;
}

/// After an apply of fixes that record `R`: each source untouched, or holding exactly its edits
/// applied to its original text, and only when they could be (no conflict, one recorded digest,
/// the original's). No temporary left beside.
void checkApplied(const World &W, const std::vector<Recorded> &Rs, const std::string &What) {
  for (size_t S = 0; S < W.Sources.size(); ++S) {
    const std::string Now = readAll(W.Sources[S]);
    if (Now == W.Original[S])
      continue;
    std::set<Edit> Edits;
    std::set<std::string> Digests;
    for (const Recorded &R : Rs) {
      if (auto It = R.Edits.find(W.Sources[S]); It != R.Edits.end())
        Edits.insert(It->second.begin(), It->second.end());
      if (auto It = R.Digests.find(W.Sources[S]); It != R.Digests.end())
        Digests.insert(It->second.begin(), It->second.end());
    }
    if (anyConflict(Edits))
      fail(What + ": wrote " + W.Sources[S] + " although its edits conflict");
    if (Digests != std::set<std::string>{hexDigest(W.Original[S])})
      fail(What + ": wrote " + W.Sources[S] + " although the fixes were not computed from its contents");
    std::optional<std::string> Expected = applied(W.Original[S], Edits);
    if (!Expected || Now != *Expected)
      fail(What + ": " + W.Sources[S] + " holds neither its original text nor all of its edits");
  }
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator I(W.Dir, EC), E; I != E && !EC; I.increment(EC)) {
    llvm::StringRef Name = llvm::sys::path::filename(I->path());
    if (!(Name.ends_with(".cpp") || Name.ends_with(".yaml")) || Name.contains(".tmp") || Name.contains("amp-"))
      fail(What + ": left " + I->path() + " behind");
  }
}

void restore(const World &W) {
  for (size_t S = 0; S < W.Sources.size(); ++S)
    writeAll(W.Sources[S], W.Original[S]);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size > 8192)
    return 0;
  FuzzedDataProvider In(Data, Size);
  char Template[] = "/tmp/fuzz-merge-fixes-XXXXXX";
  char Real[4096];
  if (!::mkdtemp(Template) || !::realpath(Template, Real))
    return 0;
  World W = makeWorld(In, Real);

  std::vector<Recorded> Inputs;
  for (const std::string &F : W.FixFiles) {
    std::optional<Recorded> R = readFixes(readAll(F));
    if (R)
      Inputs.push_back(std::move(*R));
  }

  // The merge: an error naming an input, or a merged file that is safe to apply.
  std::string Merged;
  llvm::raw_string_ostream OS(Merged);
  llvm::Expected<ampmigrate::MergeOutcome> M = ampmigrate::mergeExportedFixes(W.FixFiles, OS);
  if (!M) {
    std::string Why = llvm::toString(M.takeError());
    if (!llvm::any_of(W.FixFiles, [&](const std::string &F) { return llvm::StringRef(Why).starts_with(F + ": error: "); }))
      fail("a merge error that names no input: " + Why);
  } else {
    std::optional<Recorded> Out = readFixes(Merged);
    if (!Out)
      fail("the merged file is not a fixes file:\n" + Merged);
    for (const auto &[File, Edits] : Out->Edits) {
      if (anyConflict(Edits))
        fail("the merged file holds conflicting edits of " + File);
      // Edits of a file are kept only as computed from one version of it, the one on disk; a
      // file no input records a digest of (clang-tidy's exports) keeps none in the merge either.
      std::set<std::string> InputDigests, Kept;
      for (const Recorded &R : Inputs)
        if (auto It = R.Digests.find(File); It != R.Digests.end())
          InputDigests.insert(It->second.begin(), It->second.end());
      if (auto It = Out->Digests.find(File); It != Out->Digests.end())
        Kept = It->second;
      if (InputDigests != Kept || Kept.size() > 1)
        fail("the merged file keeps edits of " + File + " whose inputs recorded other or several contents");
      if (!Kept.empty() && llvm::sys::fs::exists(File) && *Kept.begin() != hexDigest(readAll(File)))
        fail("the merged file keeps edits of " + File + ", which holds other contents");
    }
    std::string MergedPath = W.Dir + "/merged.yaml";
    writeAll(MergedPath, Merged);
    (void)ampmigrate::applyExportedFixes({MergedPath});
    checkApplied(W, {*Out}, "--apply-fixes of the merged file");
    restore(W);
    llvm::sys::fs::remove(MergedPath);
  }

  // The inputs applied directly: the same guarantees, across files.
  (void)ampmigrate::applyExportedFixes(W.FixFiles);
  checkApplied(W, Inputs, "--apply-fixes of the inputs");

  llvm::sys::fs::remove_directories(Real, /*IgnoreErrors=*/true);
  return 0;
}
