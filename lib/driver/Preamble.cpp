// Precompiled preambles: the invocation of a parse, the body-skipping build, the shared store.
#include "ampmigrate/Preamble.h"
#include "ampmigrate/HeaderBodySkipper.h"

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/DiagnosticOptions.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/Utils.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "clang/Serialization/PCHContainerOperations.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace clang;

namespace ampmigrate {
namespace {

/// The inactive `#if` regions of the main file, as offsets (the build's source locations mean
/// nothing to the parses that reuse the preamble).
class MainFileSkippedRanges : public PPCallbacks {
public:
  MainFileSkippedRanges(const SourceManager &SM, std::vector<std::pair<unsigned, unsigned>> &Out)
      : SM(SM), Out(Out) {}
  void SourceRangeSkipped(SourceRange Range, SourceLocation) override {
    if (SM.isWrittenInMainFile(Range.getBegin()) && SM.isWrittenInMainFile(Range.getEnd()))
      Out.emplace_back(SM.getFileOffset(Range.getBegin()), SM.getFileOffset(Range.getEnd()));
  }

private:
  const SourceManager &SM;
  std::vector<std::pair<unsigned, unsigned>> &Out;
};

/// Skips the same header function bodies while precompiling as the driver's consumer skips in a
/// whole parse (the same rule, learning the same classes from the same top-level declarations):
/// the checks see the same declarations either way.
class SkippingCallbacks : public PreambleCallbacks {
public:
  SkippingCallbacks(const RuleSet &Rules, bool SkipBodies, bool SkipAll)
      : SkipBodies(SkipBodies), SkipAll(SkipAll), Skipper(Rules) {}
  void BeforeExecute(CompilerInstance &CI) override { SM = &CI.getSourceManager(); }
  std::unique_ptr<PPCallbacks> createPPCallbacks() override {
    if (!SM)
      return nullptr;
    return std::make_unique<MainFileSkippedRanges>(*SM, Inactive);
  }
  bool shouldSkipFunctionBody(Decl *D) override {
    bool Skip = SkipAll || (SkipBodies && SM && Skipper.shouldSkip(*SM, D));
    Skipped += Skip;
    return Skip;
  }
  void HandleTopLevelDecl(DeclGroupRef DG) override {
    if (SkipBodies && !SkipAll && SM)
      Skipper.learn(*SM, DG);
  }

