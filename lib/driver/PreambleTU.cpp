// One translation unit parsed against a precompiled preamble of its leading includes: the
// analysis, then the fix verification re-parsing only the main file with the edits applied.
#include "DriverInternal.h"
#include "ampmigrate/InputFiles.h"
#include "ampmigrate/Preamble.h"

#include "clang/Basic/SourceManager.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Lex/Lexer.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <cstdlib>

using namespace clang;
namespace ampmigrate {
namespace driver {
namespace {

/// Whether the argument `A` of `Cmd` names the file itself (as given, or relative to the
/// command's directory).
bool namesMainFile(StringRef A, const tooling::CompileCommand &Cmd, StringRef File) {
  if (A == Cmd.Filename || A == File)
    return true;
  if (A.starts_with("-") || llvm::sys::path::is_absolute(A))
    return false;
  llvm::SmallString<256> P(Cmd.Directory);
  llvm::sys::path::append(P, A);
  llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
  return P == File;
}

/// An inserted text made of whole `#include` lines only (the runtime header a fix adds).
bool isIncludeLines(StringRef Text) {
  if (Text.empty() || !Text.ends_with("\n"))
    return false;
  for (StringRef Line : llvm::split(Text.drop_back(), '\n')) {
    StringRef L = Line.rtrim("\r").ltrim();
    if (!L.consume_front("#") || !L.ltrim().starts_with("include"))
      return false;
  }
  return true;
}

/// Whether `Text` holds nothing but whitespace and comments (no directive, no code).
bool onlyCommentsAndSpace(StringRef Slice, const LangOptions &LO) {
  std::string Text = Slice.str(); // the lexer reads up to a NUL past the end
  Lexer Lex(SourceLocation(), LO, Text.data(), Text.data(), Text.data() + Text.size());
  Token Tok;
  Lex.LexFromRawLexer(Tok);
  return Tok.is(tok::eof);
}

/// The offsets in an include block (`Block`, the bytes Lexer::ComputePreamble takes) where a
/// preamble may end early: just after each `#include` (`#include_next`, `#import`) line that is
/// outside every `#if`. A preamble cut there is the first lines of the block, whole.
std::vector<unsigned> includeCutPoints(StringRef Block, const LangOptions &LO) {
  std::string Text = Block.str(); // the lexer reads up to a NUL past the end
  Lexer Lex(SourceLocation(), LO, Text.data(), Text.data(), Text.data() + Text.size());
  std::vector<unsigned> Out;
  int Depth = 0;
  Token Tok;
  for (Lex.LexFromRawLexer(Tok); Tok.isNot(tok::eof); Lex.LexFromRawLexer(Tok)) {
    if (Tok.isNot(tok::hash) || !Tok.isAtStartOfLine())
      continue;
    Lex.setParsingPreprocessorDirective(true);
    Lex.LexFromRawLexer(Tok);
    StringRef Name = Tok.is(tok::raw_identifier) ? Tok.getRawIdentifier() : StringRef();
    while (Tok.isNot(tok::eod) && Tok.isNot(tok::eof))
      Lex.LexFromRawLexer(Tok);
    Lex.setParsingPreprocessorDirective(false);
    if (Name == "if" || Name == "ifdef" || Name == "ifndef")
      ++Depth;
    else if (Name == "endif")
      --Depth;
    else if (Depth == 0 && Tok.is(tok::eod) && (Name == "include" || Name == "include_next" || Name == "import")) {
      size_t End = Text.find('\n', Lex.getBufferLocation() - Text.data() - 1);
      if (End != std::string::npos)
        Out.push_back(unsigned(End + 1));
    }
  }
  return Out;
}

} // namespace

std::unique_ptr<PreambleTU> PreambleTU::open(const tooling::CompileCommand &Cmd, const std::string &File,
                                             const RuleSet &Rules, const DriverOptions &Opts,
                                             llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS, DependencyLog *Deps,
                                             unsigned SharedPrefix) {
  std::unique_ptr<PreambleTU> T(new PreambleTU());
  T->Cmd = Cmd;
  T->Rules = &Rules;
  T->File = File;
  T->Overlays = Opts.Overlays;
  T->FS = FS;
  T->Args = parseArgumentsAdjuster()(Cmd.CommandLine, Cmd.Filename);
  if (auto It = Opts.Overlays.find(File); It != Opts.Overlays.end()) {
    T->Text = It->second;
  } else {
    FS->setCurrentWorkingDirectory(Cmd.Directory);
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Buf = FS->getBufferForFile(File);
    if (!Buf)
      return nullptr;
    T->Text = (*Buf)->getBuffer().str();
  }
  DiagnosticConsumer Ignored;
  std::optional<PreparedParse> P = prepareParse(Cmd, T->Args, Opts.Overlays, FS, Ignored);
  if (!P || Ignored.getNumErrors() > 0)
    return nullptr;
  T->LangOpts = P->Inv->getLangOpts();
  std::unique_ptr<llvm::MemoryBuffer> Main = llvm::MemoryBuffer::getMemBuffer(T->Text, File);
  T->Bounds = ComputePreambleBounds(T->LangOpts, *Main, /*MaxLines=*/0);
  if (T->Bounds.Size == 0)
    return nullptr; // no include block to share or to keep between the two parses
  // The first lines of the block that other files of the run start with: the preamble ends there
  // (where the command's own language options agree that a whole include line ends there).
  if (SharedPrefix > 0 && SharedPrefix < T->Bounds.Size &&
      llvm::is_contained(includeCutPoints(StringRef(T->Text).take_front(T->Bounds.Size), T->LangOpts), SharedPrefix))
    T->Bounds = PreambleBounds(SharedPrefix, /*PreambleEndsAtStartOfLine=*/true);

  // The key: what decides the preamble's contents. The file's own name is not part of it (TUs of
  // one database share their include block); its directory and every other argument are.
  std::vector<std::string> &Key = T->Key;
  for (const std::string &A : T->Args)
    Key.push_back(namesMainFile(A, Cmd, File) ? "<main file>" : A);
  Key.push_back("directory=" + Cmd.Directory);
  Key.push_back(T->Text.substr(0, T->Bounds.Size));
  Key.push_back(T->Bounds.PreambleEndsAtStartOfLine ? "ends-at-line-start" : "ends-mid-line");
  Key.push_back(Opts.SkipBodies ? "skip-bodies" : "full-parse");
  Key.push_back(Deps ? "recorded" : "unrecorded");
  for (const std::string &S : Rules.prefilterTokens())
    Key.push_back("token=" + S);
  for (const std::string &S : Rules.Sources)
    Key.push_back("rules=" + S);
  for (const auto &[Path, Text] : Opts.Overlays)
    Key.push_back("overlay=" + Path + "\n" + Text);

  bool Skip = Opts.SkipBodies;
  T->Pre = PreambleStore::process().get(Key, [&] { return T->build(Skip, /*Instantiate=*/false, Deps != nullptr); });
  if (!T->Pre)
    return nullptr;
  if (Deps)
    Deps->add(T->Pre->Deps);
  return T;
}

std::shared_ptr<const BuiltPreamble> PreambleTU::build(bool SkipBodies, bool Instantiate, bool Record) const {
  // With --cache-dir, what the build reads is recorded on its own, for every TU that reuses it.
  DependencyLog BuildLog;
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> Base = Record ? makeRecordingFileSystem(BuildLog) : FS;
  DiagnosticConsumer Errors;
  std::optional<PreparedParse> B = prepareParse(Cmd, Args, Overlays, Base, Errors);
  if (!B || Errors.getNumErrors() > 0)
    return nullptr;
  std::unique_ptr<llvm::MemoryBuffer> Buf = llvm::MemoryBuffer::getMemBuffer(Text, File);
  std::shared_ptr<const BuiltPreamble> Built =
      buildPreamble(*B, *Buf, Bounds, *Rules, SkipBodies, /*SkipAll=*/false, Instantiate);
  if (Built && Record)
    const_cast<BuiltPreamble &>(*Built).Deps = BuildLog.take();
  return Built;
}

bool PreambleTU::parse(const std::string &MainText, const std::vector<std::string> &ExtraArgs,
                       tooling::FrontendActionFactory &Action, ErrorCollector &Errors, const BuiltPreamble &With) {
  std::vector<std::string> A = Args;
  A.insert(llvm::find(A, "--"), ExtraArgs.begin(), ExtraArgs.end());
  std::optional<PreparedParse> P = prepareParse(Cmd, A, Overlays, FS, Errors);
  if (!P)
    return false;
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> VFS = P->FS;
  // The preamble's bytes are skipped in `MainText` (they are the same: the caller checked), and
  // the compiler instance owns the buffer from here on.
  With.PCH.AddImplicitPreamble(*P->Inv, VFS, llvm::MemoryBuffer::getMemBufferCopy(MainText, File).release());
  bool Ok = runPreparedParse(P->Inv, VFS, Action, Errors);
  Errors.OS.flush();
  return Ok && Errors.getNumErrors() == 0;
}

unsigned PreambleTU::skippedBodies() const { return Pre->SkippedBodies; }

bool PreambleTU::analyse(AmpActionFactory &Action, ErrorCollector &Errors) {
  Action.setPreambleInactive(&Pre->InactiveOffsets);
  Action.setPreambleLearned(&Pre->LearnedClasses);
  return parse(Text, {}, Action, Errors, *Pre);
}

std::optional<bool> PreambleTU::checkInFull(ErrorCollector &Errors) {
  std::vector<std::string> FullKey = Key;
  FullKey.push_back("instantiated");
  std::shared_ptr<const BuiltPreamble> Full = PreambleStore::process().get(
      FullKey, [&] { return build(/*SkipBodies=*/false, /*Instantiate=*/true, /*Record=*/false); });
  if (!Full)
    return std::nullopt;
  std::unique_ptr<tooling::FrontendActionFactory> SyntaxOnly = tooling::newFrontendActionFactory<SyntaxOnlyAction>();
  return parse(Text, {}, *SyntaxOnly, Errors, *Full);
}

std::optional<std::string> PreambleTU::verificationText(const tooling::Replacements &MainEdits) const {
  const unsigned Size = Bounds.Size;
  if (!Bounds.PreambleEndsAtStartOfLine)
    return std::nullopt;
  // Edits of the include block: only whole `#include` lines inserted at a line start, after which
  // the block holds nothing but comments and blank lines. Each moves to the block's end, where
  // the preamble stops: the same headers in the same order, over the same preamble.
  std::string Moved;
  tooling::Replacements Body;
  for (const tooling::Replacement &R : MainEdits) {
    unsigned Offset = R.getOffset();
    if (Offset >= Size) {
      if (llvm::Error E = Body.add(tooling::Replacement(File, Offset - Size, R.getLength(), R.getReplacementText()))) {
        llvm::consumeError(std::move(E));
        return std::nullopt;
      }
      continue;
    }
    if (R.getLength() != 0 || !isIncludeLines(R.getReplacementText()) || (Offset > 0 && Text[Offset - 1] != '\n') ||
        !onlyCommentsAndSpace(StringRef(Text).slice(Offset, Size), LangOpts))
      return std::nullopt;
    Moved += R.getReplacementText().str();
  }
  llvm::Expected<std::string> Rest = tooling::applyAllReplacements(StringRef(Text).drop_front(Size), Body);
  if (!Rest) {
    llvm::consumeError(Rest.takeError());
    return std::nullopt;
  }
  return Text.substr(0, Size) + Moved + *Rest;
}

bool PreambleTU::verify(const std::string &MainText, tooling::FrontendActionFactory &Action, ErrorCollector &Errors) {
  std::vector<std::string> Extra = runtimeIncludeArgs();
  Extra.push_back("-fno-caret-diagnostics");
  return parse(MainText, Extra, Action, Errors, *Pre);
}

std::map<std::string, unsigned> sharedIncludePrefixes(const tooling::CompilationDatabase &DB,
                                                      const DriverOptions &Opts) {
  // A lexer's estimate (C++ with default options) of each file's include block: PreambleTU::open
  // checks the cut under the command's own language options.
  LangOptions LO;
  LO.CPlusPlus = LO.CPlusPlus11 = LO.CPlusPlus14 = LO.CPlusPlus17 = true;
  struct Block {
    std::string File, Text; ///< the include block's text
  };
  std::map<std::vector<std::string>, std::vector<Block>> ByCommand;
  for (const std::string &Raw : Opts.Files) {
    std::string File = absolutePath(Raw);
    std::vector<tooling::CompileCommand> Cmds = DB.getCompileCommands(File);
    if (Cmds.size() != 1)
      continue;
    std::string Text;
    if (auto It = Opts.Overlays.find(File); It != Opts.Overlays.end()) {
      Text = It->second;
    } else {
      // Only a bounded regular file (a FIFO named *.cpp would block here): the run reports the
      // others as it always does.
      llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> Buf = readSourceFile(File);
      if (!Buf) {
        llvm::consumeError(Buf.takeError());
        continue;
      }
      Text = (*Buf)->getBuffer().str();
    }
    PreambleBounds B = Lexer::ComputePreamble(Text, LO);
    if (B.Size == 0)
      continue;
    std::vector<std::string> Key;
    for (const std::string &A : Cmds.front().CommandLine)
      Key.push_back(namesMainFile(A, Cmds.front(), File) ? "<main file>" : A);
    Key.push_back(Cmds.front().Directory);
    ByCommand[Key].push_back({File, Text.substr(0, B.Size)});
  }
  // Each file's preamble: the longest run of its first include lines that every file starting
  // with its first include line also starts with. One preamble then serves all the files that
  // start alike (those of a codebase usually start with the same few headers), rather than one
  // per set of files whose blocks happen to agree further.
  std::map<std::string, unsigned> Out;
  if (!sharedPrefixesEnabled()) {
    // The whole blocks only, each shared by the files whose block is the same text.
    for (auto &[Key, Blocks] : ByCommand) {
      std::map<StringRef, unsigned> Same;
      for (const Block &B : Blocks)
        ++Same[B.Text];
      for (const Block &B : Blocks)
        if (Same[B.Text] > 1)
          Out[B.File] = unsigned(B.Text.size());
    }
    return Out;
  }
  for (auto &[Key, Blocks] : ByCommand) {
    std::vector<std::vector<unsigned>> Cuts;
    std::map<StringRef, unsigned> Starting; ///< prefix -> files of the group that start with it
    for (const Block &B : Blocks) {
      Cuts.push_back(includeCutPoints(B.Text, LO));
      for (unsigned C : Cuts.back())
        ++Starting[StringRef(B.Text).take_front(C)];
    }
    for (size_t I = 0; I < Blocks.size(); ++I) {
      if (Cuts[I].empty())
        continue;
      StringRef Text = Blocks[I].Text;
      unsigned First = Starting[Text.take_front(Cuts[I].front())];
      if (First < 2)
        continue;
      unsigned Cut = 0;
      for (unsigned C : Cuts[I])
        if (Starting[Text.take_front(C)] == First)
          Cut = C;
      Out[Blocks[I].File] = Cut;
    }
  }
  return Out;
}

bool sharedPrefixesEnabled() {
  const char *Env = std::getenv("AMP_MIGRATE_SHARED_PREFIX");
  return !(Env && StringRef(Env) == "off");
}

bool preamblePathEnabled(const DriverOptions &Opts) {
  // AMP_MIGRATE_PREAMBLE=off: the whole-parse path, kept for the comparison tests
  // (test/driver/preamble-equivalence.test) and as a way out.
  const char *Env = std::getenv("AMP_MIGRATE_PREAMBLE");
  if (Env && StringRef(Env) == "off")
    return false;
  // With --header-filter, a header's declarations must be visited as a whole parse reads them
  // (a preamble's are never handed to the consumer); the language server has its own parser.
  return Opts.HeaderFilter.empty() && !Opts.Parser;
}

} // namespace driver
} // namespace ampmigrate
