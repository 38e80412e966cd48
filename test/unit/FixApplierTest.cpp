// Unit tests of fix application: whole-step units, conflict refusal, deduplication across TUs,
// CRLF and BOM preservation, and atomic writes that keep permissions.
#include "ampmigrate/FixApplier.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <map>
#include <unistd.h>

using namespace ampmigrate;
using clang::tooling::Replacement;
using clang::tooling::Replacements;

namespace {

class MapTexts : public SourceTexts {
public:
  std::map<std::string, std::string> Files;
  const std::string *get(const std::string &File) override {
    auto It = Files.find(File);
    return It == Files.end() ? nullptr : &It->second;
  }
};

Finding step(const std::string &File, unsigned Line, unsigned Col, std::vector<Replacement> Fixes) {
  Finding F;
  F.Check = "amp-autocast-scope";
  F.Pos.File = File;
  F.Pos.Line = Line;
  F.Pos.Column = Col;
  F.Fixable = true;
  F.Fixes = std::move(Fixes);
  return F;
}

std::string applied(const EditSet &Set, MapTexts &T, const std::string &File) {
  auto It = Set.ByFile.find(File);
  if (It == Set.ByFile.end())
    return T.Files[File];
  llvm::Expected<std::string> Out = applyEdits(File, T.Files[File], It->second);
  if (!Out)
    return "error: " + llvm::toString(Out.takeError());
  return *Out;
}

const char *const Header = "#pragma once\n"
                           "void f();\n";
const char *const Main = "#include \"h.h\"\n"
                         "void a() { x(); }\n"
                         "void b() { y(); }\n";

TEST(CollectEdits, SameHeaderEditFromTwoTusAppliesOnce) {
  MapTexts T;
  T.Files["h.h"] = Header;
  Report R;
  // Two TUs include h.h and both migrate it the same way, one spelling the path "./h.h".
  R.Findings.push_back(
      step("a.cpp", 1, 1, {Replacement("h.h", 13, 0, "#include <amp/torch.h>\n")}));
  R.Findings.push_back(
      step("b.cpp", 1, 1, {Replacement("./h.h", 13, 0, "#include <amp/torch.h>\n")}));
  EditSet Set = collectEdits(R, T);
  EXPECT_TRUE(Set.Refused.empty());
  ASSERT_EQ(Set.ByFile.size(), 1u);
  EXPECT_EQ(Set.ByFile["h.h"].size(), 1u);
  EXPECT_EQ(applied(Set, T, "h.h"), "#pragma once\n#include <amp/torch.h>\nvoid f();\n");
}

TEST(CollectEdits, TwoStepsInsertingTheSameIncludeInsertItOnce) {
  MapTexts T;
  T.Files["m.cpp"] = Main;
  const std::string Inc = "#include <amp/torch.h>\n";
  Report R;
  R.Findings.push_back(
      step("m.cpp", 2, 12, {Replacement("m.cpp", 15, 0, Inc), Replacement("m.cpp", 26, 1, "X")}));
  R.Findings.push_back(
      step("m.cpp", 3, 12, {Replacement("m.cpp", 15, 0, Inc), Replacement("m.cpp", 44, 1, "Y")}));
  EditSet Set = collectEdits(R, T);
  EXPECT_TRUE(Set.Refused.empty());
  EXPECT_EQ(applied(Set, T, "m.cpp"), "#include \"h.h\"\n"
                                      "#include <amp/torch.h>\n"
                                      "void a() { X(); }\n"
                                      "void b() { Y(); }\n");
}

TEST(CollectEdits, OverlappingStepIsRefusedWhole) {
  MapTexts T;
  T.Files["m.cpp"] = Main;
  Report R;
  R.Findings.push_back(step("m.cpp", 2, 12, {Replacement("m.cpp", 26, 3, "X()")}));
  // Overlaps the first step at "x(" and also wants an edit of its own on line 3: none applies.
  R.Findings.push_back(
      step("m.cpp", 2, 14, {Replacement("m.cpp", 44, 1, "Y"), Replacement("m.cpp", 27, 3, "Z")}));
  EditSet Set = collectEdits(R, T);
  ASSERT_EQ(Set.Refused.size(), 1u);
  EXPECT_EQ(Set.Refused[0], "m.cpp:2:14: conflicting edits: its edit at m.cpp:2:13 overlaps an "
                            "edit of the step at m.cpp:2:12 at m.cpp:2:12; step not migrated");
  EXPECT_EQ(applied(Set, T, "m.cpp"), "#include \"h.h\"\n"
                                      "void a() { X(); }\n"
                                      "void b() { y(); }\n");
}

TEST(CollectEdits, DifferentInsertionsAtOneOffsetConflict) {
  MapTexts T;
  T.Files["m.cpp"] = Main;
  Report R;
  R.Findings.push_back(step("m.cpp", 2, 1, {Replacement("m.cpp", 15, 0, "// one\n")}));
  R.Findings.push_back(step("m.cpp", 3, 1, {Replacement("m.cpp", 15, 0, "// two\n")}));
  EditSet Set = collectEdits(R, T);
  ASSERT_EQ(Set.Refused.size(), 1u);
  EXPECT_NE(Set.Refused[0].find("m.cpp:3:1: conflicting edits:"), std::string::npos);
  EXPECT_NE(Set.Refused[0].find("m.cpp:2:1"), std::string::npos) << Set.Refused[0];
  EXPECT_NE(Set.Refused[0].find("step not migrated"), std::string::npos);
  EXPECT_EQ(applied(Set, T, "m.cpp"), "#include \"h.h\"\n// one\nvoid a() { x(); }\n"
                                      "void b() { y(); }\n");
}

TEST(CollectEdits, StepOverlappingItselfIsRefused) {
  MapTexts T;
  T.Files["m.cpp"] = Main;
  Report R;
  R.Findings.push_back(
      step("m.cpp", 2, 1, {Replacement("m.cpp", 20, 5, "A"), Replacement("m.cpp", 22, 5, "B")}));
  EditSet Set = collectEdits(R, T);
  ASSERT_EQ(Set.Refused.size(), 1u);
  EXPECT_NE(Set.Refused[0].find("same step"), std::string::npos) << Set.Refused[0];
  EXPECT_TRUE(Set.ByFile.empty());
}

TEST(CollectEdits, AdjacentEditsDoNotConflict) {
  MapTexts T;
  T.Files["m.cpp"] = Main;
  Report R;
  R.Findings.push_back(step("m.cpp", 2, 1, {Replacement("m.cpp", 26, 1, "X")}));
  R.Findings.push_back(step("m.cpp", 2, 2, {Replacement("m.cpp", 27, 0, "/*a*/")}));
  R.Findings.push_back(step("m.cpp", 2, 3, {Replacement("m.cpp", 27, 1, "[")}));
  EditSet Set = collectEdits(R, T);
  EXPECT_TRUE(Set.Refused.empty()) << Set.Refused[0];
  EXPECT_EQ(applied(Set, T, "m.cpp"), "#include \"h.h\"\nvoid a() { X/*a*/[); }\n"
                                      "void b() { y(); }\n");
}

TEST(CollectEdits, StaleStepIsRefusedAndOthersInTheFileApply) {
  MapTexts T;
  T.Files["m.cpp"] = Main;
  Report R;
  R.Findings.push_back(step("m.cpp", 2, 1, {Replacement("m.cpp", 26, 1, "X")}));
  R.Findings.push_back(
      step("m.cpp", 3, 1, {Replacement("m.cpp", 44, 1, "Y"), Replacement("m.cpp", 500, 0, "Z")}));
  EditSet Set = collectEdits(R, T);
  ASSERT_EQ(Set.Refused.size(), 1u);
  EXPECT_EQ(Set.Refused[0], "m.cpp:3:1: edit out of range: its edit at m.cpp@500 ends past the "
                            "end of the file (51 bytes); step not migrated");
  EXPECT_EQ(applied(Set, T, "m.cpp"), "#include \"h.h\"\nvoid a() { X(); }\nvoid b() { y(); }\n");
}

// --- applyEdits ---------------------------------------------------------------------------------

Replacements reps(std::initializer_list<Replacement> List) {
  Replacements Out;
  for (const Replacement &R : List)
    llvm::cantFail(Out.add(R));
  return Out;
}

TEST(ApplyEdits, KeepsCrlf) {
  std::string Text = "a\r\nb\r\nc\r\n";
  llvm::Expected<std::string> Out = applyEdits(
      "w.cpp", Text,
      reps({Replacement("w.cpp", 3, 1, "x\ny"), Replacement("w.cpp", 9, 0, "tail\r\nmore\n")}));
  ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  EXPECT_EQ(*Out, "a\r\nx\r\ny\r\nc\r\ntail\r\nmore\r\n");
}

TEST(ApplyEdits, LfFilesStayLf) {
  llvm::Expected<std::string> Out =
      applyEdits("u.cpp", "a\nb\r\nc\n", reps({Replacement("u.cpp", 0, 0, "x\n")}));
  ASSERT_TRUE(bool(Out));
  EXPECT_EQ(*Out, "x\na\nb\r\nc\n");
}

TEST(ApplyEdits, TieGoesToTheFirstLineEnding) {
  llvm::Expected<std::string> Out =
      applyEdits("t.cpp", "a\r\nb\n", reps({Replacement("t.cpp", 0, 0, "x\n")}));
  ASSERT_TRUE(bool(Out));
  EXPECT_EQ(*Out, "x\r\na\r\nb\n");
}

TEST(ApplyEdits, NeverTouchesTheBom) {
  std::string Bom = "\xEF\xBB\xBF";
  std::string Text = Bom + "int x;\n";
  llvm::Expected<std::string> Out =
      applyEdits("b.cpp", Text, reps({Replacement("b.cpp", 0, 0, "#include <amp/torch.h>\n")}));
  ASSERT_TRUE(bool(Out));
  EXPECT_EQ(*Out, Bom + "#include <amp/torch.h>\nint x;\n");
  // A replacement starting inside the BOM is clipped to start after it.
  Out = applyEdits("b.cpp", Text, reps({Replacement("b.cpp", 1, 5, "long")}));
  ASSERT_TRUE(bool(Out));
  EXPECT_EQ(*Out, Bom + "long x;\n");
  // Offsets past the BOM are clang's and land where they say.
  Out = applyEdits("b.cpp", Text, reps({Replacement("b.cpp", 7, 1, "y")}));
  ASSERT_TRUE(bool(Out));
  EXPECT_EQ(*Out, Bom + "int y;\n");
}

TEST(ApplyEdits, OutOfRangeNamesTheFile) {
  llvm::Expected<std::string> Out =
      applyEdits("short.cpp", "abc", reps({Replacement("short.cpp", 2, 5, "x")}));
  ASSERT_FALSE(bool(Out));
  std::string Msg = llvm::toString(Out.takeError());
  EXPECT_NE(Msg.find("short.cpp"), std::string::npos) << Msg;
}

// --- writeFileAtomically ------------------------------------------------------------------------

std::string readFile(llvm::StringRef Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path);
  return Buf ? (*Buf)->getBuffer().str() : "<unreadable>";
}

