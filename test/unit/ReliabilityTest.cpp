// Unit tests of the reliability guards (issue 13): writes only over the bytes that were parsed,
// under a lock; refused files; bounded settings input; nesting-depth estimates.
#include "ampmigrate/Config.h"
#include "ampmigrate/FixApplier.h"
#include "ampmigrate/InputLimits.h"
#include "ampmigrate/Rules.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

using namespace ampmigrate;

namespace {

class GuardedRewrite : public ::testing::Test {
protected:
  llvm::SmallString<128> Dir;
  void SetUp() override { ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("amp-guarded", Dir)); }
  void TearDown() override { llvm::sys::fs::remove_directories(Dir); }
  std::string path(llvm::StringRef Name) {
    llvm::SmallString<128> P(Dir);
    llvm::sys::path::append(P, Name);
    return std::string(P);
  }
  static std::string read(llvm::StringRef Path) {
    auto Buf = llvm::MemoryBuffer::getFile(Path);
    return Buf ? (*Buf)->getBuffer().str() : "<unreadable>";
  }
  static void write(llvm::StringRef Path, llvm::StringRef Text) {
    std::error_code EC;
    llvm::raw_fd_ostream OS(Path, EC);
    ASSERT_FALSE(EC);
    OS << Text;
  }
  static auto upper() {
    return [](llvm::StringRef Old) -> llvm::Expected<std::string> { return Old.upper(); };
  }
};

TEST_F(GuardedRewrite, WritesWhenTheFileHoldsTheParsedBytes) {
  std::string P = path("a.cpp");
  write(P, "int x;\n");
  llvm::Expected<bool> W = rewriteFileIfUnchanged(P, digestOf("int x;\n"), upper());
  ASSERT_TRUE(bool(W)) << llvm::toString(W.takeError());
  EXPECT_TRUE(*W);
  EXPECT_EQ(read(P), "INT X;\n");
}

TEST_F(GuardedRewrite, RefusesAFileChangedSinceItWasParsed) {
  // Item 1: the edits were computed on other bytes; splicing them in corrupts the file.
  std::string P = path("a.cpp");
  write(P, "int y;\n");
  llvm::Expected<bool> W = rewriteFileIfUnchanged(P, digestOf("int x;\n"), upper());
  ASSERT_FALSE(bool(W));
  std::string Msg = llvm::toString(W.takeError());
  EXPECT_NE(Msg.find("changed since it was analysed"), std::string::npos) << Msg;
  EXPECT_EQ(read(P), "int y;\n");
}

