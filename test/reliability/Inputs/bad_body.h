// A project header with no AMP name (so the fast path skips its function bodies) whose function
// body does not compile.
#pragma once
inline int helper() { return undeclared_name + 1; }
