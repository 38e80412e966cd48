// Unit tests of the report formats: golden text for the line formats, parsed-back JSON/SARIF/YAML
// for the structured ones, and clang-apply-replacements run on the exported fixes.
#include "ampmigrate/Emitters.h"
#include "ampmigrate/FixApplier.h"
#include "ampmigrate/Checks.h"
#include "clang/Tooling/DiagnosticsYaml.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/YAMLTraits.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <map>

using namespace ampmigrate;
using clang::tooling::Replacement;

namespace {

class MapTexts : public SourceTexts {
public:
  std::map<std::string, std::string> Files;
  const std::string *get(const std::string &File) override {
    auto It = Files.find(File);
    return It == Files.end() ? nullptr : &It->second;
  }
};

const char *const TrainCpp = "int main() {\n"
                             "\tfoo(1);\n"
                             "  bar();\n"
                             "}\n";

SourcePos pos(const std::string &File, unsigned Line, unsigned Col, unsigned Offset) {
  SourcePos P;
  P.File = File;
  P.Line = Line;
  P.Column = Col;
  P.Offset = Offset;
  return P;
}

/// One finding at "\tfoo(1);" with a note at "bar();" and (optionally) the step's fixes.
Report sampleReport(bool WithFixes) {
  Report R;
  Finding F;
  F.Check = "amp-autocast-scope";
  F.Pos = pos("src/train.cpp", 2, 2, 14);
  F.Message = "autocast scope can use amp::autocast";
  F.Notes.push_back({pos("src/train.cpp", 3, 3, 23), "scope ends here"});
  F.StepId = "src/train.cpp:14";
  F.Fixable = WithFixes;
  if (WithFixes) {
    F.Fixes.emplace_back("src/train.cpp", 0, 0, "#include <amp/torch.h>\n");
    F.Fixes.emplace_back("src/train.cpp", 14, 3, "amp::foo");
  }
  R.Findings.push_back(F);
  FileOutcome Scanned;
  Scanned.File = "src/train.cpp";
  R.Files.push_back(Scanned);
  return R;
}

MapTexts sampleTexts() {
  MapTexts T;
  T.Files["src/train.cpp"] = TrainCpp;
  return T;
}

template <typename Fn> std::string capture(Fn &&Emit) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  Emit(OS);
  return S;
}

llvm::json::Value parseJson(llvm::StringRef S) {
  llvm::Expected<llvm::json::Value> V = llvm::json::parse(S);
  EXPECT_TRUE(bool(V)) << (V ? "" : llvm::toString(V.takeError()));
  return V ? std::move(*V) : llvm::json::Value(nullptr);
}

TEST(LineAndColumn, CountsBytesFromOne) {
  llvm::StringRef Text = "ab\n\tc\r\nd";
  EXPECT_EQ(lineAndColumn(Text, 0), std::make_pair(1u, 1u));
  EXPECT_EQ(lineAndColumn(Text, 2), std::make_pair(1u, 3u));
  EXPECT_EQ(lineAndColumn(Text, 3), std::make_pair(2u, 1u));
  EXPECT_EQ(lineAndColumn(Text, 4), std::make_pair(2u, 2u));
  EXPECT_EQ(lineAndColumn(Text, 7), std::make_pair(3u, 1u));
  EXPECT_EQ(lineAndColumn(Text, 8), std::make_pair(3u, 2u));
  // Past the end clamps to the end rather than inventing a line.
  EXPECT_EQ(lineAndColumn(Text, 100), std::make_pair(3u, 2u));
}

TEST(TextEmitter, ClangStyleWithTabsAndNotes) {
  MapTexts T = sampleTexts();
  std::string Out =
      capture([&](llvm::raw_ostream &OS) { emitText(sampleReport(false), T, OS, EmitOptions()); });
  EXPECT_EQ(Out, "src/train.cpp:2:2: warning: autocast scope can use amp::autocast "
                 "[amp-autocast-scope]\n"
                 "\tfoo(1);\n"
                 "\t^\n"
                 "src/train.cpp:3:3: note: scope ends here\n"
                 "  bar();\n"
                 "  ^\n"
                 "1 warning generated.\n");
}

