// Unit tests of --diff output: golden hunks, "\ No newline at end of file", and round trips
// through the real `patch -p1`.
#include "ampmigrate/FixApplier.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <random>

using namespace ampmigrate;

namespace {

TEST(UnifiedDiff, EqualTextsGiveNothing) {
  EXPECT_EQ(unifiedDiff("a.cpp", "x\ny\n", "x\ny\n"), "");
}

TEST(UnifiedDiff, OneHunkWithThreeLinesOfContext) {
  std::string Old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  std::string New = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
  EXPECT_EQ(unifiedDiff("src/a.cpp", Old, New), "--- a/src/a.cpp\n"
                                                "+++ b/src/a.cpp\n"
                                                "@@ -2,7 +2,7 @@\n"
                                                " 2\n"
                                                " 3\n"
                                                " 4\n"
                                                "-5\n"
                                                "+five\n"
                                                " 6\n"
                                                " 7\n"
                                                " 8\n");
}

TEST(UnifiedDiff, DistantChangesMakeTwoHunks) {
  std::string Old, New;
  for (int I = 1; I <= 20; ++I) {
    Old += std::to_string(I) + "\n";
    New += (I == 2 ? "two" : I == 18 ? "eighteen" : std::to_string(I)) + "\n";
  }
  EXPECT_EQ(unifiedDiff("a", Old, New), "--- a/a\n+++ b/a\n"
                                        "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
                                        "@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n"
                                        " 19\n 20\n");
}

TEST(UnifiedDiff, InsertionAtTheStartAndPureDeletion) {
  // Same hunks as GNU `diff -u`.
  EXPECT_EQ(unifiedDiff("a", "x\n", "inc\nx\n"), "--- a/a\n+++ b/a\n@@ -1 +1,2 @@\n+inc\n x\n");
  EXPECT_EQ(unifiedDiff("a", "x\ny\n", "x\n"), "--- a/a\n+++ b/a\n@@ -1,2 +1 @@\n x\n-y\n");
  EXPECT_EQ(unifiedDiff("a", "", "new\n"), "--- a/a\n+++ b/a\n@@ -0,0 +1 @@\n+new\n");
}

TEST(UnifiedDiff, NoNewlineAtEndOfFile) {
  EXPECT_EQ(unifiedDiff("a", "x\ny", "x\ny\n"), "--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n x\n-y\n"
                                                "\\ No newline at end of file\n+y\n");
  EXPECT_EQ(unifiedDiff("a", "x\ny", "z\ny"),
            "--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n-x\n+z\n y\n\\ No newline at end of file\n");
}

TEST(UnifiedDiff, AbsolutePathBelowTheCurrentDirectoryIsMadeRelative) {
  llvm::SmallString<256> Abs;
  ASSERT_FALSE(llvm::sys::fs::current_path(Abs));
  llvm::sys::path::append(Abs, "src", "x.cpp");
  std::string D = unifiedDiff(Abs, "a\n", "b\n");
  EXPECT_EQ(D.substr(0, D.find("@@")), "--- a/src/x.cpp\n+++ b/src/x.cpp\n");
}

// --- round trips through patch -------------------------------------------------------------------

std::string readFile(llvm::StringRef Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path);
  return Buf ? (*Buf)->getBuffer().str() : "<unreadable>";
}

void writeFile(llvm::StringRef Path, llvm::StringRef Text) {
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  ASSERT_FALSE(EC) << Path.str();
  OS << Text;
}

/// Writes `Old` as <dir>/src/f.cpp, patches it with our diff using `patch -p1`, and returns the
/// result (or patch's complaint).
std::string patchedWithPatch(const std::string &Old, const std::string &New) {
  llvm::SmallString<128> Dir;
  if (llvm::sys::fs::createUniqueDirectory("amp-diff", Dir))
    return "<no temp dir>";
  llvm::SmallString<128> Src(Dir), Patch(Dir);
  llvm::sys::path::append(Src, "src");
  llvm::sys::fs::create_directory(Src);
  llvm::sys::path::append(Src, "f.cpp");
  llvm::sys::path::append(Patch, "fix.patch");
  writeFile(Src, Old);
  writeFile(Patch, unifiedDiff("src/f.cpp", Old, New));
  std::string Msg;
  llvm::StringRef Args[] = {AMP_PATCH_EXECUTABLE, "-p1", "-s", "--batch", "-d", Dir, "-i", Patch};
  int RC = llvm::sys::ExecuteAndWait(AMP_PATCH_EXECUTABLE, Args, std::nullopt, {}, 60, 0, &Msg);
  std::string Result =
      RC == 0 ? readFile(Src)
              : "<patch failed: " + std::to_string(RC) + " " + Msg + ">\n" + readFile(Patch);
  llvm::sys::fs::remove_directories(Dir);
  return Result;
}

