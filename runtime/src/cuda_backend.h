// The CUDA backend as the core sees it: a table of entry points that the backend's shared object
// (libamp_runtime_cuda) hands over when the core loads it on first use of a CUDA device.
#pragma once

#include "backend.h"

#include <cstdint>

namespace amp::detail {

struct UnscaleAndCheck;
struct SumOfSquares;
struct ClipByNorm;
struct CastCopy;
struct SgdStep;
struct AdamStep;

/// Raised whenever the table's layout or the meaning of an entry changes: a core never uses a
/// backend built against another layout (a mismatched pair of installed libraries).
constexpr std::uint32_t kCudaBackendAbi = 1;

struct CudaBackend {
  std::uint32_t abi = kCudaBackendAbi;
  void (*unscale_and_check)(const UnscaleAndCheck &, const ApplyArgs &) = nullptr;
  void (*sum_of_squares)(const SumOfSquares &, const ApplyArgs &) = nullptr;
  void (*clip_by_norm)(const ClipByNorm &, const ApplyArgs &) = nullptr;
  void (*cast_copy)(const CastCopy &, const ApplyArgs &) = nullptr;
  void (*sgd_step)(const SgdStep &, const ApplyArgs &) = nullptr;
  void (*adam_step)(const AdamStep &, const ApplyArgs &) = nullptr;
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
inline void cuda_apply(const UnscaleAndCheck &fn, const ApplyArgs &a) {
  cuda_backend(a.op).unscale_and_check(fn, a);
}
inline void cuda_apply(const SumOfSquares &fn, const ApplyArgs &a) {
  cuda_backend(a.op).sum_of_squares(fn, a);
}
inline void cuda_apply(const ClipByNorm &fn, const ApplyArgs &a) {
  cuda_backend(a.op).clip_by_norm(fn, a);
}
inline void cuda_apply(const CastCopy &fn, const ApplyArgs &a) {
  cuda_backend(a.op).cast_copy(fn, a);
}
inline void cuda_apply(const SgdStep &fn, const ApplyArgs &a) {
  cuda_backend(a.op).sgd_step(fn, a);
}
inline void cuda_apply(const AdamStep &fn, const ApplyArgs &a) {
  cuda_backend(a.op).adam_step(fn, a);
}

} // namespace amp::detail

/// The one symbol the backend's shared object exports (C linkage: found with dlsym by name).
extern "C" const amp::detail::CudaBackend *amp_cuda_backend_v1();