TEST(TextEmitter, NothingForAnEmptyReport) {
  MapTexts T;
  EXPECT_EQ(capture([&](llvm::raw_ostream &OS) { emitText(Report(), T, OS, EmitOptions()); }), "");
}

TEST(TextEmitter, CountsWarningsAndErrorsLikeClang) {
  MapTexts T; // no texts: diagnostics without snippets
  Report R = sampleReport(false);
  R.Findings.push_back(R.Findings.front());
  R.Findings.push_back(R.Findings.front());
  R.Findings.back().Level = Severity::Error;
  R.Findings.back().Notes.clear();
  std::string Out = capture([&](llvm::raw_ostream &OS) { emitText(R, T, OS, EmitOptions()); });
  EXPECT_NE(Out.find("src/train.cpp:2:2: error: autocast scope"), std::string::npos);
  EXPECT_TRUE(llvm::StringRef(Out).ends_with("\n2 warnings and 1 error generated.\n")) << Out;
}

TEST(TextEmitter, CaretSkipsUtf8ContinuationBytes) {
  MapTexts T;
  T.Files["u.cpp"] = "/*\xC3\xA9*/ x;\n";
  Report R;
  Finding F;
  F.Check = "c";
  F.Pos = pos("u.cpp", 1, 8, 7);
  F.Message = "m";
  R.Findings.push_back(F);
  std::string Out = capture([&](llvm::raw_ostream &OS) { emitText(R, T, OS, EmitOptions()); });
  EXPECT_NE(Out.find("/*\xC3\xA9*/ x;\n      ^\n"), std::string::npos) << Out;
}

TEST(TextEmitter, BomIsNotShown) {
  MapTexts T;
  T.Files["b.cpp"] = "\xEF\xBB\xBFint x;\n";
  Report R;
  Finding F;
  F.Check = "c";
  F.Pos = pos("b.cpp", 1, 8, 7); // clang counts the BOM's three bytes
  F.Message = "m";
  R.Findings.push_back(F);
  std::string Out = capture([&](llvm::raw_ostream &OS) { emitText(R, T, OS, EmitOptions()); });
  EXPECT_NE(Out.find("\nint x;\n    ^\n"), std::string::npos) << Out;
}