class AtomicWrite : public ::testing::Test {
protected:
  llvm::SmallString<128> Dir;
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("amp-atomic-write", Dir));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(Dir); }
  std::string path(llvm::StringRef Name) {
    llvm::SmallString<128> P(Dir);
    llvm::sys::path::append(P, Name);
    return std::string(P);
  }
  unsigned entries() {
    unsigned N = 0;
    std::error_code EC;
    for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC; It.increment(EC))
      ++N;
    return N;
  }
};

TEST_F(AtomicWrite, ReplacesContentsAndKeepsPermissions) {
  std::string P = path("train.cpp");
  ASSERT_FALSE(writeFileAtomically(P, "old\n"));
  namespace fs = llvm::sys::fs;
  fs::perms Mode = fs::owner_read | fs::owner_write | fs::owner_exe | fs::group_read;
  ASSERT_FALSE(fs::setPermissions(P, Mode));

  llvm::Error Err = writeFileAtomically(P, "new\n");
  ASSERT_FALSE(bool(Err)) << llvm::toString(std::move(Err));
  EXPECT_EQ(readFile(P), "new\n");
  llvm::ErrorOr<fs::perms> Now = fs::getPermissions(P);
  ASSERT_TRUE(bool(Now));
  EXPECT_EQ(*Now, Mode);
  EXPECT_EQ(entries(), 1u) << "temporary file left behind";
}

