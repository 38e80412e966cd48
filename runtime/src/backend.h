// The interface between the validating front end (ops.cpp) and the CPU and CUDA backends.
#pragma once

#include "amp/runtime.h"

#include <array>
#include <cstdint>
#include <vector>

namespace amp::detail {

/// Elements per chunk: the unit of work of one CUDA block and of one CPU task. 2^16 as in Apex and
/// PyTorch: large enough to amortise per-chunk setup, small enough to balance thousands of tensors.
constexpr std::int64_t kChunkElements = 65536;

/// Number of chunks of a tensor. 64-bit throughout: tensors over 2^31 elements are ordinary.
constexpr std::int64_t chunk_count(std::int64_t numel) {
  return (numel + kChunkElements - 1) / kChunkElements;
}

/// One unit of work: elements [begin, begin + size) of tensor `tensor`.
struct Chunk {
  std::int64_t tensor;
  std::int64_t begin;
  std::int64_t size;
};

/// Every chunk of every non-empty tensor, in list order (the order partial sums are combined in,
/// which is what makes the norms deterministic).
std::vector<Chunk> plan_chunks(const std::vector<TensorView> &tensors);

/// What a multi-tensor apply walks and what it reports. `lists[l]` is null for a list the functor
/// neither reads nor writes (an absent model-copy list); the front end has checked that the lists
/// pair up (same length, same numel per index).
struct ApplyArgs {
  const char *op = ""; ///< the public op's name, for error messages
  std::array<const std::vector<TensorView> *, 5> lists{};
  float *found_inf = nullptr; ///< set to 1 if any element stat was non-finite (null: not checked)
  float *norm = nullptr;      ///< receives sqrt(sum of element squares) (null: no norm)
  ExecContext ctx;
};

namespace cpu {
template <class Fn> void apply(const Fn &fn, const ApplyArgs &args);
void clip_coefficient(const float *norm, float clip_norm, ClipRule rule, float *coef_out);
void update_scale(float *scale, std::int32_t *growth_tracker, const float *found_inf,
                  float growth_factor, float backoff_factor, std::int32_t growth_interval);
void inverse_scale(const float *scale, float *inv_scale);
void gemm(const GemmArgs &args, int threads);
/// The OpenMP threads a call capped at `requested` (ExecContext::threads, >= 0) may use: 0 means
/// OpenMP's default; a cap is lowered to max(processors, OpenMP's default), so that an absurd cap
/// (2^30: libgomp would allocate its per-thread state, hundreds of GB, before failing) costs
/// nothing. Oversubscribing the processors only adds fork cost to these memory-bound loops.
int worker_threads(int requested);
} // namespace cpu

namespace cuda {
template <class Fn> void apply(const Fn &fn, const ApplyArgs &args);
void clip_coefficient(const float *norm, float clip_norm, ClipRule rule, float *coef_out,
                      const ExecContext &ctx);
void update_scale(float *scale, std::int32_t *growth_tracker, const float *found_inf,
                  float growth_factor, float backoff_factor, std::int32_t growth_interval,
                  const ExecContext &ctx);
void inverse_scale(const float *scale, float *inv_scale, const ExecContext &ctx);
void gemm(const GemmArgs &args, const ExecContext &ctx);
bool available();
/// Whether `p` may be dereferenced by kernels on `device` (device or managed memory).
bool is_device_pointer(const void *p, int device);
} // namespace cuda

} // namespace amp::detail
