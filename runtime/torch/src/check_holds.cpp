// amp::check_holds: whether an optimizer holds every trainable tensor of a parameter list (the
// precondition of a migrated clip of the model's parameters; amp/torch.h).
#include <amp/torch.h>

#include <fmt/format.h>

#include <unordered_set>

namespace amp {

void check_holds(torch::optim::Optimizer &optimizer, const std::vector<torch::Tensor> &params) {
  std::unordered_set<const c10::TensorImpl *> held;
  for (const torch::Tensor &p : detail::all_parameters(optimizer))
    held.insert(p.unsafeGetTensorImpl());
  std::size_t trainable = 0, missing = 0, first = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor &p = params[i];
    if (!p.defined() || !p.requires_grad())
      continue;
    ++trainable;
    if (!held.count(p.unsafeGetTensorImpl()) && missing++ == 0)
      first = i;
  }
  if (missing == 0)
    return;
  throw Error(fmt::format(
      "amp::check_holds: {} of the {} clipped parameters that require grad are not held by the "
      "optimizer ({} parameters; the first missing is #{}, {} elements): the migrated clip covers "
      "the optimizer's grads only, where clip_grad_norm_ counted every parameter's .grad; clip the "
      "optimizer's parameters if that is what is meant, or migrate this step by hand",
      missing, trainable, held.size(), first, params[first].numel()));
}

} // namespace amp
