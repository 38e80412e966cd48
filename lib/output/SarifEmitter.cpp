// SARIF 2.1.0 for GitHub code scanning and other SARIF viewers: rules from the check catalogue,
// results with notes as related locations, stable fingerprints, and fixes as artifact changes.
#include "OutputCommon.h"
#include "ampmigrate/Checks.h"
#include "ampmigrate/Emitters.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

namespace ampmigrate {
namespace {

const char *const SrcRoot = "%SRCROOT%";

/// Percent-encodes everything but RFC 3986 unreserved characters and '/'.
std::string encodeUriPath(llvm::StringRef Path) {
  std::string Out;
  for (unsigned char C : Path) {
    if (llvm::isAlnum(C) || C == '-' || C == '.' || C == '_' || C == '~' || C == '/') {
      Out += C;
      continue;
    }
    Out += '%';
    Out += llvm::hexdigit(C >> 4, /*LowerCase=*/false);
    Out += llvm::hexdigit(C & 15, false);
  }
  return Out;
}

llvm::json::Object artifactLocation(llvm::StringRef File) {
  std::string Rel = output::pathBelowCurrentDir(File);
  if (!Rel.empty())
    return llvm::json::Object{{"uri", encodeUriPath(Rel)}, {"uriBaseId", SrcRoot}};
  return llvm::json::Object{{"uri", "file://" + encodeUriPath(output::absolutePath(File))}};
}

/// SARIF columns count characters, clang's count bytes: convert within the line.
unsigned codePointColumn(llvm::StringRef Line, unsigned ByteColumn) {
  unsigned Column = 1;
  for (unsigned I = 0; I + 1 < ByteColumn; ++I)
    if (I >= Line.size() || (static_cast<unsigned char>(Line[I]) & 0xC0) != 0x80)
      ++Column;
  return Column;
}

/// The SARIF (line, column) of a byte offset in `File`.
std::pair<unsigned, unsigned> sarifPosition(output::LineTable &Lines, const std::string &File,
                                            unsigned Offset) {
  auto [Line, Column] = *Lines.position(File, Offset);
  return {Line, codePointColumn(Lines.line(File, Line), Column)};
}

bool isIdentifierChar(char C) { return llvm::isAlnum(C) || C == '_'; }

/// A finding points at one position; the region spans the identifier there (at least one
/// character) so viewers have something to underline.
llvm::json::Object pointRegion(output::LineTable &Lines, const SourcePos &Pos) {
  unsigned Line = Pos.Line ? Pos.Line : 1;
  unsigned Start = Pos.Column ? Pos.Column : 1;
  unsigned End = Start + 1;
  if (Lines.text(Pos.File)) {
    llvm::StringRef LineText = Lines.line(Pos.File, Line);
    unsigned EndByte = Start;
    while (EndByte - 1 < LineText.size() && isIdentifierChar(LineText[EndByte - 1]))
      ++EndByte;
    if (EndByte == Start)
      ++EndByte;
    End = codePointColumn(LineText, EndByte);
    Start = codePointColumn(LineText, Start);
  }
  return llvm::json::Object{
      {"startLine", Line}, {"startColumn", Start}, {"endLine", Line}, {"endColumn", End}};
}

llvm::json::Object physicalLocation(output::LineTable &Lines, const SourcePos &Pos) {
  return llvm::json::Object{{"artifactLocation", artifactLocation(Pos.File)},
                            {"region", pointRegion(Lines, Pos)}};
}

llvm::json::Object replacementObject(output::LineTable &Lines,
                                     const clang::tooling::Replacement &Rep) {
  llvm::json::Object Region;
  std::string File = Rep.getFilePath().str();
  if (Lines.text(File)) {
    auto [L1, C1] = sarifPosition(Lines, File, Rep.getOffset());
    auto [L2, C2] = sarifPosition(Lines, File, Rep.getOffset() + Rep.getLength());
    Region = llvm::json::Object{
        {"startLine", L1}, {"startColumn", C1}, {"endLine", L2}, {"endColumn", C2}};
  } else {
    // Without the text, bytes are the only exact way to say where the edit goes.
    Region = llvm::json::Object{{"byteOffset", Rep.getOffset()}, {"byteLength", Rep.getLength()}};
  }
  return llvm::json::Object{
      {"deletedRegion", std::move(Region)},
      {"insertedContent", llvm::json::Object{{"text", Rep.getReplacementText()}}}};
}

llvm::json::Array sarifFixes(const Finding &F, output::LineTable &Lines) {
  llvm::json::Array Fixes;
  if (F.Fixes.empty())
    return Fixes;
  std::vector<std::string> Files;
  std::map<std::string, llvm::json::Array> ByFile;
  for (const clang::tooling::Replacement &Rep : F.Fixes) {
    std::string File = Rep.getFilePath().str();
    if (!ByFile.count(File))
      Files.push_back(File);
    ByFile[File].push_back(replacementObject(Lines, Rep));
  }
  llvm::json::Array Changes;
  for (const std::string &File : Files)
    Changes.push_back(llvm::json::Object{{"artifactLocation", artifactLocation(File)},
                                         {"replacements", std::move(ByFile[File])}});
  Fixes.push_back(llvm::json::Object{
      {"description", llvm::json::Object{{"text", "Migrate the training step (" + F.Check + ")"}}},
      {"artifactChanges", std::move(Changes)}});
  return Fixes;
}

/// Rules for the checks the results use: catalogue order first, then any id the catalogue does
/// not know (so every ruleIndex stays valid).
struct RuleTable {
  llvm::json::Array Rules;
  llvm::StringMap<unsigned> Index;
};

std::string helpUri(const EmitOptions &O, llvm::StringRef Id) {
  return O.DocsBaseUri + checkDocPath(Id);
}

RuleTable rulesFor(const Report &R, const EmitOptions &O) {
  llvm::StringMap<bool> Used;
  for (const Finding &F : R.Findings)
    Used[F.Check] = true;
  RuleTable T;
  auto Add = [&](llvm::StringRef Id, llvm::StringRef Summary) {
    std::string Uri = helpUri(O, Id);
    T.Index[Id] = T.Rules.size();
    T.Rules.push_back(llvm::json::Object{
        {"id", Id},
        {"shortDescription", llvm::json::Object{{"text", Summary}}},
        {"helpUri", Uri},
        {"help", llvm::json::Object{{"text", (Summary + "\nSee " + Uri + ".").str()}}},
        {"defaultConfiguration", llvm::json::Object{{"level", "warning"}}},
    });
  };
  for (const CheckInfo &C : allChecks())
    if (Used.count(C.Id))
      Add(C.Id, C.Summary);
  for (const Finding &F : R.Findings)
    if (!T.Index.count(F.Check))
      Add(F.Check, F.Check);
  return T;
}

/// Identifies a result across commits without its line number: what is flagged, where (file and
/// the trimmed text of the line) and which of identical lines it is.
std::string fingerprint(const Finding &F, llvm::StringRef Uri, llvm::StringRef LineText,
                        unsigned Occurrence) {
  std::string Key =
      F.Check + '\0' + Uri.str() + '\0' + LineText.trim().str() + '\0' + std::to_string(Occurrence);
  std::array<uint8_t, 32> Hash = llvm::SHA256::hash(llvm::arrayRefFromStringRef(Key));
  return llvm::toHex(Hash, /*LowerCase=*/true).substr(0, 32);
}

/// The run itself: files the compiler could not parse are tool notifications, not results, so
/// they show up without being mistaken for findings.
llvm::json::Object invocation(const Report &R) {
  llvm::json::Array Notifications;
  for (const FileOutcome &FO : R.Files) {
    if (FO.Status != FileOutcome::State::Failed)
      continue;
    std::string Text = "could not analyse " + FO.File;
    if (!FO.Error.empty())
      Text += ":\n" + FO.Error;
    Notifications.push_back(llvm::json::Object{
        {"level", "error"},
        {"message", llvm::json::Object{{"text", Text}}},
        {"locations", llvm::json::Array{llvm::json::Object{
                          {"physicalLocation",
                           llvm::json::Object{{"artifactLocation", artifactLocation(FO.File)}}}}}},
    });
  }
  llvm::json::Object Invocation{{"executionSuccessful", true}};
  if (!Notifications.empty())
    Invocation["toolExecutionNotifications"] = std::move(Notifications);
  return Invocation;
}

} // namespace

void emitSarif(const Report &R, SourceTexts &Texts, llvm::raw_ostream &OS, const EmitOptions &O) {
  output::LineTable Lines(Texts);
  RuleTable Rules = rulesFor(R, O);
  llvm::StringMap<unsigned> Occurrences;
  llvm::json::Array Results;
  for (const Finding &F : R.Findings) {
    llvm::json::Object Loc = artifactLocation(F.Pos.File);
    std::string Uri = Loc.getString("uri").value_or("").str();
    llvm::StringRef LineText = Lines.line(F.Pos.File, F.Pos.Line);
    std::string OccurrenceKey = F.Check + '\0' + Uri + '\0' + LineText.trim().str();
    unsigned Occurrence = Occurrences[OccurrenceKey]++;

    llvm::json::Array Related;
    unsigned NoteId = 0;
    for (const Note &N : F.Notes) {
      llvm::json::Object Rel{{"id", NoteId++},
                             {"message", llvm::json::Object{{"text", N.Message}}}};
      if (!N.Pos.File.empty())
        Rel["physicalLocation"] = physicalLocation(Lines, N.Pos);
      Related.push_back(std::move(Rel));
    }

    llvm::json::Object Result{
        {"ruleId", F.Check},
        {"ruleIndex", Rules.Index.lookup(F.Check)},
        {"level", output::severityName(F.Level)},
        {"message", llvm::json::Object{{"text", F.Message}}},
        {"locations", llvm::json::Array{llvm::json::Object{
                          {"physicalLocation", physicalLocation(Lines, F.Pos)}}}},
        {"partialFingerprints",
         llvm::json::Object{{"ampMigrate/v1", fingerprint(F, Uri, LineText, Occurrence)}}},
    };
    if (!Related.empty())
      Result["relatedLocations"] = std::move(Related);
    llvm::json::Array Fixes = sarifFixes(F, Lines);
    if (!Fixes.empty())
      Result["fixes"] = std::move(Fixes);
    Results.push_back(std::move(Result));
  }

  llvm::json::Object Driver{{"name", O.ToolName}, {"rules", std::move(Rules.Rules)}};
  if (!O.ToolVersion.empty())
    Driver["version"] = O.ToolVersion;
  // The project's home is what the docs base points into; without one there is no honest URI.
  if (llvm::StringRef(O.DocsBaseUri).contains("://"))
    Driver["informationUri"] = O.DocsBaseUri;

  llvm::json::Object Run{
      {"tool", llvm::json::Object{{"driver", std::move(Driver)}}},
      {"invocations", llvm::json::Array{invocation(R)}},
      {"columnKind", "unicodeCodePoints"},
      {"results", std::move(Results)},
  };
  llvm::SmallString<256> Cwd;
  if (!llvm::sys::fs::current_path(Cwd)) {
    std::string Base = "file://" + encodeUriPath(output::absolutePath(Cwd));
    if (!llvm::StringRef(Base).ends_with("/"))
      Base += '/';
    Run["originalUriBaseIds"] = llvm::json::Object{{SrcRoot, llvm::json::Object{{"uri", Base}}}};
  }

  llvm::json::Value Doc = llvm::json::Object{
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs", llvm::json::Array{std::move(Run)}},
  };
  OS << llvm::formatv("{0:2}", Doc) << '\n';
}

} // namespace ampmigrate