class PatchRoundTrip : public ::testing::Test {
protected:
  void SetUp() override {
    if (!llvm::sys::fs::can_execute(AMP_PATCH_EXECUTABLE))
      GTEST_SKIP() << "patch not found";
  }
};

TEST_F(PatchRoundTrip, MigrationShapedEdit) {
  std::string Old = "#include <torch/torch.h>\n\nint main() {\n  for (;;) {\n"
                    "    torch::autocast::set_enabled(true);\n    auto y = model(x);\n"
                    "    torch::autocast::set_enabled(false);\n    scaler.scale(loss).backward();\n"
                    "  }\n}\n";
  std::string New = "#include <torch/torch.h>\n#include <amp/torch.h>\n\nint main() {\n"
                    "  for (;;) {\n    {\n      amp::AutocastGuard guard;\n"
                    "      auto y = model(x);\n    }\n    amp.backward(loss);\n  }\n}\n";
  EXPECT_EQ(patchedWithPatch(Old, New), New);
}

TEST_F(PatchRoundTrip, CrlfAndMissingFinalNewline) {
  std::string Old = "a\r\nb\r\nc\r\nd";
  std::string New = "a\r\nB\r\nc\r\nd\r\ne";
  EXPECT_EQ(patchedWithPatch(Old, New), New);
}

TEST_F(PatchRoundTrip, RandomEdits) {
  std::mt19937 Rng(1234);
  for (int Round = 0; Round < 40; ++Round) {
    std::vector<std::string> Lines;
    int N = Rng() % 60;
    for (int I = 0; I < N; ++I)
      Lines.push_back("line " + std::to_string(Rng() % 8)); // repeats make matching ambiguous
    std::vector<std::string> Edited = Lines;
    int Edits = 1 + Rng() % 6;
    for (int E = 0; E < Edits; ++E) {
      unsigned At = Edited.empty() ? 0 : Rng() % (Edited.size() + 1);
      switch (Rng() % 3) {
      case 0:
        Edited.insert(Edited.begin() + At, "new " + std::to_string(E));
        break;
      case 1:
        if (At < Edited.size())
          Edited.erase(Edited.begin() + At);
        break;
      default:
        if (At < Edited.size())
          Edited[At] = "changed " + std::to_string(E);
      }
    }
    auto Join = [&](const std::vector<std::string> &L, bool FinalNewline) {
      std::string S;
      for (size_t I = 0; I < L.size(); ++I)
        S += L[I] + (I + 1 < L.size() || FinalNewline ? "\n" : "");
      return S;
    };
    std::string Old = Join(Lines, Rng() % 4 != 0), New = Join(Edited, Rng() % 4 != 0);
    if (Old == New)
      continue;
    ASSERT_EQ(patchedWithPatch(Old, New), New) << "round " << Round << "\n"
                                               << unifiedDiff("src/f.cpp", Old, New);
  }
}

TEST(UnifiedDiff, LargeRewriteStaysCorrect) {
  // Completely different long texts exercise the memory cap's fallback.
  std::string Old, New;
  for (int I = 0; I < 6000; ++I) {
    Old += "old " + std::to_string(I) + "\n";
    New += "new " + std::to_string(I) + "\n";
  }
  std::string D = unifiedDiff("a", Old, New);
  EXPECT_NE(D.find("\n@@ -1,6000 +1,6000 @@\n"), std::string::npos);
  EXPECT_EQ(std::count(D.begin(), D.end(), '\n'), 2 + 1 + 12000);
}

} // namespace
