// The exported entry point of libamp_runtime_cuda: the table of this backend's functions that the
// core (cuda_loader.cpp) looks up with dlsym after loading the library on first CUDA use.
#include "../cuda_backend.h"
#include "../functors.h"

extern "C" const amp::detail::CudaBackend *amp_cuda_backend_v1() {
  namespace cuda = amp::detail::cuda;
  using namespace amp::detail;
  static const CudaBackend table = [] {
    CudaBackend t;
    t.unscale_and_check = &cuda::apply<UnscaleAndCheck>;
    t.sum_of_squares = &cuda::apply<SumOfSquares>;
    t.clip_by_norm = &cuda::apply<ClipByNorm>;
    t.cast_copy = &cuda::apply<CastCopy>;
    t.sgd_step = &cuda::apply<SgdStep>;
    t.adam_step = &cuda::apply<AdamStep>;
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