TEST(TextEmitter, Colors) {
  MapTexts T = sampleTexts();
  EmitOptions O;
  O.Color = true;
  std::string Out =
      capture([&](llvm::raw_ostream &OS) { emitText(sampleReport(false), T, OS, O); });
  EXPECT_NE(Out.find("\033[1msrc/train.cpp:2:2: \033[0;1;35mwarning:\033[0m\033[1m autocast"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("\033[0;1;32m\t^\033[0m\n"), std::string::npos);
  EXPECT_NE(Out.find("\033[0;1;36mnote:"), std::string::npos);
  Report R = sampleReport(false);
  R.Findings[0].Level = Severity::Error;
  Out = capture([&](llvm::raw_ostream &OS) { emitText(R, T, OS, O); });
  EXPECT_NE(Out.find("\033[0;1;31merror:"), std::string::npos);
}

TEST(TextEmitter, ShowFixesPrintsRewrittenLines) {
  MapTexts T = sampleTexts();
  EmitOptions O;
  O.ShowFixes = true;
  std::string Out = capture([&](llvm::raw_ostream &OS) { emitText(sampleReport(true), T, OS, O); });
  EXPECT_EQ(Out, "src/train.cpp:2:2: warning: autocast scope can use amp::autocast "
                 "[amp-autocast-scope]\n"
                 "\tfoo(1);\n"
                 "\t^\n"
                 "src/train.cpp:3:3: note: scope ends here\n"
                 "  bar();\n"
                 "  ^\n"
                 "fixed: src/train.cpp:1-2:\n"
                 "#include <amp/torch.h>\n"
                 "int main() {\n"
                 "\tamp::foo(1);\n"
                 "1 warning generated.\n");
}

TEST(TextEmitter, ShowFixesSeparatesDistantEditsAndMarksRemovals) {
  MapTexts T;
  T.Files["a.cpp"] = "l1\nl2\nl3\nl4\nl5\nl6\n";
  Report R;
  Finding F;
  F.Check = "c";
  F.Pos = pos("a.cpp", 1, 1, 0);
  F.Message = "m";
  F.Fixes.emplace_back("a.cpp", 0, 2, "L1");
  F.Fixes.emplace_back("a.cpp", 12, 6, ""); // deletes "l5\nl6\n"
  R.Findings.push_back(F);
  EmitOptions O;
  O.ShowFixes = true;
  std::string Out = capture([&](llvm::raw_ostream &OS) { emitText(R, T, OS, O); });
  EXPECT_NE(Out.find("fixed: a.cpp:1:\nL1\nfixed: a.cpp:5-6: (removed)\n"), std::string::npos)
      << Out;
}

TEST(FixitEmitter, ParseableFixitLinesAfterTheDiagnostic) {
  MapTexts T = sampleTexts();
  std::string Out =
      capture([&](llvm::raw_ostream &OS) { emitFixits(sampleReport(true), T, OS, EmitOptions()); });
  EXPECT_EQ(Out, "src/train.cpp:2:2: warning: autocast scope can use amp::autocast "
                 "[amp-autocast-scope]\n"
                 "\tfoo(1);\n"
                 "\t^\n"
                 "fix-it:\"src/train.cpp\":{1:1-1:1}:\"#include <amp/torch.h>\\n\"\n"
                 "fix-it:\"src/train.cpp\":{2:2-2:5}:\"amp::foo\"\n"
                 "src/train.cpp:3:3: note: scope ends here\n"
                 "  bar();\n"
                 "  ^\n"
                 "1 warning generated.\n");
}

TEST(FixitEmitter, EscapesLikeClang) {
  MapTexts T;
  T.Files["q\"x.cpp"] = "abc\ndef\n";
  Report R;
  Finding F;
  F.Check = "c";
  F.Pos = pos("q\"x.cpp", 1, 1, 0);
  F.Message = "m";
  F.Fixes.emplace_back("q\"x.cpp", 2, 3, "\"s\"\t\\\x01");
  R.Findings.push_back(F);
  std::string Out = capture([&](llvm::raw_ostream &OS) { emitFixits(R, T, OS, EmitOptions()); });
  EXPECT_NE(Out.find("fix-it:\"q\\\"x.cpp\":{1:3-2:2}:\"\\\"s\\\"\\t\\\\\\001\"\n"),
            std::string::npos)
      << Out;
}

TEST(GithubEmitter, WorkflowCommandsWithEscaping) {
  Report R = sampleReport(false);
  R.Findings[0].Pos.File = "dir,x/a:b.cpp";
  R.Findings[0].Message = "50% done\r\nnext";
  R.Findings[0].Notes.clear();
  R.Findings.push_back(sampleReport(false).Findings[0]);
  R.Findings[1].Level = Severity::Error;
  std::string Out = capture([&](llvm::raw_ostream &OS) { emitGithub(R, OS); });
  EXPECT_EQ(Out, "::warning file=dir%2Cx/a%3Ab.cpp,line=2,col=2,title=amp-autocast-scope::"
                 "50%25 done%0D%0Anext\n"
                 "::error file=src/train.cpp,line=2,col=2,title=amp-autocast-scope::"
                 "autocast scope can use amp::autocast%0Anote: src/train.cpp:3:3: scope ends "
                 "here\n");
}

TEST(JsonEmitter, FindingsAndSummary) {
  MapTexts T = sampleTexts();
  Report R = sampleReport(true);
  Finding Plain = sampleReport(false).Findings[0];
  Plain.Check = "amp-scaler-step";
  Plain.StepId.clear();
  R.Findings.push_back(Plain);
  FileOutcome Skipped, Failed;
  Skipped.File = "gen.cpp";
  Skipped.Status = FileOutcome::State::Skipped;
  Failed.File = "bad.cpp";
  Failed.Status = FileOutcome::State::Failed;
  R.Files.push_back(Skipped);
  R.Files.push_back(Failed);

  std::string Out = capture([&](llvm::raw_ostream &OS) { emitJson(R, T, OS, EmitOptions()); });
  llvm::json::Value V = parseJson(Out);
  const llvm::json::Object *Doc = V.getAsObject();
  ASSERT_TRUE(Doc);
  EXPECT_EQ(Doc->getInteger("version"), 1);
  const llvm::json::Array *Findings = Doc->getArray("findings");
  ASSERT_TRUE(Findings);
  ASSERT_EQ(Findings->size(), 2u);
  const llvm::json::Object &F = *(*Findings)[0].getAsObject();
  EXPECT_EQ(F.getString("check"), "amp-autocast-scope");
  EXPECT_EQ(F.getString("file"), "src/train.cpp");
  EXPECT_EQ(F.getInteger("line"), 2);
  EXPECT_EQ(F.getInteger("column"), 2);
  EXPECT_EQ(F.getString("severity"), "warning");
  EXPECT_EQ(F.getString("message"), "autocast scope can use amp::autocast");
  EXPECT_EQ(F.getBoolean("fixable"), true);
  EXPECT_EQ(F.getString("step"), "src/train.cpp:14");
  const llvm::json::Object &N = *F.getArray("notes")->front().getAsObject();
  EXPECT_EQ(N.getString("message"), "scope ends here");
  EXPECT_EQ(N.getInteger("line"), 3);
  const llvm::json::Array &Fixes = *F.getArray("fixes");
  ASSERT_EQ(Fixes.size(), 2u);
  const llvm::json::Object &Fix = *Fixes[1].getAsObject();
  EXPECT_EQ(Fix.getString("file"), "src/train.cpp");
  EXPECT_EQ(Fix.getInteger("offset"), 14);
  EXPECT_EQ(Fix.getInteger("length"), 3);
  EXPECT_EQ(Fix.getString("replacement"), "amp::foo");
  EXPECT_EQ(Fix.getObject("start")->getInteger("line"), 2);
  EXPECT_EQ(Fix.getObject("start")->getInteger("column"), 2);
  EXPECT_EQ(Fix.getObject("end")->getInteger("column"), 5);
  const llvm::json::Object &G = *(*Findings)[1].getAsObject();
  EXPECT_TRUE(G.get("step")->getAsNull());
  EXPECT_EQ(G.getArray("fixes")->size(), 0u);

  const llvm::json::Object &S = *Doc->getObject("summary");
  EXPECT_EQ(S.getInteger("findings"), 2);
  EXPECT_EQ(S.getInteger("fixable"), 1);
  EXPECT_EQ(S.getObject("by_check")->getInteger("amp-autocast-scope"), 1);
  EXPECT_EQ(S.getObject("by_check")->getInteger("amp-scaler-step"), 1);
  EXPECT_EQ(S.getObject("files")->getInteger("scanned"), 1);
  EXPECT_EQ(S.getObject("files")->getInteger("skipped"), 1);
  EXPECT_EQ(S.getObject("files")->getInteger("failed"), 1);
}

TEST(JsonEmitter, EmptyReport) {
  MapTexts T;
  llvm::json::Value V =
      parseJson(capture([&](llvm::raw_ostream &OS) { emitJson(Report(), T, OS, EmitOptions()); }));
  const llvm::json::Object *Doc = V.getAsObject();
  ASSERT_TRUE(Doc);
  EXPECT_EQ(Doc->getArray("findings")->size(), 0u);
  EXPECT_EQ(Doc->getObject("summary")->getInteger("findings"), 0);
}

// --- SARIF -------------------------------------------------------------------------------------

const llvm::json::Object &sarifRun(const llvm::json::Value &V) {
  return *V.getAsObject()->getArray("runs")->front().getAsObject();
}

TEST(SarifEmitter, DocumentRulesAndResults) {
  MapTexts T = sampleTexts();
  Report R = sampleReport(true);
  // A check the catalogue knows (when it has any) and one it does not.
  llvm::StringRef Known = allChecks().empty() ? "" : allChecks().front().Id;
  if (!Known.empty())
    R.Findings[0].Check = Known.str();
  Finding Unknown = sampleReport(false).Findings[0];
  Unknown.Check = "x-not-in-catalogue";
  Unknown.Level = Severity::Error;
  R.Findings.push_back(Unknown);

  EmitOptions O;
  O.ToolVersion = "0.1.0";
  O.DocsBaseUri = "https://example.org/amp/";
  llvm::json::Value V = parseJson(capture([&](llvm::raw_ostream &OS) { emitSarif(R, T, OS, O); }));
  const llvm::json::Object &Doc = *V.getAsObject();
  EXPECT_EQ(Doc.getString("$schema"), "https://json.schemastore.org/sarif-2.1.0.json");
  EXPECT_EQ(Doc.getString("version"), "2.1.0");
  const llvm::json::Object &Run = sarifRun(V);
  const llvm::json::Object &Driver = *Run.getObject("tool")->getObject("driver");
  EXPECT_EQ(Driver.getString("name"), "amp-migrate");
  EXPECT_EQ(Driver.getString("version"), "0.1.0");
  EXPECT_EQ(Driver.getString("informationUri"), "https://example.org/amp/");
  EXPECT_TRUE(Run.getObject("originalUriBaseIds")->getObject("%SRCROOT%"));

  const llvm::json::Array &Rules = *Driver.getArray("rules");
  const llvm::json::Array &Results = *Run.getArray("results");
  ASSERT_EQ(Results.size(), 2u);
  for (const llvm::json::Value &RV : Results) {
    const llvm::json::Object &Res = *RV.getAsObject();
    std::optional<int64_t> Index = Res.getInteger("ruleIndex");
    ASSERT_TRUE(Index);
    ASSERT_LT(size_t(*Index), Rules.size());
    const llvm::json::Object &Rule = *Rules[*Index].getAsObject();
    EXPECT_EQ(Rule.getString("id"), Res.getString("ruleId"));
    std::string Id = Rule.getString("id")->str();
    EXPECT_EQ(Rule.getString("helpUri"), "https://example.org/amp/" + checkDocPath(Id));
    EXPECT_TRUE(Rule.getObject("help")->getString("text"));
    if (const CheckInfo *C = findCheck(Id)) {
      EXPECT_EQ(Rule.getObject("shortDescription")->getString("text"), C->Summary);
    }
  }
  // Only the checks in use become rules.
  EXPECT_EQ(Rules.size(), Known.empty() ? 2u : 2u);

  const llvm::json::Object &First = *Results[0].getAsObject();
  EXPECT_EQ(First.getString("level"), "warning");
  EXPECT_EQ(Results[1].getAsObject()->getString("level"), "error");
  EXPECT_EQ(First.getObject("message")->getString("text"), "autocast scope can use amp::autocast");
  const llvm::json::Object &Phys =
      *First.getArray("locations")->front().getAsObject()->getObject("physicalLocation");
  EXPECT_EQ(Phys.getObject("artifactLocation")->getString("uri"), "src/train.cpp");
  EXPECT_EQ(Phys.getObject("artifactLocation")->getString("uriBaseId"), "%SRCROOT%");
  const llvm::json::Object &Region = *Phys.getObject("region");
  EXPECT_EQ(Region.getInteger("startLine"), 2);
  EXPECT_EQ(Region.getInteger("startColumn"), 2);
  EXPECT_EQ(Region.getInteger("endLine"), 2);
  EXPECT_EQ(Region.getInteger("endColumn"), 5); // "foo"
  const llvm::json::Object &Rel = *First.getArray("relatedLocations")->front().getAsObject();
  EXPECT_EQ(Rel.getObject("message")->getString("text"), "scope ends here");
  EXPECT_EQ(Rel.getObject("physicalLocation")->getObject("region")->getInteger("startLine"), 3);
  EXPECT_TRUE(First.getObject("partialFingerprints")->getString("ampMigrate/v1"));

  const llvm::json::Object &Fix = *First.getArray("fixes")->front().getAsObject();
  EXPECT_TRUE(Fix.getObject("description")->getString("text"));
  const llvm::json::Object &Change = *Fix.getArray("artifactChanges")->front().getAsObject();
  EXPECT_EQ(Change.getObject("artifactLocation")->getString("uri"), "src/train.cpp");
  const llvm::json::Array &Reps = *Change.getArray("replacements");
  ASSERT_EQ(Reps.size(), 2u);
  const llvm::json::Object &Insert = *Reps[0].getAsObject();
  const llvm::json::Object &Empty = *Insert.getObject("deletedRegion");
  EXPECT_EQ(Empty.getInteger("startLine"), 1);
  EXPECT_EQ(Empty.getInteger("startColumn"), 1);
  EXPECT_EQ(Empty.getInteger("endLine"), 1);
  EXPECT_EQ(Empty.getInteger("endColumn"), 1);
  EXPECT_EQ(Insert.getObject("insertedContent")->getString("text"), "#include <amp/torch.h>\n");
  const llvm::json::Object &Deleted = *Reps[1].getAsObject()->getObject("deletedRegion");
  EXPECT_EQ(Deleted.getInteger("startLine"), 2);
  EXPECT_EQ(Deleted.getInteger("startColumn"), 2);
  EXPECT_EQ(Deleted.getInteger("endLine"), 2);
  EXPECT_EQ(Deleted.getInteger("endColumn"), 5);
  EXPECT_FALSE(Results[1].getAsObject()->get("fixes"));
}

TEST(SarifEmitter, RelativeHelpUriWithoutDocsBase) {
  MapTexts T = sampleTexts();
  llvm::json::Value V = parseJson(capture(
      [&](llvm::raw_ostream &OS) { emitSarif(sampleReport(false), T, OS, EmitOptions()); }));
  const llvm::json::Object &Driver = *sarifRun(V).getObject("tool")->getObject("driver");
  EXPECT_FALSE(Driver.get("informationUri"));
  EXPECT_EQ(Driver.getArray("rules")->front().getAsObject()->getString("helpUri"),
            checkDocPath("amp-autocast-scope"));
}

TEST(SarifEmitter, AbsoluteUriOutsideTheCurrentDirectory) {
  MapTexts T;
  Report R = sampleReport(false);
  R.Findings[0].Pos.File = "/nonexistent-root/my dir/a.cpp";
  R.Findings[0].Notes.clear();
  llvm::json::Value V =
      parseJson(capture([&](llvm::raw_ostream &OS) { emitSarif(R, T, OS, EmitOptions()); }));
  const llvm::json::Object &Art = *sarifRun(V)
                                       .getArray("results")
                                       ->front()
                                       .getAsObject()
                                       ->getArray("locations")
                                       ->front()
                                       .getAsObject()
                                       ->getObject("physicalLocation")
                                       ->getObject("artifactLocation");
  EXPECT_EQ(Art.getString("uri"), "file:///nonexistent-root/my%20dir/a.cpp");
  EXPECT_FALSE(Art.get("uriBaseId"));
}

std::string fingerprintOf(const llvm::json::Value &V, size_t I) {
  return sarifRun(V)
      .getArray("results")
      ->
      operator[](I)
      .getAsObject()
      ->getObject("partialFingerprints")
      ->getString("ampMigrate/v1")
      ->str();
}

TEST(SarifEmitter, FingerprintsSurviveUnrelatedEditsAndTellTwinsApart) {
  MapTexts Before, After;
  Before.Files["f.cpp"] = "a;\nscaler.step();\nscaler.step();\n";
  After.Files["f.cpp"] = "// new comment\na;\n  scaler.step();\nscaler.step();\n";
  auto ReportAt = [](unsigned L1, unsigned L2) {
    Report R;
    for (unsigned L : {L1, L2}) {
      Finding F;
      F.Check = "amp-scaler-step";
      F.Pos = pos("f.cpp", L, 1, 0);
      F.Message = "m";
      R.Findings.push_back(F);
    }
    return R;
  };
  llvm::json::Value V1 = parseJson(capture(
      [&](llvm::raw_ostream &OS) { emitSarif(ReportAt(2, 3), Before, OS, EmitOptions()); }));
  llvm::json::Value V2 = parseJson(
      capture([&](llvm::raw_ostream &OS) { emitSarif(ReportAt(3, 4), After, OS, EmitOptions()); }));
  EXPECT_NE(fingerprintOf(V1, 0), fingerprintOf(V1, 1));
  EXPECT_EQ(fingerprintOf(V1, 0), fingerprintOf(V2, 0));
  EXPECT_EQ(fingerprintOf(V1, 1), fingerprintOf(V2, 1));
}

TEST(SarifEmitter, ColumnsCountCharactersNotBytes) {
  MapTexts T;
  T.Files["u.cpp"] = "/*\xC3\xA9*/ xy;\n";
  Report R;
  Finding F;
  F.Check = "c";
  F.Pos = pos("u.cpp", 1, 8, 7);
  F.Message = "m";
  R.Findings.push_back(F);
  llvm::json::Value V =
      parseJson(capture([&](llvm::raw_ostream &OS) { emitSarif(R, T, OS, EmitOptions()); }));
  const llvm::json::Object &Region = *sarifRun(V)
                                          .getArray("results")
                                          ->front()
                                          .getAsObject()
                                          ->getArray("locations")
                                          ->front()
                                          .getAsObject()
                                          ->getObject("physicalLocation")
                                          ->getObject("region");
  EXPECT_EQ(Region.getInteger("startColumn"), 7);
  EXPECT_EQ(Region.getInteger("endColumn"), 9);
  EXPECT_EQ(sarifRun(V).getString("columnKind"), "unicodeCodePoints");
}

TEST(SarifEmitter, FailedFilesAreToolNotifications) {
  MapTexts T;
  Report R;
  FileOutcome Failed;
  Failed.File = "bad.cpp";
  Failed.Status = FileOutcome::State::Failed;
  Failed.Error = "bad.cpp:1:1: error: unknown type name 'x'";
  R.Files.push_back(Failed);
  llvm::json::Value V =
      parseJson(capture([&](llvm::raw_ostream &OS) { emitSarif(R, T, OS, EmitOptions()); }));
  const llvm::json::Object &Inv = *sarifRun(V).getArray("invocations")->front().getAsObject();
  EXPECT_EQ(Inv.getBoolean("executionSuccessful"), true);
  const llvm::json::Object &N = *Inv.getArray("toolExecutionNotifications")->front().getAsObject();
  EXPECT_EQ(N.getString("level"), "error");
  EXPECT_NE(N.getObject("message")->getString("text")->find("unknown type name"),
            llvm::StringRef::npos);
  EXPECT_EQ(sarifRun(V).getArray("results")->size(), 0u);
  EXPECT_EQ(sarifRun(V).getObject("tool")->getObject("driver")->getArray("rules")->size(), 0u);
}

// --- export-fixes --------------------------------------------------------------------------------

TEST(ExportFixes, ClangTidyYamlReadsBack) {
  Report R = sampleReport(true);
  R.BuildDirectory = "/build";
  // The same include twice in one step is exported once.
  R.Findings[0].Fixes.push_back(R.Findings[0].Fixes[0]);
  R.Findings.push_back(sampleReport(false).Findings[0]);
  R.Findings.back().Level = Severity::Error;
  MapTexts T = sampleTexts();
  std::string Out = capture([&](llvm::raw_ostream &OS) { emitExportFixes(R, T, OS); });

  EXPECT_NE(Out.find("MainSourceFile:"), std::string::npos);
  EXPECT_NE(Out.find("DiagnosticName:  amp-autocast-scope"), std::string::npos) << Out;
  clang::tooling::TranslationUnitDiagnostics TUD;
  llvm::yaml::Input YIn(Out);
  YIn >> TUD;
  ASSERT_FALSE(YIn.error()) << Out;
  EXPECT_EQ(TUD.MainSourceFile, "src/train.cpp");
  ASSERT_EQ(TUD.Diagnostics.size(), 2u);
  const clang::tooling::Diagnostic &D = TUD.Diagnostics[0];
  EXPECT_EQ(D.DiagnosticName, "amp-autocast-scope");
  EXPECT_EQ(D.Message.Message, "autocast scope can use amp::autocast");
  EXPECT_EQ(D.Message.FilePath, "src/train.cpp");
  EXPECT_EQ(D.Message.FileOffset, 14u);
  EXPECT_EQ(D.DiagLevel, clang::tooling::Diagnostic::Warning);
  EXPECT_EQ(D.BuildDirectory, "/build");
  ASSERT_EQ(D.Notes.size(), 1u);
  EXPECT_EQ(D.Notes[0].Message, "scope ends here");
  EXPECT_EQ(D.Notes[0].FileOffset, 23u);
  const clang::tooling::Replacements &Reps = D.Message.Fix.lookup("src/train.cpp");
  ASSERT_EQ(Reps.size(), 2u);
  EXPECT_EQ(Reps.begin()->getReplacementText(), "#include <amp/torch.h>\n");
  EXPECT_EQ(TUD.Diagnostics[1].DiagLevel, clang::tooling::Diagnostic::Error);
  EXPECT_TRUE(TUD.Diagnostics[1].Message.Fix.empty());
}

std::string readFile(llvm::StringRef Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path);
  return Buf ? (*Buf)->getBuffer().str() : "<unreadable>";
}

