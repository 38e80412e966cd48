// The language server's parser: a precompiled preamble per open document, rebuilt only when the
// includes at the top of the file (or the files they read, or the command) change.
#include "PreambleParser.h"

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
namespace {

/// Skips the same header function bodies while precompiling as the driver's consumer skips in a
/// whole parse (the same rule, learning the same classes from the same top-level declarations):
/// the checks see the same declarations either way.
class SkippingCallbacks : public PreambleCallbacks {
public:
  SkippingCallbacks(const RuleSet &Rules, bool SkipBodies, bool SkipAll)
      : SkipBodies(SkipBodies), SkipAll(SkipAll), Skipper(Rules) {}
  void BeforeExecute(CompilerInstance &CI) override { SM = &CI.getSourceManager(); }
  bool shouldSkipFunctionBody(Decl *D) override {
    return SkipAll || (SkipBodies && SM && Skipper.shouldSkip(*SM, D));
  }
  void HandleTopLevelDecl(DeclGroupRef DG) override {
    if (SkipBodies && !SkipAll && SM)
      Skipper.learn(*SM, DG);
  }

private:
  bool SkipBodies;
  /// The verification's preamble: every body (all are in headers no fix edits).
  bool SkipAll;
  const SourceManager *SM = nullptr;
  HeaderBodySkipper Skipper;
};

} // namespace

/// The file system of a parse (the disk, with the editor's text over the document's file) and the
/// compiler invocation a ClangTool run would make; the driver reports to `Diags`.
struct Prepared {
  IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> FS;
  std::shared_ptr<CompilerInvocation> Inv;
};

static std::optional<Prepared> prepare(const tooling::CompileCommand &Cmd, const std::vector<std::string> &Args,
                                       const std::string &File, const std::string &Text, DiagnosticConsumer &Diags) {
  Prepared P;
  auto Disk = IntrusiveRefCntPtr<llvm::vfs::FileSystem>(llvm::vfs::createPhysicalFileSystem().release());
  P.FS = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(Disk);
  auto Buffers = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  P.FS->pushOverlay(Buffers);
  P.FS->setCurrentWorkingDirectory(Cmd.Directory);
  Buffers->addFile(File, 0, llvm::MemoryBuffer::getMemBufferCopy(Text, File));

  auto DiagOpts = llvm::makeIntrusiveRefCnt<DiagnosticOptions>();
  IntrusiveRefCntPtr<DiagnosticsEngine> DriverDiags =
      CompilerInstance::createDiagnostics(DiagOpts.get(), &Diags, /*ShouldOwnClient=*/false);
  std::vector<const char *> Argv;
  for (const std::string &A : Args)
    Argv.push_back(A.c_str());
  CreateInvocationOptions CIO;
  CIO.Diags = DriverDiags;
  CIO.VFS = P.FS;
  LangOptions DriverLangOpts; // outlives the driver's diagnostics
  Diags.BeginSourceFile(DriverLangOpts, nullptr);
  P.Inv = createInvocation(Argv, CIO);
  Diags.EndSourceFile();
  if (!P.Inv || P.Inv->getFrontendOpts().Inputs.empty())
    return std::nullopt;
  P.Inv->getFrontendOpts().DisableFree = false;
  return P;
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
  std::optional<Prepared> P = prepare(In.Cmd, In.Args, In.File, In.Text, Errors);
  if (!P || Errors.getNumErrors() > 0)
    return;
  std::unique_ptr<llvm::MemoryBuffer> Main = llvm::MemoryBuffer::getMemBufferCopy(In.Text, In.File);
  PreambleBounds Bounds = ComputePreambleBounds(P->Inv->getLangOpts(), *Main, /*MaxLines=*/0);
  Lock.lock();
  Building = In.key(Bounds.Size);
  Lock.unlock();
  Progress(true, (Verification ? "precompiling the includes of the rewritten " : "precompiling the includes of ") +
                     llvm::sys::path::filename(In.File).str());
  P->Inv->getFrontendOpts().SkipFunctionBodies = In.SkipBodies;
  IntrusiveRefCntPtr<DiagnosticsEngine> PreambleDiags =
      CompilerInstance::createDiagnostics(new DiagnosticOptions, &Errors, /*ShouldOwnClient=*/false);
  SkippingCallbacks Callbacks(*In.Rules, In.SkipBodies, Verification);
  llvm::ErrorOr<PrecompiledPreamble> Result =
      PrecompiledPreamble::Build(*P->Inv, Main.get(), Bounds, *PreambleDiags, P->FS,
                                 std::make_shared<PCHContainerOperations>(), /*StoreInMemory=*/true,
                                 /*StoragePath=*/"", Callbacks);
  Progress(false, "");
  // A preamble with errors would hide them from the parses that reuse it: none, then; the
  // whole-file parses report them.
  if (Result && Errors.getNumErrors() == 0) {
    Lock.lock();
    Preamble = std::make_shared<const PrecompiledPreamble>(std::move(*Result));
    PreambleKey = In.key(Bounds.Size);
  }
}

