// GitHub Actions workflow commands (`::warning file=...::message`), which the Actions runner turns
// into annotations on the pull request.
#include "OutputCommon.h"
#include "ampmigrate/Emitters.h"
#include "ampmigrate/SourceText.h"

namespace ampmigrate {
namespace {

/// Escaping of a command's message (GitHub's escapeData).
std::string escapeData(llvm::StringRef S) {
  std::string Out;
  for (char C : S) {
    switch (C) {
    case '%':
      Out += "%25";
      break;
    case '\r':
      Out += "%0D";
      break;
    case '\n':
      Out += "%0A";
      break;
    default:
      Out += C;
    }
  }
  return Out;
}

/// Escaping of a command's property values (GitHub's escapeProperty): also ':' and ','.
std::string escapeProperty(llvm::StringRef S) {
  std::string Out;
  for (char C : S) {
    switch (C) {
    case ':':
      Out += "%3A";
      break;
    case ',':
      Out += "%2C";
      break;
    default:
      Out += escapeData(llvm::StringRef(&C, 1));
    }
  }
  return Out;
}

/// Annotations are matched against repository paths, which the runner's working directory roots.
std::string annotationPath(llvm::StringRef File) {
  std::string Rel = output::pathBelowCurrentDir(File);
  return Rel.empty() ? File.str() : Rel;
}

} // namespace

void emitGithub(const Report &R, llvm::raw_ostream &OS) {
  for (const Finding &F : R.Findings) {
    // An annotation has one message; notes ride along on their own lines of it.
    std::string Message = F.Message;
    for (const Note &N : F.Notes) {
      Message += "\nnote: ";
      if (!N.Pos.File.empty())
        Message += positionText(annotationPath(N.Pos.File), N.Pos.Line, N.Pos.Column) + ": ";
      Message += N.Message;
    }
    OS << "::" << output::severityName(F.Level)
       << " file=" << escapeProperty(annotationPath(F.Pos.File)) << ",line=" << F.Pos.Line
       << ",col=" << F.Pos.Column << ",title=" << escapeProperty(F.Check)
       << "::" << escapeData(Message) << '\n';
  }
  // A file the compiler could not parse was neither linted nor migrated: an error annotation at
  // the compiler's first error (`file:line:col: error: ...`), else on the file.
  for (const FileOutcome &FO : R.Files) {
    if (FO.Status != FileOutcome::State::Failed)
      continue;
    std::string Props = "file=" + escapeProperty(annotationPath(FO.File));
    llvm::StringRef First = llvm::StringRef(FO.Error).split('\n').first;
    llvm::SmallVector<llvm::StringRef, 4> Parts;
    First.split(Parts, ':', 3);
    unsigned Line = 0, Col = 0;
    if (Parts.size() == 4 && Parts[0] == FO.File && !Parts[1].getAsInteger(10, Line) &&
        !Parts[2].getAsInteger(10, Col))
      Props += ",line=" + std::to_string(Line) + ",col=" + std::to_string(Col);
    OS << "::error " << Props << ",title=amp-migrate::"
       << escapeData("could not analyse " + FO.File + " (not linted or migrated)" +
                     (FO.Error.empty() ? std::string() : ":\n" + FO.Error))
       << '\n';
  }
}

} // namespace ampmigrate
