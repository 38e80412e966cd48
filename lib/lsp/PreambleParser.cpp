// The language server's parser: a precompiled preamble per open document, rebuilt only when the
// includes at the top of the file (or the files they read, or the command) change.
#include "PreambleParser.h"
#include "ampmigrate/Preamble.h"

#include "clang/Basic/DiagnosticOptions.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/PrecompiledPreamble.h"
#include "clang/Frontend/Utils.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "clang/Serialization/PCHContainerOperations.h"
#include "clang/Tooling/Tooling.h"
#include <optional>
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"

using namespace clang;

namespace ampmigrate {
/// The disk, with the editor's text over the document's file.
static std::optional<PreparedParse> prepare(const tooling::CompileCommand &Cmd, const std::vector<std::string> &Args,
                                            const std::string &File, const std::string &Text,
                                            DiagnosticConsumer &Diags) {
  return prepareParse(Cmd, Args, {{File, Text}},
                      IntrusiveRefCntPtr<llvm::vfs::FileSystem>(llvm::vfs::createPhysicalFileSystem().release()),
                      Diags);
}

PreambleParser::PreambleParser(std::function<void(bool, const std::string &)> Progress, bool Verification)
    : Progress(std::move(Progress)), Verification(Verification) {}
PreambleParser::~PreambleParser() = default;

std::vector<std::string> PreambleParser::Inputs::key(size_t PreambleSize) const {
  std::vector<std::string> Key = Args;
  Key.push_back(Text.substr(0, PreambleSize));
  Key.push_back(Cmd.Directory);
  Key.push_back(SkipBodies ? "skip-bodies" : "full-parse");
  Key.push_back(Verification ? "verification" : "analysis");
  std::vector<std::string> Tokens = Rules->prefilterTokens();
  Key.insert(Key.end(), Tokens.begin(), Tokens.end());
  Key.insert(Key.end(), Rules->Sources.begin(), Rules->Sources.end());
  return Key;
}

TUParser PreambleParser::parserFor(std::string Text, bool SkipBodies, const RuleSet &Rules) {
  return [this, Text = std::move(Text), SkipBodies, Rules = &Rules](
             const std::vector<tooling::CompileCommand> &Cmds, const std::string &File,
             tooling::FrontendActionFactory &Action, DiagnosticConsumer &Diags) {
    Inputs In;
    In.Cmd = Cmds.front();
    In.Args = parseArgumentsAdjuster()(In.Cmd.CommandLine, In.Cmd.Filename);
    In.File = File;
    In.Text = Text;
    In.SkipBodies = SkipBodies;
    In.Rules = Rules;
    In.Verification = Verification;
    return parse(std::move(In), Action, Diags);
  };
}

bool PreambleParser::preambleWanted() {
  std::lock_guard<std::mutex> Lock(M);
  return Wanted.has_value();
}

void PreambleParser::buildPreamble() {
  std::lock_guard<std::mutex> Build(BuildM);
  std::unique_lock<std::mutex> Lock(M);
  if (!Wanted)
    return;
  Inputs In = std::move(*Wanted);
  Wanted.reset();
  Building.reset();
  Lock.unlock();
  // Whatever happens below, parses waiting for this build go on.
  auto Done = llvm::make_scope_exit([&] {
    if (!Lock.owns_lock())
      Lock.lock();
    Building.reset();
    Built.notify_all();
  });
  DiagnosticConsumer Errors; // counts them
  std::optional<PreparedParse> P = prepare(In.Cmd, In.Args, In.File, In.Text, Errors);
  if (!P || Errors.getNumErrors() > 0)
    return;
  std::unique_ptr<llvm::MemoryBuffer> Main = llvm::MemoryBuffer::getMemBufferCopy(In.Text, In.File);
  PreambleBounds Bounds = ComputePreambleBounds(P->Inv->getLangOpts(), *Main, /*MaxLines=*/0);
  Lock.lock();
  Building = In.key(Bounds.Size);
  Lock.unlock();
  Progress(true, (Verification ? "precompiling the includes of the rewritten " : "precompiling the includes of ") +
                     llvm::sys::path::filename(In.File).str());
  std::shared_ptr<const BuiltPreamble> Result =
      ampmigrate::buildPreamble(*P, *Main, Bounds, *In.Rules, In.SkipBodies, /*SkipAll=*/Verification);
  Progress(false, "");
  // A preamble with errors would hide them from the parses that reuse it: none, then; the
  // whole-file parses report them.
  if (Result) {
    Lock.lock();
    Preamble = std::move(Result);
    PreambleKey = In.key(Bounds.Size);
  }
}

bool PreambleParser::parse(Inputs In, tooling::FrontendActionFactory &Action, DiagnosticConsumer &Diags) {
  std::lock_guard<std::mutex> Parse(ParseM);
  std::optional<PreparedParse> P = prepare(In.Cmd, In.Args, In.File, In.Text, Diags);
  if (!P)
    return false;
  std::shared_ptr<CompilerInvocation> Inv = P->Inv;
  std::unique_ptr<llvm::MemoryBuffer> Main = llvm::MemoryBuffer::getMemBufferCopy(In.Text, In.File);
  PreambleBounds Bounds = ComputePreambleBounds(Inv->getLangOpts(), *Main, /*MaxLines=*/0);
  std::shared_ptr<const BuiltPreamble> Pre;
  std::vector<std::string> Key = In.key(Bounds.Size);
  {
    std::unique_lock<std::mutex> Lock(M);
    // The includes this text starts with are being precompiled: the rest of that build takes
    // less than a whole parse next to it would.
    Built.wait(Lock, [&] { return !Building || *Building != Key; });
    if (Key == PreambleKey)
      Pre = Preamble;
  }
  LastReused = Pre && Pre->PCH.CanReuse(*Inv, Main->getMemBufferRef(), Bounds, *P->FS);
  // No preamble fits: a whole parse now, as fast as the command line's, and the preamble after
  // (buildPreamble, on another thread), for the edits that follow.
  if (!LastReused)
    Progress(true, (Verification ? "verifying the fixes of " : "parsing ") + llvm::sys::path::filename(In.File).str());

  IntrusiveRefCntPtr<llvm::vfs::FileSystem> VFS = P->FS;
  // The editor's text as the main file (AddImplicitPreamble maps it itself); the compiler
  // instance owns the buffer from here on.
  if (LastReused)
    Pre->PCH.AddImplicitPreamble(*Inv, VFS, Main.release());
  else
    Inv->getPreprocessorOpts().addRemappedFile(Inv->getFrontendOpts().Inputs[0].getFile(), Main.release());
  bool Ok = runPreparedParse(Inv, VFS, Action, Diags);
  if (!LastReused) {
    Progress(false, "");
    std::lock_guard<std::mutex> Lock(M);
    // A verification that fails (the rewrite does not compile: an error in the body) still
    // wants the preamble; one with errors in the includes is not kept (buildPreamble).
    if (Ok && (Verification || Diags.getNumErrors() == 0))
      Wanted = std::move(In);
  }
  return Ok;
}

} // namespace ampmigrate