bool PreambleParser::parse(Inputs In, tooling::FrontendActionFactory &Action, DiagnosticConsumer &Diags) {
  std::lock_guard<std::mutex> Parse(ParseM);
  std::optional<Prepared> P = prepare(In.Cmd, In.Args, In.File, In.Text, Diags);
  if (!P)
    return false;
  std::shared_ptr<CompilerInvocation> Inv = P->Inv;
  std::unique_ptr<llvm::MemoryBuffer> Main = llvm::MemoryBuffer::getMemBufferCopy(In.Text, In.File);
  PreambleBounds Bounds = ComputePreambleBounds(Inv->getLangOpts(), *Main, /*MaxLines=*/0);
  std::shared_ptr<const PrecompiledPreamble> Pre;
  std::vector<std::string> Key = In.key(Bounds.Size);
  {
    std::unique_lock<std::mutex> Lock(M);
    // The includes this text starts with are being precompiled: the rest of that build takes
    // less than a whole parse next to it would.
    Built.wait(Lock, [&] { return !Building || *Building != Key; });
    if (Key == PreambleKey)
      Pre = Preamble;
  }
  LastReused = Pre && Pre->CanReuse(*Inv, Main->getMemBufferRef(), Bounds, *P->FS);
  // No preamble fits: a whole parse now, as fast as the command line's, and the preamble after
  // (buildPreamble, on another thread), for the edits that follow.
  if (!LastReused)
    Progress(true, (Verification ? "verifying the fixes of " : "parsing ") + llvm::sys::path::filename(In.File).str());

  IntrusiveRefCntPtr<llvm::vfs::FileSystem> VFS = P->FS;
  // The editor's text as the main file (AddImplicitPreamble maps it itself); the compiler
  // instance owns the buffer from here on.
  if (LastReused)
    Pre->AddImplicitPreamble(*Inv, VFS, Main.release());
  else
    Inv->getPreprocessorOpts().addRemappedFile(Inv->getFrontendOpts().Inputs[0].getFile(), Main.release());
  CompilerInstance Clang(std::make_shared<PCHContainerOperations>());
  Clang.setInvocation(Inv);
  Clang.createDiagnostics(&Diags, /*ShouldOwnClient=*/false);
  if (auto Remapped = createVFSFromCompilerInvocation(Clang.getInvocation(), Clang.getDiagnostics(), VFS))
    VFS = Remapped;
  Clang.createFileManager(VFS);
  bool Ok = Clang.createTarget();
  std::unique_ptr<FrontendAction> Act = Action.create();
  if (Ok && Act->BeginSourceFile(Clang, Clang.getFrontendOpts().Inputs[0])) {
    if (llvm::Error E = Act->Execute()) {
      llvm::consumeError(std::move(E));
      Ok = false;
    }
    Act->EndSourceFile();
  } else {
    Ok = false;
  }
  if (!LastReused) {
    Progress(false, "");
    std::lock_guard<std::mutex> Lock(M);
    // A verification that fails (the rewrite does not compile: an error in the body) still
    // wants the preamble; one with errors in the includes is not kept (buildPreamble).
    if (Ok && (Verification || !Clang.getDiagnostics().hasErrorOccurred()))
      Wanted = std::move(In);
  }
  return Ok;
}

} // namespace ampmigrate
