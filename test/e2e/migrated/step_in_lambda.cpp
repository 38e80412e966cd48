#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <future>
#include <utility>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: the training step inside a generic per-batch lambda (issue #12 item 7),
// run on a worker thread (std::async) for each batch: the 1.x scope around forward and loss, the
// scaled backward, unscale_, clip_grad_norm_, step and update, all in the lambda's body.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  auto train_step = [&, amp_model](const auto &batch) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(batch.first));
      loss = torch::nll_loss(output, batch.second);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(optimizer, grads);
    amp::clip_by_global_norm_(grads, 0.05);
    scaler.step(optimizer, grads);
    scaler.update();
    return loss;
  };
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto batch = std::make_pair(data.input(step), data.target(step));
    auto loss = std::async(std::launch::async, [&] { return train_step(batch); }).get();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
