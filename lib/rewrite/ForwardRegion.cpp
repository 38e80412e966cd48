// The text of the function handed to value_and_grad, from the forward region's text.
#include "ForwardRegion.h"

#include "llvm/ADT/STLExtras.h"
#include <algorithm>

namespace ampmigrate {

std::string indentedLambdaBody(llvm::StringRef Body, bool OneBlock) {
  std::string Indented;
  bool Unwrap = false;
  if (OneBlock) {
    llvm::StringRef Trimmed = Body.trim();
    size_t Open = Body.find('{'), Close = Body.rfind('}');
    if (Trimmed.starts_with("{") && Trimmed.ends_with("}") && Open != llvm::StringRef::npos) {
      llvm::StringRef Inside = Body.slice(Open + 1, Close);
      // Keep whole lines: drop the rest of the `{` line and the indentation before `}`.
      size_t FirstNL = Inside.find('\n');
      size_t LastNL = Inside.rfind('\n');
      if (FirstNL != llvm::StringRef::npos && Inside.take_front(FirstNL).trim().empty() &&
          Inside.drop_front(LastNL + 1).trim().empty()) {
        Indented = Inside.slice(FirstNL + 1, LastNL + 1).str();
        Unwrap = true;
      }
    }
  }
  llvm::StringRef Rest(Unwrap ? llvm::StringRef() : Body);
  while (!Rest.empty()) {
    auto [Line, Tail] = Rest.split('\n');
    if (!Line.trim().empty())
      Indented += "  ";
    Indented += Line.str();
    if (Rest.size() > Line.size())
      Indented += "\n";
    Rest = Tail;
  }
  return Indented;
}

void sortAndMergeEdits(std::vector<Edit> &Edits) {
  llvm::sort(Edits, [](const Edit &A, const Edit &B) {
    return A.Offset < B.Offset || (A.Offset == B.Offset && A.Length < B.Length);
  });
  Edits.erase(std::unique(Edits.begin(), Edits.end(),
                          [](const Edit &A, const Edit &B) {
                            return A.Offset == B.Offset && A.Length == B.Length && A.Text == B.Text;
                          }),
              Edits.end());
}

} // namespace ampmigrate
