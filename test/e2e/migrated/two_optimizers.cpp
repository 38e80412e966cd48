#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: one loss, two optimizers sharing one scaler (the first layer with SGD and
// momentum, the other layers with Adam), the first one's parameters clipped after its unscale_,
// one step each, one update.

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
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(first, others));
    auto [scaled_loss, grads] = grad_fn();
    auto [grads_first, grads_others] = amp::split_grads(grads, first, others);
    scaler.unscale_(first, grads_first);
    amp::clip_by_global_norm_(grads_first, 1.0);
    scaler.step(first, grads_first);
    scaler.step(others, grads_others);
    scaler.update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