TEST_F(AtomicWrite, WritesThroughSymlinks) {
  std::string Target = path("real.cpp"), Link = path("link.cpp");
  ASSERT_FALSE(writeFileAtomically(Target, "old\n"));
  ASSERT_FALSE(llvm::sys::fs::create_link("real.cpp", Link));
  ASSERT_FALSE(writeFileAtomically(Link, "new\n"));
  EXPECT_TRUE(llvm::sys::fs::is_symlink_file(Link));
  EXPECT_EQ(readFile(Target), "new\n");
}

TEST_F(AtomicWrite, FailureNamesThePathAndLeavesNoTemporary) {
  std::string P = path("missing-dir/x.cpp");
  llvm::Error Err = writeFileAtomically(P, "x");
  ASSERT_TRUE(bool(Err));
  std::string Msg = llvm::toString(std::move(Err));
  EXPECT_NE(Msg.find(P), std::string::npos) << Msg;
  EXPECT_EQ(entries(), 0u);
}

TEST_F(AtomicWrite, FailedRenameRemovesTheTemporary) {
  // Renaming a file over a directory fails even for root: the late failure path.
  std::string P = path("dir.cpp");
  ASSERT_FALSE(llvm::sys::fs::create_directory(P));
  llvm::Error Err = writeFileAtomically(P, "x");
  ASSERT_TRUE(bool(Err));
  EXPECT_NE(llvm::toString(std::move(Err)).find(P), std::string::npos);
  EXPECT_TRUE(llvm::sys::fs::is_directory(P));
  EXPECT_EQ(entries(), 1u) << "temporary file left behind";
}

TEST_F(AtomicWrite, ReadOnlyDirectoryFailsCleanly) {
  if (::getuid() == 0)
    GTEST_SKIP() << "root ignores directory permissions";
  std::string P = path("ro.cpp");
  ASSERT_FALSE(writeFileAtomically(P, "old\n"));
  namespace fs = llvm::sys::fs;
  ASSERT_FALSE(fs::setPermissions(Dir, fs::owner_read | fs::owner_exe));
  llvm::Error Err = writeFileAtomically(P, "new\n");
  ASSERT_FALSE(fs::setPermissions(Dir, fs::owner_all));
  ASSERT_TRUE(bool(Err));
  EXPECT_NE(llvm::toString(std::move(Err)).find(P), std::string::npos);
  EXPECT_EQ(readFile(P), "old\n");
  EXPECT_EQ(entries(), 1u);
}

} // namespace
