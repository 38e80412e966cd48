// The CUDA backend as the core sees it: a table of entry points that the backend's shared object
// (libamp_runtime_cuda) hands over when the core loads it on first use of a CUDA device.
#pragma once

#include "backend.h"
#include "op_table.h"

#include <cstdint>

namespace amp::detail {

#define AMP_DECLARE_FUNCTOR(Functor, entry) struct Functor;
AMP_LIST_OPS(AMP_DECLARE_FUNCTOR)
#undef AMP_DECLARE_FUNCTOR

/// Raised whenever the table's layout or the meaning of an entry changes: a core never uses a
/// backend built against another layout (a mismatched pair of installed libraries).
constexpr std::uint32_t kCudaBackendAbi = 1;

struct CudaBackend {
  std::uint32_t abi = kCudaBackendAbi;
  // One multi-tensor apply per list operation (op_table.h), in the table's order.
#define AMP_BACKEND_ENTRY(Functor, entry) void (*entry)(const Functor &, const ApplyArgs &) = nullptr;
  AMP_LIST_OPS(AMP_BACKEND_ENTRY)
#undef AMP_BACKEND_ENTRY
  void (*clip_coefficient)(const float *norm, float clip_norm, ClipRule rule, float *coef_out,
                           const ExecContext &ctx) = nullptr;
  void (*update_scale)(float *scale, std::int32_t *growth_tracker, const float *found_inf,
                       float growth_factor, float backoff_factor, std::int32_t growth_interval,
                       const ExecContext &ctx) = nullptr;
  void (*inverse_scale)(const float *scale, float *inv_scale, const ExecContext &ctx) = nullptr;
  void (*gemm)(const GemmArgs &args, const ExecContext &ctx) = nullptr;
  bool (*available)() = nullptr;
  bool (*is_device_pointer)(const void *p, int device) = nullptr;
};

/// The backend, loaded on the first call; null when it cannot be loaded (or the runtime was built
/// without it), with the reason, naming the library, in `*why`. Never throws.
const CudaBackend *try_cuda_backend(std::string *why);

/// The backend for a CUDA call of `op`; throws amp::Error "amp::<op>: <reason>" when it cannot be
/// loaded.
const CudaBackend &cuda_backend(const char *op);

// One overload per functor, so that the front end's generic dispatch stays one call.
#define AMP_CUDA_APPLY(Functor, entry)                                                             \
  inline void cuda_apply(const Functor &fn, const ApplyArgs &a) { cuda_backend(a.op).entry(fn, a); }
AMP_LIST_OPS(AMP_CUDA_APPLY)
#undef AMP_CUDA_APPLY

} // namespace amp::detail

/// The one symbol the backend's shared object exports (C linkage: found with dlsym by name).
extern "C" const amp::detail::CudaBackend *amp_cuda_backend_v1();
