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
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"

using namespace clang;

namespace ampmigrate {
namespace {

/// Skips the same header function bodies while precompiling as the driver's consumer skips in a
/// whole parse: the checks see the same declarations either way.
class SkippingCallbacks : public PreambleCallbacks {
public:
  explicit SkippingCallbacks(std::vector<std::string> Tokens) : Skipper(std::move(Tokens)) {}
  void BeforeExecute(CompilerInstance &CI) override { SM = &CI.getSourceManager(); }
  bool shouldSkipFunctionBody(Decl *D) override { return SM && Skipper.shouldSkip(*SM, D); }

private:
  const SourceManager *SM = nullptr;
  HeaderBodySkipper Skipper;
};

} // namespace

PreambleParser::PreambleParser(std::function<void(bool)> Progress) : Progress(std::move(Progress)) {}
PreambleParser::~PreambleParser() = default;

TUParser PreambleParser::parserFor(std::string Text, bool SkipBodies, std::vector<std::string> Tokens) {
  return [this, Text = std::move(Text), SkipBodies, Tokens = std::move(Tokens)](
             const std::vector<tooling::CompileCommand> &Cmds, const std::string &File,
             tooling::FrontendActionFactory &Action, DiagnosticConsumer &Diags) {
    return parse(Cmds, File, Text, SkipBodies, Tokens, Action, Diags);
  };
}

bool PreambleParser::parse(const std::vector<tooling::CompileCommand> &Cmds, const std::string &File,
                           const std::string &Text, bool SkipBodies, const std::vector<std::string> &Tokens,
                           tooling::FrontendActionFactory &Action, DiagnosticConsumer &Diags) {
  std::lock_guard<std::mutex> Lock(M);
  const tooling::CompileCommand &Cmd = Cmds.front();
  std::vector<std::string> Args = parseArgumentsAdjuster()(Cmd.CommandLine, Cmd.Filename);

  // The file system: the disk, with the editor's text over the document's file.
  auto Disk = llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(llvm::vfs::createPhysicalFileSystem().release());
  auto FS = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(Disk);
  auto Buffers = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  FS->pushOverlay(Buffers);
  FS->setCurrentWorkingDirectory(Cmd.Directory);
  Buffers->addFile(File, 0, llvm::MemoryBuffer::getMemBufferCopy(Text, File));

  // The compiler invocation, as a ClangTool run makes it (the driver reports to the same consumer).
  auto DiagOpts = llvm::makeIntrusiveRefCnt<DiagnosticOptions>();
  IntrusiveRefCntPtr<DiagnosticsEngine> DriverDiags =
      CompilerInstance::createDiagnostics(DiagOpts.get(), &Diags, /*ShouldOwnClient=*/false);
  std::vector<const char *> Argv;
  for (const std::string &A : Args)
    Argv.push_back(A.c_str());
  CreateInvocationOptions CIO;
  CIO.Diags = DriverDiags;
  CIO.VFS = FS;
  LangOptions DriverLangOpts; // outlives the driver's diagnostics
  Diags.BeginSourceFile(DriverLangOpts, nullptr);
  std::shared_ptr<CompilerInvocation> Inv = createInvocation(Argv, CIO);
  Diags.EndSourceFile();
  if (!Inv || Inv->getFrontendOpts().Inputs.empty())
    return false;
  Inv->getFrontendOpts().DisableFree = false;

  std::unique_ptr<llvm::MemoryBuffer> Main = llvm::MemoryBuffer::getMemBufferCopy(Text, File);
  PreambleBounds Bounds = ComputePreambleBounds(Inv->getLangOpts(), *Main, /*MaxLines=*/0);
  std::vector<std::string> Key = Args;
  Key.push_back(Cmd.Directory);
  Key.push_back(SkipBodies ? "skip-bodies" : "full-parse");
  Key.insert(Key.end(), Tokens.begin(), Tokens.end());
  LastReused = Preamble && Key == PreambleArgs &&
               Preamble->CanReuse(*Inv, Main->getMemBufferRef(), Bounds, *FS);
  if (!LastReused) {
    Preamble.reset();
    Progress(true);
    CompilerInvocation PreambleInv(*Inv);
    PreambleInv.getFrontendOpts().SkipFunctionBodies = SkipBodies;
    DiagnosticConsumer Errors; // counts them
    IntrusiveRefCntPtr<DiagnosticsEngine> PreambleDiags =
        CompilerInstance::createDiagnostics(new DiagnosticOptions, &Errors, /*ShouldOwnClient=*/false);
    SkippingCallbacks Callbacks(Tokens);
    llvm::ErrorOr<PrecompiledPreamble> Built =
        PrecompiledPreamble::Build(PreambleInv, Main.get(), Bounds, *PreambleDiags, FS,
                                   std::make_shared<PCHContainerOperations>(), /*StoreInMemory=*/true,
                                   /*StoragePath=*/"", Callbacks);
    Progress(false);
    // A preamble with errors would hide them from the parses that reuse it: none, then; the
    // whole-file parse below reports them.
    if (Built && Errors.getNumErrors() == 0) {
      Preamble = std::make_unique<PrecompiledPreamble>(std::move(*Built));
      PreambleArgs = std::move(Key);
    }
  }

  IntrusiveRefCntPtr<llvm::vfs::FileSystem> VFS = FS;
  // The editor's text as the main file (AddImplicitPreamble maps it itself); the compiler
  // instance owns the buffer from here on.
  if (Preamble)
    Preamble->AddImplicitPreamble(*Inv, VFS, Main.release());
  else
    Inv->getPreprocessorOpts().addRemappedFile(Inv->getFrontendOpts().Inputs[0].getFile(), Main.release());
  CompilerInstance Clang(std::make_shared<PCHContainerOperations>());
  Clang.setInvocation(Inv);
  Clang.createDiagnostics(&Diags, /*ShouldOwnClient=*/false);
  if (auto Remapped = createVFSFromCompilerInvocation(Clang.getInvocation(), Clang.getDiagnostics(), VFS))
    VFS = Remapped;
  Clang.createFileManager(VFS);
  if (!Clang.createTarget())
    return false;
  std::unique_ptr<FrontendAction> Act = Action.create();
  if (!Act->BeginSourceFile(Clang, Clang.getFrontendOpts().Inputs[0]))
    return false;
  if (llvm::Error E = Act->Execute()) {
    llvm::consumeError(std::move(E));
    Act->EndSourceFile();
    return false;
  }
  Act->EndSourceFile();
  return true;
}

} // namespace ampmigrate
