// The CPU step cache: large CPU blocks allocated inside value_and_grad (activations, the bf16 copies
// of O1, the gradients it returns) go back to a cache when freed and serve the next step, as CUDA's
// caching allocator does for device memory. See docs/runtime.md, "The CPU step cache".
#pragma once

#include <cstddef>

namespace amp::detail {

/// Entered by value_and_grad for its forward and backward on this thread (nests). The first
/// entry installs the wrapper around libtorch's CPU allocator; outside a scope, and on other
/// threads, every allocation goes to the allocator it wraps unchanged.
void step_cache_enter();
void step_cache_leave();

} // namespace amp::detail
