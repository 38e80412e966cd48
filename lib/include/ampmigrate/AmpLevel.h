// The AMP levels O0-O3 a migration converts the model by, and their names.
#pragma once

#include "llvm/ADT/StringRef.h"

namespace ampmigrate {

enum class AmpLevel { O0, O1, O2, O3 };

/// "O0".."O3".
llvm::StringRef levelName(AmpLevel L);
/// Parses "O0".."O3"; false for anything else.
bool parseLevel(llvm::StringRef S, AmpLevel &L);

} // namespace ampmigrate
