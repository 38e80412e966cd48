// Framework-neutral core of the amp runtime: list-of-tensor operations for loss scaling,
// inf checks, global norms, clipping, master-weight casts and fused optimizer steps.
//
// This header is the contract between the backends (runtime/src/cpu, runtime/src/cuda) and the
// framework bindings (runtime/torch). Every operation takes a list of TensorViews that all live on
// one device; scalars that the GPU reads or writes (inv_scale, found_inf, norm, scale, tracker)
// are pointers into memory on that same device, so no operation needs a host synchronisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "amp/config.h"

namespace amp {

enum class DType : std::uint8_t { F32, F16, BF16 };
enum class DeviceKind : std::uint8_t { CPU, CUDA };

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;
  friend bool operator==(Device a, Device b) { return a.kind == b.kind && a.index == b.index; }
  friend bool operator!=(Device a, Device b) { return !(a == b); }
};

/// A contiguous tensor owned by someone else: pointer, element type, element count, device.
struct TensorView {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::int64_t numel = 0;
  Device device{};
};

/// Where an operation runs. On CUDA, `stream` is a cudaStream_t (nullptr = legacy default stream).
/// On the CPU, `threads` caps the worker threads (0 = the runtime decides).
struct ExecContext {
  Device device{};
  void *stream = nullptr;
  int threads = 0;
};

/// Every error the runtime raises: names the operation, the tensor index (or -1) and the problem.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

const char *dtype_name(DType t);
std::size_t dtype_size(DType t);
bool cuda_available(); // compiled with CUDA and a device is present

// ---- 1. unscale + inf/NaN check --------------------------------------------------------------
/// grads[i] = grads[i] * (*inv_scale) (skipped when *inv_scale == 1); *found_inf = 1.0f if any
/// element is inf or NaN (set, never cleared: the caller zeroes it). fp16/bf16 math in fp32.
void unscale_and_check(const std::vector<TensorView> &grads, const float *inv_scale,
                       float *found_inf, const ExecContext &ctx);

// ---- 2. global L2 norm ------------------------------------------------------------------------
/// *norm = sqrt(sum_i sum(x_i^2)), accumulated in fp32 (fp64 on the CPU), deterministic.
void global_norm(const std::vector<TensorView> &xs, float *norm, const ExecContext &ctx);
/// unscale_and_check and global_norm of the unscaled values in one pass over the grads.
void unscale_check_and_norm(const std::vector<TensorView> &grads, const float *inv_scale,
                            float *found_inf, float *norm, const ExecContext &ctx);
/// Read-only variant for fused chains: *norm = global norm of grads * (*inv_scale) (null = 1) and
/// *found_inf set on any inf/NaN, without writing the grads (a fused step applies the unscale).
void check_and_norm(const std::vector<TensorView> &grads, const float *inv_scale, float *found_inf,
                    float *norm, const ExecContext &ctx);

// ---- 3. clip by global norm -------------------------------------------------------------------
enum class ClipRule : std::uint8_t {
  MindSpore, ///< coef = clip_norm / max(norm, clip_norm)
  PyTorch,   ///< coef = min(1, max_norm / (norm + 1e-6))
};
/// out[i] = in[i] * coef(*norm). `out` may alias `in` (in place). `norm` is a device scalar (from
/// global_norm); `coef_out`, if non-null, receives the coefficient on the device.
void clip_by_global_norm(const std::vector<TensorView> &in, const std::vector<TensorView> &out,
                         float clip_norm, const float *norm, ClipRule rule, float *coef_out,
                         const ExecContext &ctx);
/// Only the coefficient: *coef_out = coef(*norm), one device-side scalar update (what a fused step
/// takes as `clip_coef`). clip_by_global_norm with empty lists does the same.
void clip_coefficient(float clip_norm, const float *norm, ClipRule rule, float *coef_out,
                      const ExecContext &ctx);

// ---- 4. scale update --------------------------------------------------------------------------
/// PyTorch's growth/backoff rule as one device-side update of *scale and *growth_tracker.
void update_scale(float *scale, std::int32_t *growth_tracker, const float *found_inf,
                  float growth_factor, float backoff_factor, std::int32_t growth_interval,
                  const ExecContext &ctx);
/// *inv_scale = float(1.0 / double(*scale)) (SEMANTICS.md), computed where the scale lives so that
/// unscale_and_check and the fused steps never need the scale on the host.
void inverse_scale(const float *scale, float *inv_scale, const ExecContext &ctx);

// ---- 5. casts and copies ----------------------------------------------------------------------
/// dst[i] = cast(src[i]); the lists pair up, each pair the same numel. Any dtype to any dtype.
void cast_copy(const std::vector<TensorView> &src, const std::vector<TensorView> &dst,
               const ExecContext &ctx);

// ---- 6. fused optimizer steps -----------------------------------------------------------------
/// The grads are scaled by *inv_scale and then by *clip_coef (either pointer may be null = 1);
/// when *found_inf != 0 (pointer may be null) nothing is updated. params are fp32 masters;
/// `model_copies`, if not empty, receives cast(param) after the update (fp16/bf16 copies).
struct SgdOptions {
  float lr = 0.01f, momentum = 0.0f, dampening = 0.0f, weight_decay = 0.0f;
  bool nesterov = false;
  bool first_step = false; ///< momentum buffers are initialised from the grad (PyTorch rule)
};
void fused_sgd_step(const std::vector<TensorView> &params, const std::vector<TensorView> &grads,
                    const std::vector<TensorView> &momentum_buffers,
                    const std::vector<TensorView> &model_copies, const SgdOptions &opt,
                    const float *inv_scale, const float *clip_coef, const float *found_inf,
                    const ExecContext &ctx);

struct AdamOptions {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  bool adamw = false;    ///< decoupled weight decay
  std::int64_t step = 1; ///< the step number after this update (bias correction)
};
void fused_adam_step(const std::vector<TensorView> &params, const std::vector<TensorView> &grads,
                     const std::vector<TensorView> &exp_avg,
                     const std::vector<TensorView> &exp_avg_sq,
                     const std::vector<TensorView> &model_copies, const AdamOptions &opt,
                     const float *inv_scale, const float *clip_coef, const float *found_inf,
                     const ExecContext &ctx);

// ---- 7. mixed-precision GEMM ------------------------------------------------------------------
/// C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C (+ bias[n]), row-major, fp32 accumulation.
struct GemmArgs {
  TensorView a, b, c;
  TensorView bias; ///< optional (data == nullptr: none)
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 0.0f;
  bool relu = false; ///< epilogue
};
void gemm(const GemmArgs &args, const ExecContext &ctx);

} // namespace amp
