// The driver's compile commands: their adjustments, and one ClangTool parse.
#include "DriverInternal.h"

#include "clang/Frontend/CompilerInstance.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace clang;
namespace ampmigrate {
using namespace driver;

namespace driver {

namespace {

/// CMake's precompiled headers (`-include .../cmake_pch.hxx` next to a compiler-specific .gch)
/// belong to the build, not to the sources: the TU's own includes are what the tool must see.
tooling::ArgumentsAdjuster stripPrecompiledHeaders() {
  return [](const tooling::CommandLineArguments &Args, StringRef) {
    tooling::CommandLineArguments Out;
    for (size_t I = 0; I < Args.size(); ++I) {
      StringRef A = Args[I];
      bool HasValue = I + 1 < Args.size();
      if ((A == "-include" || A == "-include-pch") && HasValue &&
          (StringRef(Args[I + 1]).contains("cmake_pch") || A == "-include-pch")) {
        ++I;
        continue;
      }
      if (A == "-Xclang" && HasValue && (Args[I + 1] == "-include-pch" || Args[I + 1] == "-include")) {
        // -Xclang -include -Xclang <pch>: drop all four.
        if (I + 3 < Args.size() && StringRef(Args[I + 3]).contains("cmake_pch")) {
          I += 3;
          continue;
        }
      }
      if (A == "-Winvalid-pch" || A == "-fpch-preprocess" || A.starts_with("-fpch-instantiate"))
        continue;
      Out.push_back(Args[I]);
    }
    return Out;
  };
}

} // namespace

/// Where the verification parse finds the runtime's headers (<amp/torch.h>) when the project's
/// compile command does not name them yet (it did not need them before the migration): next to
/// the installed tool (<prefix>/include), else the source and build trees it was built from.
/// Searched after everything the command names (-idirafter).
std::vector<std::string> runtimeIncludeArgs() {
  std::vector<std::string> Dirs;
  std::string Exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  llvm::SmallString<256> Installed(llvm::sys::path::parent_path(llvm::sys::path::parent_path(Exe)));
  llvm::sys::path::append(Installed, "include");
  llvm::SmallString<256> Probe(Installed);
  llvm::sys::path::append(Probe, "amp", "torch.h");
  if (!Exe.empty() && llvm::sys::fs::exists(Probe)) {
    Dirs.push_back(std::string(Installed));
  } else {
    llvm::SmallVector<StringRef, 4> Parts;
    StringRef(AMP_RUNTIME_BUILD_INCLUDE_DIRS).split(Parts, '|', -1, false);
    for (StringRef P : Parts)
      Dirs.push_back(P.str());
  }
  std::vector<std::string> Args;
  for (const std::string &D : Dirs) {
    Args.push_back("-idirafter");
    Args.push_back(D);
  }
  return Args;
}

/// Parses `File` as the driver does (its compile command, syntax only, the editor's overlays and
/// `Extra` files mapped over `FS`). Returns false when the parse had errors.
bool parseTU(const tooling::CompilationDatabase &DB, const std::string &File,
             const std::map<std::string, std::string> &Overlays,
             const std::map<std::string, std::string> &Extra, tooling::FrontendActionFactory &Factory,
             ErrorCollector &Errors, llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS,
             const std::vector<std::string> &ExtraArgs) {
  tooling::ClangTool Tool(DB, {File}, std::make_shared<PCHContainerOperations>(), std::move(FS));
  Tool.setPrintErrorMessage(false);
  Tool.setDiagnosticConsumer(&Errors);
  Tool.appendArgumentsAdjuster(parseArgumentsAdjuster());
  if (!ExtraArgs.empty())
    Tool.appendArgumentsAdjuster(
        tooling::getInsertArgumentAdjuster(ExtraArgs, tooling::ArgumentInsertPosition::END));
  for (const auto &[Path, Text] : Overlays)
    if (!Extra.count(Path))
      Tool.mapVirtualFile(Path, Text);
  for (const auto &[Path, Text] : Extra)
    Tool.mapVirtualFile(Path, Text);
  int RC = Tool.run(&Factory);
  Errors.OS.flush();
  return RC == 0 && Errors.getNumErrors() == 0;
}

} // namespace driver

tooling::ArgumentsAdjuster parseArgumentsAdjuster() {
  tooling::ArgumentsAdjuster A = tooling::getInsertArgumentAdjuster(
      {"-resource-dir=" AMP_CLANG_RESOURCE_DIR, "-Wno-everything"}, tooling::ArgumentInsertPosition::BEGIN);
  for (tooling::ArgumentsAdjuster Next : {tooling::getClangSyntaxOnlyAdjuster(), stripPrecompiledHeaders(),
                                          tooling::getClangStripOutputAdjuster(),
                                          tooling::getClangStripDependencyFileAdjuster()})
    A = tooling::combineAdjusters(std::move(A), std::move(Next));
  return A;
}

} // namespace ampmigrate
