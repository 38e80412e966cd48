// Compiled by runtime.header_without_build_folder with only runtime/include on the include path:
// the public header must not need the generated amp/config.h of a build folder.
#include <amp/runtime.h>

#if defined(AMP_WITH_CUDA)
#error "AMP_WITH_CUDA comes from amp/config.h, which is not on this include path"
#endif

int main() { return amp::cuda::available() ? 0 : 1; }
