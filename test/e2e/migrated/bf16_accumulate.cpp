#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include <amp/torch.h>

// e2e before-program: bf16 CPU autocast with no loss scaler and gradient accumulation as modern
// code writes it: the loss divided in the backward call, `(loss / kAccum).backward()`, and the
// optimizer stepping every kAccum micro-batches (`(step + 1) % kAccum == 0`), zero_grad() after.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const int kAccum = 3;
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
  std::vector<torch::Tensor> grads;
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(input)), target);
      return (loss / kAccum);
    }, amp::parameters_of(optimizer));
    auto [loss_value, micro_grads] = grad_fn();
    amp::accumulate_grads(grads, micro_grads);
    if ((step + 1) % kAccum == 0) {
      amp::step(optimizer, grads);
      grads.clear();
    }
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
