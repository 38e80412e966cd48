// The one place where torch tensors meet the runtime core: each list operation of the binding,
// grouped by device, handed to amp::runtime as TensorViews (torch ops only for what the core
// does not take: fp64 or non-contiguous tensors, CUDA tensors without a CUDA build of either).
#pragma once

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cstdint>
#include <vector>

namespace amp::detail {

/// Every call takes tensors on one device; scalars are device tensors (no host sync).
/// grads[i] *= inv_scale in place (fp32 math); found_inf (fp32, 1 element) set to 1 on inf/NaN.
void unscale_and_check(const std::vector<at::Tensor> &grads, const at::Tensor &inv_scale,
                       const at::Tensor &found_inf);
/// unscale_and_check and the 0-dim fp32 global norm of the unscaled grads, in one pass where the
/// core takes the list; the norm is global_norm of the grads afterwards, bit for bit (the same
/// chunks and sums over the same fp32 values).
at::Tensor unscale_check_and_norm(const std::vector<at::Tensor> &grads,
                                  const at::Tensor &inv_scale, const at::Tensor &found_inf);
/// 0-dim fp32 L2 norm over all elements of all tensors.
at::Tensor global_norm(const std::vector<at::Tensor> &xs, const at::Device &device);
/// out[i] = in[i] * clip_norm / max(norm, clip_norm) (MindSpore's rule); `norm` a device scalar.
void clip_by_global_norm(const std::vector<at::Tensor> &in, const std::vector<at::Tensor> &out,
                         double clip_norm, const at::Tensor &norm);
/// inv_scale = float(1 / double(scale)), both 0-dim fp32 on one device (no host sync).
void inverse_scale(const at::Tensor &scale, const at::Tensor &inv_scale);
/// PyTorch's growth/backoff rule on the device.
void update_scale(const at::Tensor &scale, const at::Tensor &growth_tracker,
                  const at::Tensor &found_inf, double growth_factor, double backoff_factor,
                  std::int64_t growth_interval);
/// dst[i] = cast(src[i]).
void cast_copy(const std::vector<at::Tensor> &src, const std::vector<at::Tensor> &dst);

/// Whether the core takes these tensors (used by the tests to prove which path ran).
bool core_takes(const std::vector<at::Tensor> &ts);

/// The torch-op paths the dispatch takes for what the core does not (fp64, CUDA without a CUDA
/// build). Declared so that the tests run them on the CPU next to the core: they must follow the
/// core's NaN and growth rules (docs/runtime-core.md, "One rule for NaN").
namespace torch_fallback {
void clip_by_global_norm(const std::vector<at::Tensor> &in, const std::vector<at::Tensor> &out,
                         double clip_norm, const at::Tensor &norm);
void update_scale(const at::Tensor &scale, const at::Tensor &growth_tracker,
                  const at::Tensor &found_inf, double growth_factor, double backoff_factor,
                  std::int64_t growth_interval);
} // namespace torch_fallback

} // namespace amp::detail
