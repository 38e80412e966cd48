#include <torch/torch.h>

#include "common.h"
#include "crossfile_model.h"

// The second translation unit of the e2e program fp32_scaler_crossfile: the model's forward, in
// fp32 (it turns no autocast on), which the tool reads from this file's summary.

namespace crossfile {

TinyNetImpl::TinyNetImpl() {
  fc1 = register_module("fc1", torch::nn::Linear(e2e::kInputs, 64));
  fc2 = register_module("fc2", torch::nn::Linear(64, e2e::kClasses));
}

std::tuple<torch::Tensor, torch::Tensor> TinyNetImpl::forward(const torch::Tensor &x,
                                                              const torch::Tensor &target) {
  auto logits = torch::log_softmax(fc2->forward(torch::relu(fc1->forward(x))), 1);
  return {logits, torch::nll_loss(logits, target)};
}

} // namespace crossfile
