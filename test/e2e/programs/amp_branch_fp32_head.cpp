#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdlib>

#include "common.h"
#include "loss_scaler.h"

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
  train::GradScaler scaler(1024.0);
  const bool use_amp = std::getenv("E2E_FP32") == nullptr;
  body->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    optimizer.zero_grad();
    torch::Tensor features;
    if (use_amp) {
      at::autocast::set_cpu_enabled(true);
      features = body->forward(input);
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
    } else {
      features = body->forward(input);
    }
    auto logits = head->forward(features.to(torch::kFloat));
    auto loss = torch::nll_loss(torch::log_softmax(logits, 1), data.target(step));
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(params);
}
