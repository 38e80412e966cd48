// The model of the e2e program fp32_scaler_crossfile, declared here and defined in another
// translation unit (fp32_scaler_crossfile.model.cpp), as a GPT trainer's model is: its forward
// returns the logits and the loss. No AMP code lives here.
#pragma once

#include <torch/torch.h>

#include <tuple>

namespace crossfile {

struct TinyNetImpl : torch::nn::Module {
  TinyNetImpl();
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor &x, const torch::Tensor &target);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(TinyNet);

} // namespace crossfile
