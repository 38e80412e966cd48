#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: gradient accumulation over two micro-batches, then two optimizers sharing
// one scaler (the first layer with SGD, the others with Adam), one update.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD first(model->fc1->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  std::vector<torch::Tensor> rest = model->fc2->parameters();
  for (const auto &p : model->fc3->parameters())
    rest.push_back(p);
  torch::optim::Adam others(rest, torch::optim::AdamOptions(1e-3));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  const int micro_steps = 2;
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  std::vector<torch::Tensor> grads;
  for (int step = 0; step < e2e::kSteps; ++step) {
    grads.clear();
    torch::Tensor total = torch::zeros({});
    for (int micro = 0; micro < micro_steps; ++micro) {
      torch::Tensor loss;
      auto grad_fn = amp::value_and_grad([&] {
        auto output = amp::cast_to_adapter_tensor(amp_model->forward(data.input(2 * step + micro)));
        loss = torch::nll_loss(output, data.target(2 * step + micro)) / micro_steps;
        return scaler.scale(loss);
      }, amp::parameters_of(first, others));
      auto [scaled_loss, micro_grads] = grad_fn();
      amp::accumulate_grads(grads, micro_grads);
      total = total + loss.detach();
    }
    auto [grads_first, grads_others] = amp::split_grads(grads, first, others);
    scaler.step(first, grads_first);
    scaler.step(others, grads_others);
    scaler.update();
    e2e::log_step(step, total);
  }
  e2e::log_params(model->parameters());
}