  std::vector<std::pair<unsigned, unsigned>> Inactive;
  unsigned Skipped = 0;
  const std::vector<std::string> &learned() const { return Skipper.learned(); }

private:
  bool SkipBodies;
  /// The language server's verification preamble: every body (all are in headers no fix edits).
  bool SkipAll;
  const SourceManager *SM = nullptr;
  HeaderBodySkipper Skipper;
};

/// Counts the build's errors itself. PrecompiledPreamble writes its PCH with AllowASTWithErrors,
/// and PCHGenerator then clears its diagnostic client's counts (DiagnosticConsumer::clear) so that
/// the errors "do not fail the compilation": getNumErrors() reads 0 after a build whose headers
/// had errors (an unguarded header included twice, a header not found), and the parses that reuse
/// the preamble never see those errors again. A whole parse reports them.
class PreambleErrorCount : public DiagnosticConsumer {
public:
  void HandleDiagnostic(DiagnosticsEngine::Level Level, const Diagnostic &Info) override {
    DiagnosticConsumer::HandleDiagnostic(Level, Info);
    if (Level >= DiagnosticsEngine::Error)
      ++Errors;
  }
  unsigned errors() const { return Errors; }

private:
  unsigned Errors = 0; ///< not reset by clear()
};

} // namespace

std::optional<PreparedParse> prepareParse(const tooling::CompileCommand &Cmd, const std::vector<std::string> &Args,
                                          const std::map<std::string, std::string> &Buffers,
                                          IntrusiveRefCntPtr<llvm::vfs::FileSystem> Base, DiagnosticConsumer &Diags) {
  PreparedParse P;
  P.FS = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(std::move(Base));
  auto InMemory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  P.FS->pushOverlay(InMemory);
  P.FS->setCurrentWorkingDirectory(Cmd.Directory);
  for (const auto &[Path, Text] : Buffers)
    InMemory->addFile(Path, 0, llvm::MemoryBuffer::getMemBufferCopy(Text, Path));

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

std::shared_ptr<const BuiltPreamble> buildPreamble(PreparedParse &P, const llvm::MemoryBuffer &Main,
                                                   const PreambleBounds &Bounds, const RuleSet &Rules,
                                                   bool SkipBodies, bool SkipAll, bool Instantiate) {
  PreambleErrorCount Errors;
  if (Instantiate)
    SkipBodies = SkipAll = false;
  P.Inv->getFrontendOpts().SkipFunctionBodies = SkipBodies || SkipAll;
  P.Inv->getLangOpts().PCHInstantiateTemplates = Instantiate;
  IntrusiveRefCntPtr<DiagnosticsEngine> Diags =
      CompilerInstance::createDiagnostics(new DiagnosticOptions, &Errors, /*ShouldOwnClient=*/false);
  SkippingCallbacks Callbacks(Rules, SkipBodies, SkipAll);
  IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS = P.FS;
  llvm::ErrorOr<PrecompiledPreamble> Result =
      PrecompiledPreamble::Build(*P.Inv, &Main, Bounds, *Diags, FS, std::make_shared<PCHContainerOperations>(),
                                 /*StoreInMemory=*/true, /*StoragePath=*/"", Callbacks);
  // A preamble with errors would hide them from the parses that reuse it: none, then; the
  // whole-file parses report them.
  if (!Result || Errors.errors() > 0)
    return nullptr;
  return std::shared_ptr<const BuiltPreamble>(
      new BuiltPreamble{std::move(*Result), std::move(Callbacks.Inactive), Callbacks.Skipped, Callbacks.learned(), {}});
}

bool runPreparedParse(std::shared_ptr<CompilerInvocation> Inv, IntrusiveRefCntPtr<llvm::vfs::FileSystem> VFS,
                      tooling::FrontendActionFactory &Action, DiagnosticConsumer &Diags) {
  CompilerInstance Clang(std::make_shared<PCHContainerOperations>());
  Clang.setInvocation(std::move(Inv));
  Clang.createDiagnostics(&Diags, /*ShouldOwnClient=*/false);
  if (auto Remapped = createVFSFromCompilerInvocation(Clang.getInvocation(), Clang.getDiagnostics(), VFS))
    VFS = Remapped;
  Clang.createFileManager(VFS);
  if (!Clang.createTarget())
    return false;
  std::unique_ptr<FrontendAction> Act = Action.create();
  if (!Act->BeginSourceFile(Clang, Clang.getFrontendOpts().Inputs[0]))
    return false;
  bool Ok = true;
  if (llvm::Error E = Act->Execute()) {
    llvm::consumeError(std::move(E));
    Ok = false;
  }
  Act->EndSourceFile();
  return Ok;
}

PreambleStore &PreambleStore::process() {
  static PreambleStore Store;
  return Store;
}

std::shared_ptr<const BuiltPreamble>
PreambleStore::get(const std::vector<std::string> &Key,
                   const std::function<std::shared_ptr<const BuiltPreamble>()> &Build) {
  std::unique_lock<std::mutex> Lock(M);
  std::shared_ptr<Slot> &Entry = Slots[Key];
  bool New = !Entry;
  if (New)
    Entry = std::make_shared<Slot>();
  std::shared_ptr<Slot> S = Entry;
  S->Used = ++Clock;
  if (!New) {
    Done.wait(Lock, [&] { return S->Ready; });
    return S->Value;
  }
  Lock.unlock();
  std::shared_ptr<const BuiltPreamble> Value = Build();
  Lock.lock();
  S->Value = Value;
  S->Ready = true;
  Done.notify_all();
  // A failed build is not kept: the next translation unit with these includes tries its own.
  auto It = Slots.find(Key);
  if (!Value && It != Slots.end() && It->second == S)
    Slots.erase(It);
  while (Slots.size() > MaxKept) {
    auto Oldest = Slots.end();
    for (auto I = Slots.begin(); I != Slots.end(); ++I)
      if (I->second->Ready && (Oldest == Slots.end() || I->second->Used < Oldest->second->Used))
        Oldest = I;
    if (Oldest == Slots.end())
      break;
    Slots.erase(Oldest);
  }
  return Value;
}

} // namespace ampmigrate