void writeFile(llvm::StringRef Path, llvm::StringRef Text) {
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  ASSERT_FALSE(EC);
  OS << Text;
}

/// Exports the sample step's fixes for a file holding `Text`, runs clang-apply-replacements over
/// them, and returns the file's contents after it ("" and a failure when the tool is missing).
std::string applyExportedFixes(llvm::StringRef Text) {
  std::string Tool = std::string(AMP_LLVM_TOOLS_DIR) + "/clang-apply-replacements";
  if (!llvm::sys::fs::can_execute(Tool))
    return "<no clang-apply-replacements>";
  llvm::SmallString<128> Dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("amp-export-fixes", Dir));
  llvm::SmallString<128> Src(Dir), Fixes(Dir);
  llvm::sys::path::append(Src, "train.cpp");
  llvm::sys::path::append(Fixes, "fixes.yaml");
  writeFile(Src, Text);

  // Two TUs (two findings) export the same header insertion: the tool merges identical edits.
  Report R = sampleReport(true);
  for (Finding &F : R.Findings) {
    F.Pos.File = Src.str().str();
    F.Notes[0].Pos.File = Src.str().str();
    for (Replacement &Rep : F.Fixes) {
      // The sample's offsets are into the LF text; a CRLF text has one more byte per line before.
      unsigned Lines = llvm::StringRef(TrainCpp).take_front(Rep.getOffset()).count('\n');
      unsigned Offset = Rep.getOffset() + (usesCrlf(Text) ? Lines : 0);
      Rep = Replacement(Src, Offset, Rep.getLength(), Rep.getReplacementText());
    }
  }
  Finding Again = R.Findings[0];
  Again.Fixes.resize(1);
  R.Findings.push_back(Again);
  R.BuildDirectory = Dir.str().str();
  MapTexts T;
  T.Files[Src.str().str()] = Text.str();
  std::error_code EC;
  {
    llvm::raw_fd_ostream OS(Fixes, EC);
    EXPECT_FALSE(EC);
    emitExportFixes(R, T, OS);
  }
  std::string Msg;
  llvm::StringRef Args[] = {Tool, Dir};
  int RC = llvm::sys::ExecuteAndWait(Tool, Args, std::nullopt, {}, 60, 0, &Msg);
  EXPECT_EQ(RC, 0) << Msg << "\n" << readFile(Fixes);
  std::string After = readFile(Src);
  llvm::sys::fs::remove_directories(Dir);
  return After;
}

TEST(ExportFixes, ClangApplyReplacementsAppliesThem) {
  if (!llvm::sys::fs::can_execute(std::string(AMP_LLVM_TOOLS_DIR) + "/clang-apply-replacements"))
    GTEST_SKIP() << "no clang-apply-replacements";
  EXPECT_EQ(applyExportedFixes(TrainCpp), "#include <amp/torch.h>\n"
                                          "int main() {\n"
                                          "\tamp::foo(1);\n"
                                          "  bar();\n"
                                          "}\n");
}

// Issue 13 item 13: inserted lines in a CRLF file were exported with "\n", leaving mixed endings.
TEST(ExportFixes, CrlfFileStaysCrlfAfterClangApplyReplacements) {
  if (!llvm::sys::fs::can_execute(std::string(AMP_LLVM_TOOLS_DIR) + "/clang-apply-replacements"))
    GTEST_SKIP() << "no clang-apply-replacements";
  EXPECT_EQ(applyExportedFixes("int main() {\r\n\tfoo(1);\r\n  bar();\r\n}\r\n"),
            "#include <amp/torch.h>\r\n"
            "int main() {\r\n"
            "\tamp::foo(1);\r\n"
            "  bar();\r\n"
            "}\r\n");
}

} // namespace
