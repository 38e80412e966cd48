// Which files of a translation unit are analysed: the main file, and the headers a header filter
// selects, never a system header nor one of libtorch's own (README.md, "Configuration and rules").
#pragma once

#include "clang/Basic/SourceLocation.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Regex.h"
#include <memory>
#include <string>

namespace ampmigrate {

class HeaderScope {
public:
  /// How a header's name is matched against the filter.
  enum class Name {
    Absolute, ///< the absolute path that reports print (amp-migrate, the language server)
    AsOpened, ///< the name the compiler opened it by (clang-tidy's HeaderFilterRegex)
  };

  /// `Filter` empty: no header is in scope.
  HeaderScope(const clang::SourceManager &SM, const std::string &Filter, Name Match = Name::Absolute);

  /// Whether a finding at `L` (its expansion) is reported: in the main file, or in a header the
  /// filter matches that is neither a system header nor under a libtorch include root.
  bool inScope(clang::SourceLocation L) const;

  /// Whether `Dir` is a libtorch include root: it holds ATen/ATen.h and c10/macros/Macros.h (the
  /// include/ folder of a libtorch install or wheel, or /usr/include with Debian's libtorch).
  static bool isLibtorchIncludeRoot(llvm::StringRef Dir);

private:
  bool headerInScope(clang::FileID ID) const;
  bool underLibtorch(llvm::StringRef AbsolutePath) const;

  const clang::SourceManager &SM;
  std::shared_ptr<llvm::Regex> Filter; // null: no header is in scope
  Name Match;
  mutable llvm::DenseMap<clang::FileID, bool> Headers; // by file, the answer
  mutable llvm::StringMap<bool> Roots;                 // by directory, isLibtorchIncludeRoot
};

} // namespace ampmigrate
