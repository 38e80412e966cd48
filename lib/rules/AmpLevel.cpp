// The AMP levels' names.
#include "ampmigrate/AmpLevel.h"

namespace ampmigrate {

llvm::StringRef levelName(AmpLevel L) {
  switch (L) {
  case AmpLevel::O0: return "O0";
  case AmpLevel::O1: return "O1";
  case AmpLevel::O2: return "O2";
  case AmpLevel::O3: return "O3";
  }
  return "O2";
}

bool parseLevel(llvm::StringRef S, AmpLevel &L) {
  if (S == "O0") L = AmpLevel::O0;
  else if (S == "O1") L = AmpLevel::O1;
  else if (S == "O2") L = AmpLevel::O2;
  else if (S == "O3") L = AmpLevel::O3;
  else return false;
  return true;
}

} // namespace ampmigrate
