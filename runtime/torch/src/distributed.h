// What the GradScaler and clipping share with the collectives (distributed.cpp): the inf check
// reduced across ranks, and clipping to a norm computed elsewhere.
#pragma once

#include <amp/torch.h>

#include <vector>

namespace amp::detail {

/// out_i = x_i * clip_norm / max(norm, clip_norm), out of place, per device through the core.
std::vector<torch::Tensor> clip_to_norm(const std::vector<torch::Tensor> &xs, double clip_norm,
                                        const torch::Tensor &norm);
/// The same in place: each x_i scaled where it lies (non-contiguous ones through a copy). Throws
/// amp::Error, naming `who`, when two of the tensors share memory or one overlaps itself.
void clip_to_norm_(const std::vector<torch::Tensor> &xs, double clip_norm,
                   const torch::Tensor &norm, const char *who);
/// What every clip checks first, naming `who` (the function that was called): clip_norm > 0 and
/// finite as the fp32 the clip runs in, and floating-point tensors only. Throws amp::Error.
void check_clip_arguments(const std::vector<torch::Tensor> &xs, double clip_norm, const char *who);
/// A max norm past fp32's range (+inf): the in-place clip leaves the grads as they are, as
/// libtorch's clip_grad_norm_ does, and returns the norm.
bool clips_nothing(double clip_norm);

#if AMP_TORCH_DISTRIBUTED
/// Combines the per-device inf checks into one and all-reduces it with MAX over `collective`:
/// afterwards every rank holds the same single found_inf (on the first check's device).
void reduce_found_inf(const Collective &collective, std::vector<torch::Tensor> &found_inf_per_device);
#endif

} // namespace amp::detail
