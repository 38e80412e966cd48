// Code of the model that asks whether autocast is on. After the migration autocast is never
// enabled (the model is converted instead), so such a query answers differently and the code it
// guards takes its other path: the step cannot be rewritten with the same meaning.
#pragma once

#include "ampmigrate/Rules.h"
#include "ampmigrate/ShapeRecognisers.h" // modelClass
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"

namespace ampmigrate {


/// The first autocast query (a function of role `query` in the rules: `at::autocast::is_enabled()`,
/// `is_autocast_enabled(device)`, the dtype getters) that the forward call `Forward` runs: in a
/// `forward` method of the model's class (a `TORCH_MODULE` holder's implementation class too) or
/// in a method of that class it calls, a few calls deep. Null when none is visible in the TU.
const clang::CallExpr *autocastQueryInForward(const clang::Expr *Forward, const RuleSet &Rules);

} // namespace ampmigrate