TEST_F(GuardedRewrite, WaitsForTheLockAndThenSeesTheOtherWrite) {
  // Another writer holds the lock, changes the file and releases: the rewrite must wait, and then
  // refuse (it compares after taking the lock, not before).
  std::string P = path("a.cpp");
  write(P, "int x;\n");
  int FD = ::open(P.c_str(), O_RDONLY);
  ASSERT_GE(FD, 0);
  ASSERT_EQ(::flock(FD, LOCK_EX), 0);
  std::atomic<bool> Done{false};
  std::string Msg;
  std::thread T([&] {
    llvm::Expected<bool> W = rewriteFileIfUnchanged(P, digestOf("int x;\n"), upper());
    Msg = W ? std::string("written") : llvm::toString(W.takeError());
    Done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(Done) << "the rewrite did not wait for the lock";
  write(P, "int z;\n"); // same inode: the waiter's lock stays valid
  ::flock(FD, LOCK_UN);
  ::close(FD);
  T.join();
  EXPECT_NE(Msg.find("changed since it was analysed"), std::string::npos) << Msg;
  EXPECT_EQ(read(P), "int z;\n");
}

TEST_F(GuardedRewrite, RefusesReadOnlyAndHardLinkedFiles) {
  namespace fs = llvm::sys::fs;
  std::string RO = path("ro.cpp");
  write(RO, "a\n");
  ASSERT_FALSE(fs::setPermissions(RO, fs::owner_read | fs::group_read));
  llvm::Error E = writeFileAtomically(RO, "b\n");
  ASSERT_TRUE(bool(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("read-only"), std::string::npos);
  EXPECT_EQ(read(RO), "a\n");

  std::string L1 = path("l1.cpp"), L2 = path("l2.cpp");
  write(L1, "a\n");
  ASSERT_FALSE(fs::create_hard_link(L1, L2));
  E = writeFileAtomically(L1, "b\n");
  ASSERT_TRUE(bool(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("hard links"), std::string::npos);
  EXPECT_EQ(read(L2), "a\n");
}

TEST_F(GuardedRewrite, KeepsTheOwner) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "only root can give a file to another user";
  std::string P = path("a.cpp");
  write(P, "x\n");
  ASSERT_EQ(::chown(P.c_str(), 65534, 65534), 0);
  ASSERT_FALSE(bool(writeFileAtomically(P, "y\n")));
  llvm::sys::fs::file_status St;
  ASSERT_FALSE(llvm::sys::fs::status(P, St));
  EXPECT_EQ(St.getUser(), 65534u);
  EXPECT_EQ(St.getGroup(), 65534u);
  EXPECT_EQ(read(P), "y\n");
}

TEST_F(GuardedRewrite, SettingsFilesMustBeRegularAndSmall) {
  // Item 8: /dev/zero was read until the OOM killer.
  auto Z = readBoundedRegularFile("/dev/zero", "rule file");
  ASSERT_FALSE(bool(Z));
  EXPECT_NE(llvm::toString(Z.takeError()).find("/dev/zero: error: cannot read rule file: not a regular file"),
            std::string::npos);
  std::string Big = path("big.yaml");
  write(Big, std::string(100, '#'));
  auto B = readBoundedRegularFile(Big, "rule file", 10);
  ASSERT_FALSE(bool(B));
  EXPECT_NE(llvm::toString(B.takeError()).find("more than the limit of 10 bytes"), std::string::npos);
  auto Ok = readBoundedRegularFile(Big, "rule file", 100);
  ASSERT_TRUE(bool(Ok)) << llvm::toString(Ok.takeError());
  EXPECT_EQ((*Ok)->getBufferSize(), 100u);
}

TEST(NestingDepth, EstimatesBoundTheRealDepth) {
  EXPECT_EQ(jsonDepth("{\"a\": [1, {\"b\": \"[[[\"}]}"), 3u);
  EXPECT_EQ(jsonDepth("\"\\\"[\""), 0u);
  // Brackets in quotes and comments do not count; indentation and "- " entries do.
  EXPECT_LT(estimateYamlDepth("a: '[[[['\nb: \"{{{\" # [[[[\n"), 4u);
  EXPECT_GE(estimateYamlDepth("a:\n  b:\n    c: [[1]]\n"), 4u);
  EXPECT_GE(estimateYamlDepth("- - - - x\n"), 4u);
  EXPECT_TRUE(checkYamlDepth("r.yaml", "a: [1, 2]\n").empty());
  EXPECT_EQ(checkYamlDepth("r.yaml", "x: 1\ny: " + std::string(300, '[')),
            "r.yaml:2: error: nesting deeper than 256 levels (indentation, '- ' entries and "
            "brackets); not read");
}

TEST(NestingDepth, DeepRulesAndConfigurationAreErrorsNotCrashes) {
  // Item 7: 100 KB of '[' overflowed the stack in LLVM's YAML parser.
  std::string Deep = "ignore: " + std::string(100000, '[');
  auto R = parseRules("deep.yaml", Deep);
  ASSERT_FALSE(bool(R));
  EXPECT_NE(llvm::toString(R.takeError()).find("deep.yaml:1: error: nesting deeper"), std::string::npos);
  auto C = parseConfig("cfg.yaml", "Checks: " + std::string(100000, '{'));
  ASSERT_FALSE(bool(C));
  EXPECT_NE(llvm::toString(C.takeError()).find("cfg.yaml:1: error: nesting deeper"), std::string::npos);
}

TEST(RuleMerge, LongListsMergeWithoutDuplicates) {
  RuleSet A, B;
  for (int I = 0; I < 50000; ++I) {
    A.Ignore.push_back("a" + std::to_string(I));
    B.Ignore.push_back("a" + std::to_string(I * 2));
  }
  A.merge(B);
  EXPECT_EQ(A.Ignore.size(), 75000u);
  EXPECT_EQ(A.Ignore[50000], "a50000");
}

} // namespace

namespace {

// Found by fuzz-rules: an empty file made the second-document check step past the end (SEGV).
TEST(SettingsDocuments, EmptyFilesLoadAndASecondDocumentIsAnError) {
  for (const char *Text : {"", "# only a comment\n", "---\n"}) {
    auto R = parseRules("e.yaml", Text);
    EXPECT_TRUE(bool(R)) << llvm::toString(R.takeError());
    auto C = parseConfig("c.yaml", Text);
    EXPECT_TRUE(bool(C)) << llvm::toString(C.takeError());
  }
  auto R = parseRules("d.yaml", "ignore: [a]\n---\nignore: [b]\n");
  ASSERT_FALSE(bool(R));
  EXPECT_NE(llvm::toString(R.takeError()).find("more than one YAML document"), std::string::npos);
  // Found by fuzz-config: a parser error without a position was reported as "<unknown>:0:0".
  auto U = parseConfig("u.yaml", llvm::StringRef("?\n%R\0?\0", 7));
  ASSERT_FALSE(bool(U));
  EXPECT_EQ(llvm::toString(U.takeError()).rfind("u.yaml: error: ", 0), 0u);
  auto C = parseConfig("d.yaml", "Level: O1\n---\nLevel: O3\n");
  ASSERT_FALSE(bool(C));
  EXPECT_NE(llvm::toString(C.takeError()).find("more than one YAML document"), std::string::npos);
}

} // namespace

namespace {

// Rules' grad-free list (issue #37): exact names, and namespaces written with a trailing `::`.
TEST(GradFreeRules, NamesAndNamespaces) {
  auto R = parseRules("g.yaml", "grad-free:\n  - \"metrics::\"\n  - ::audit_value\n");
  ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
  EXPECT_TRUE(R->isGradFree("metrics::record"));
  EXPECT_TRUE(R->isGradFree("metrics::sub::log"));
  EXPECT_FALSE(R->isGradFree("metricsx::record")) << "a namespace, not a prefix of a name";
  EXPECT_TRUE(R->isGradFree("audit_value"));
  EXPECT_FALSE(R->isGradFree("audit_value2"));
  auto Bad = parseRules("b.yaml", "grad-free: [\"a b::\"]\n");
  ASSERT_FALSE(bool(Bad));
  EXPECT_NE(llvm::toString(Bad.takeError()).find("is not a C++ name"), std::string::npos);
}

} // namespace
