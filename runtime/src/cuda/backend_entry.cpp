// The exported entry point of libamp_runtime_cuda: the table of this backend's functions that the
// core (cuda_loader.cpp) looks up with dlsym after loading the library on first CUDA use.
#include "../cuda_backend.h"
#include "../functors.h"

extern "C" const amp::detail::CudaBackend *amp_cuda_backend_v1() {
  namespace cuda = amp::detail::cuda;
  using namespace amp::detail;
  static const CudaBackend table = [] {
    CudaBackend t;
#define AMP_BACKEND_FILL(Functor, entry) t.entry = &cuda::apply<Functor>;
    AMP_LIST_OPS(AMP_BACKEND_FILL)
#undef AMP_BACKEND_FILL
    t.clip_coefficient = &cuda::clip_coefficient;
    t.update_scale = &cuda::update_scale;
    t.inverse_scale = &cuda::inverse_scale;
    t.gemm = &cuda::gemm;
    t.available = &cuda::available;
    t.is_device_pointer = &cuda::is_device_pointer;
    return t;
  }();
  return &table;
}
