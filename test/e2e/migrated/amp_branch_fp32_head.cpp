#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdlib>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: the autocast scope in one branch of a run-time flag, the same forward
// without it in the other (`if (use_amp) { enable; f = body(x); disable; } else { f = body(x); }`),
// then a head run deliberately in fp32 after the scope (`head(f.to(kFloat))`). The migrated
// program converts the body by the flag (`use_amp ? <level> : O0`) and leaves the head as it was:
// converted, it would run in low precision (issue #37 items 8 and 14). E2E_FP32=1 runs the fp32
// branch, which must compute what the original's did.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp body;
  torch::nn::Linear head(e2e::kClasses, e2e::kClasses);
  std::vector<torch::Tensor> params = body->parameters();
  for (const auto &p : head->parameters())
    params.push_back(p);
  torch::optim::SGD optimizer(params, torch::optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  const bool use_amp = std::getenv("E2E_FP32") == nullptr;
  body->train();
  auto amp_body = amp::auto_mixed_precision(body, use_amp ? amp::Level::O1 : amp::Level::O0);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    torch::Tensor features;
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      if (use_amp) {
        features = amp::cast_to_adapter_tensor(amp_body->forward(input));
      } else {
        features = body->forward(input);
      }
      auto logits = head->forward(features.to(torch::kFloat));
      loss = torch::nll_loss(torch::log_softmax(logits, 1), data.target(step));
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.step(optimizer, grads);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(params);
}
