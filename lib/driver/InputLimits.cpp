// Bounded reading of settings files and nesting-depth checks that run before LLVM's recursive
// YAML and JSON parsers (which overflow the stack on ~100 KB of '[').
#include "ampmigrate/InputLimits.h"
#include "ampmigrate/SourceText.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"
#include <algorithm>

namespace ampmigrate {
namespace {

llvm::Error readError(llvm::StringRef Path, llvm::StringRef What, const llvm::Twine &Why,
                      std::error_code EC = std::make_error_code(std::errc::invalid_argument)) {
  return llvm::createStringError(EC, (Path + ": error: cannot read " + What + ": " + Why).str());
}

struct DepthScan {
  unsigned Max = 0;
  unsigned Line = 1; ///< the first line where Max was reached
};

/// One pass over a YAML text. A block node at depth d is indented at least d-1 columns or sits
/// behind d-1 compact "- "/"? " indicators, so indentation plus indicators bounds the block depth;
/// flow brackets add their own depth. Quotes and comments are skipped so that a '[' in a string
/// does not count.
DepthScan scanYaml(llvm::StringRef Text) {
  DepthScan S;
  unsigned Flow = 0, Line = 1;
  unsigned Block = 0; // the block depth bound of the line where the current flow or quote began
  char Quote = 0; // the open quote, when inside a quoted scalar (which may span lines)
  size_t I = 0;
  auto Note = [&](unsigned D) {
    if (D > S.Max) {
      S.Max = D;
      S.Line = Line;
    }
  };
  while (I < Text.size()) {
    // Start of a line: its block depth bound, unless the line continues a quote or a flow.
    if (!Quote && Flow == 0) {
      Block = 0;
      while (I < Text.size()) {
        char C = Text[I];
        if (C == ' ' || C == '\t') {
          ++Block;
          ++I;
        } else if ((C == '-' || C == '?' || C == ':') && I + 1 < Text.size() &&
                   (Text[I + 1] == ' ' || Text[I + 1] == '\n')) {
          ++Block;
          ++I;
        } else {
          break;
        }
      }
      Note(Block + 1);
    }
    for (; I < Text.size() && Text[I] != '\n'; ++I) {
      char C = Text[I];
      if (Quote == '"') {
        if (C == '\\')
          ++I; // an escaped character, perhaps a quote
        else if (C == '"')
          Quote = 0;
        continue;
      }
      if (Quote == '\'') {
        if (C == '\'' && I + 1 < Text.size() && Text[I + 1] == '\'')
          ++I; // '' is an escaped quote
        else if (C == '\'')
          Quote = 0;
        continue;
      }
      if (C == '#' && (I == 0 || Text[I - 1] == ' ' || Text[I - 1] == '\t')) {
        while (I + 1 < Text.size() && Text[I + 1] != '\n')
          ++I; // a comment runs to the end of the line
        continue;
      }
      if (C == '"' || C == '\'') {
        Quote = C;
      } else if (C == '[' || C == '{') {
        ++Flow;
        Note(Block + Flow + 1);
      } else if ((C == ']' || C == '}') && Flow > 0) {
        --Flow;
      }
    }
    if (I < Text.size()) {
      ++I; // the '\n'
      ++Line;
    }
  }
  return S;
}

} // namespace

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readBoundedRegularFile(llvm::StringRef Path, llvm::StringRef What, uint64_t MaxBytes) {
  // Look before opening: opening a FIFO blocks until a writer appears.
  llvm::sys::fs::file_status St;
  if (std::error_code EC = llvm::sys::fs::status(Path, St))
    return readError(Path, What, EC.message(), EC);
  if (St.type() != llvm::sys::fs::file_type::regular_file)
    return readError(Path, What,
                     St.type() == llvm::sys::fs::file_type::directory_file
                         ? "it is a directory"
                         : "not a regular file (a device, FIFO or socket)");
  if (St.getSize() > MaxBytes)
    return readError(Path, What,
                     "it is " + llvm::Twine(St.getSize()) + " bytes, more than the limit of " +
                         llvm::Twine(MaxBytes) + " bytes");
  llvm::Expected<llvm::sys::fs::file_t> FD = llvm::sys::fs::openNativeFileForRead(Path);
  if (!FD) {
    std::error_code EC = llvm::errorToErrorCode(FD.takeError());
    return readError(Path, What, EC.message(), EC);
  }
  // The path may have been replaced since the look: check what was actually opened.
  llvm::sys::fs::file_status Opened;
  std::error_code EC = llvm::sys::fs::status(*FD, Opened);
  if (!EC && (Opened.type() != llvm::sys::fs::file_type::regular_file || Opened.getSize() > MaxBytes))
    EC = std::make_error_code(std::errc::invalid_argument);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Buf =
      EC ? llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>>(EC)
         : llvm::MemoryBuffer::getOpenFile(*FD, Path, Opened.getSize(),
                                           /*RequiresNullTerminator=*/true);
  llvm::sys::fs::closeFile(*FD);
  if (!Buf)
    return readError(Path, What, Buf.getError().message(), Buf.getError());
  return std::move(*Buf);
}

unsigned estimateYamlDepth(llvm::StringRef Text) { return scanYaml(Text).Max; }

unsigned jsonDepth(llvm::StringRef Text) {
  unsigned Depth = 0, Max = 0;
  bool InString = false;
  for (size_t I = 0; I < Text.size(); ++I) {
    char C = Text[I];
    if (InString) {
      if (C == '\\')
        ++I;
      else if (C == '"')
        InString = false;
      continue;
    }
    if (C == '"') {
      InString = true;
    } else if (C == '[' || C == '{') {
      Max = std::max(Max, ++Depth);
    } else if ((C == ']' || C == '}') && Depth > 0) {
      --Depth;
    }
  }
  return Max;
}

void FirstYamlError::handle(const llvm::SMDiagnostic &D, void *Self) {
  auto &E = *static_cast<FirstYamlError *>(Self);
  if (!E.Message.empty())
    return; // the first error is the useful one; later ones follow from it
  if (D.getLineNo() <= 0 || D.getFilename().empty() || D.getFilename() == "<unknown>")
    E.Message = (E.Path + ": error: " + D.getMessage()).str();
  else
    E.Message = (D.getFilename() + ":" + llvm::Twine(D.getLineNo()) + ":" +
                 llvm::Twine(D.getColumnNo() + 1) + ": error: " + D.getMessage())
                    .str();
}

bool hasSeveralYamlDocuments(llvm::StringRef Text) {
  // yaml::Input reads the first document and ignores the rest; its nextDocument() steps past the
  // end on an empty stream, so count with a plain stream (its errors are yaml::Input's to report).
  llvm::SourceMgr SM;
  SM.setDiagHandler([](const llvm::SMDiagnostic &, void *) {});
  llvm::yaml::Stream S(Text, SM);
  unsigned Documents = 0;
  for (llvm::yaml::document_iterator It = S.begin(), End = S.end(); It != End; ++It)
    if (++Documents > 1)
      return true;
  return false;
}

std::string checkYamlDepth(llvm::StringRef Path, llvm::StringRef Text, unsigned Limit) {
  DepthScan S = scanYaml(Text);
  if (S.Max <= Limit)
    return "";
  return (positionText(Path, S.Line) + ": error: nesting deeper than " + llvm::Twine(Limit) +
          " levels (indentation, '- ' entries and brackets); not read")
      .str();
}

} // namespace ampmigrate
