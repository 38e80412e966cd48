#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <future>
#include <utility>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: the training step inside a generic per-batch lambda (issue #12 item 7),
// run on a worker thread (std::async) for each batch: the 1.x scope around forward and loss, the
// scaled backward, unscale_, clip_grad_norm_, step and update, all in the lambda's body.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(1024.0);
  model->train();
  auto train_step = [&](const auto &batch) {
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(batch.first);
    auto loss = torch::nll_loss(output, batch.second);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 0.05);
    scaler.step(optimizer);
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
