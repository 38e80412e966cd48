// Unit tests of .amp-migrate.yaml: lookup upward from a file, parsing, errors with file and line,
// rule paths relative to the configuration file.
#include "ampmigrate/Config.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

using namespace ampmigrate;

namespace {

class ConfigTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("amp-config-test", Root));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(Root); }
  std::string path(llvm::StringRef Rel) const {
    llvm::SmallString<256> P(Root);
    llvm::sys::path::append(P, Rel);
    return std::string(P);
  }
  void write(llvm::StringRef Rel, llvm::StringRef Text) {
    std::string P = path(Rel);
    llvm::sys::fs::create_directories(llvm::sys::path::parent_path(P));
    std::error_code EC;
    llvm::raw_fd_ostream OS(P, EC);
    ASSERT_FALSE(EC);
    OS << Text;
  }
  llvm::SmallString<256> Root;
};

TEST_F(ConfigTest, FoundUpwardNearestFirst) {
  write("proj/.amp-migrate.yaml", "Level: O1\n");
  write("proj/sub/.amp-migrate.yaml", "Level: O3\n");
  write("proj/sub/deep/a.cpp", "");
  write("proj/other/b.cpp", "");
  EXPECT_EQ(findConfigUpward(path("proj/sub/deep/a.cpp")), path("proj/sub/.amp-migrate.yaml"));
  EXPECT_EQ(findConfigUpward(path("proj/other/b.cpp")), path("proj/.amp-migrate.yaml"));
}

TEST_F(ConfigTest, ReadsEveryKeyAndResolvesRulePaths) {
  write("proj/.amp-migrate.yaml", "Checks: \"amp-*,-amp-zero-grad\"\n"
                                  "HeaderFilter: \"src/.*\"\n"
                                  "Level: O3\n"
                                  "Rules: [rules/corp.yaml, /abs/other.yaml]\n"
                                  "WarningsAsErrors: true\n");
  auto C = readConfig(path("proj/.amp-migrate.yaml"));
  ASSERT_TRUE(bool(C)) << llvm::toString(C.takeError());
  EXPECT_EQ(C->Path, path("proj/.amp-migrate.yaml"));
  EXPECT_EQ(C->Checks, "amp-*,-amp-zero-grad");
  EXPECT_EQ(C->HeaderFilter, "src/.*");
  EXPECT_EQ(C->Level, "O3");
  ASSERT_EQ(C->Rules.size(), 2u);
  EXPECT_EQ(C->Rules[0], path("proj/rules/corp.yaml"));
  EXPECT_EQ(C->Rules[1], "/abs/other.yaml");
  EXPECT_TRUE(C->WarningsAsErrors);
}

TEST_F(ConfigTest, UnknownKeyNamesFileLineAndColumn) {
  write("c.yaml", "Level: O2\nChekcs: foo\n");
  auto C = readConfig(path("c.yaml"));
  ASSERT_FALSE(bool(C));
  std::string Msg = llvm::toString(C.takeError());
  EXPECT_NE(Msg.find(path("c.yaml") + ":2:1: error: unknown key 'Chekcs'"), std::string::npos) << Msg;
}

TEST_F(ConfigTest, WrongTypeAndUnknownLevelAreErrors) {
  write("t.yaml", "WarningsAsErrors: sometimes\n");
  auto T = readConfig(path("t.yaml"));
  ASSERT_FALSE(bool(T));
  std::string TMsg = llvm::toString(T.takeError());
  EXPECT_NE(TMsg.find(path("t.yaml") + ":1:"), std::string::npos) << TMsg;
  write("l.yaml", "Level: O5\n");
  auto L = readConfig(path("l.yaml"));
  ASSERT_FALSE(bool(L));
  std::string LMsg = llvm::toString(L.takeError());
  EXPECT_NE(LMsg.find("unknown level 'O5' (valid: O0, O1, O2, O3)"), std::string::npos) << LMsg;
  auto Missing = readConfig(path("none.yaml"));
  ASSERT_FALSE(bool(Missing));
  EXPECT_NE(llvm::toString(Missing.takeError()).find("cannot read the configuration file"), std::string::npos);
}

TEST(Level, ParsesTheFourLevelsOnly) {
  AmpLevel L = AmpLevel::O0;
  EXPECT_TRUE(parseLevel("O3", L));
  EXPECT_EQ(L, AmpLevel::O3);
  EXPECT_TRUE(parseLevel("O1", L));
  EXPECT_EQ(L, AmpLevel::O1);
  EXPECT_FALSE(parseLevel("o2", L));
  EXPECT_FALSE(parseLevel("", L));
  EXPECT_EQ(L, AmpLevel::O1);
}

} // namespace
