#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <memory>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: a training loop that validates under autocast inside a torch::NoGradGuard
// block (every 10th step, and once after the loop) in the same function as its training step;
// the optimizer is an AdamW held as a std::unique_ptr<torch::optim::Optimizer>, with a StepLR
// scheduler and an NLLLoss module as the criterion. The validation losses are logged as steps
// 1000+ so that compare.py checks them with the training losses.

double validate(e2e::Mlp &model, torch::nn::NLLLoss &criterion, const e2e::SyntheticData &data,
                int batch) {
  torch::NoGradGuard no_grad;
  at::autocast::set_cpu_enabled(true);
  auto out = model->forward(data.input(batch));
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  return criterion(out, data.target(batch)).item<double>();
}

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  std::unique_ptr<torch::optim::Optimizer> optimizer =
      std::make_unique<torch::optim::AdamW>(model->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::StepLR scheduler(*optimizer, /*step_size=*/10, /*gamma=*/0.5);
  torch::nn::NLLLoss criterion;
  train::GradScaler scaler(1024.0);
  for (int step = 0; step < e2e::kSteps; ++step) {
    model->train();
    optimizer->zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(data.input(step));
    auto loss = criterion(output, data.target(step));
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(*optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(*optimizer);
    scaler.update();
    scheduler.step();
    e2e::log_step(step, loss);
    if (step % 10 == 9) {
      model->eval();
      torch::NoGradGuard no_grad;
      at::autocast::set_cpu_enabled(true);
      auto val = criterion(model->forward(data.input(step + 1)), data.target(step + 1));
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
      e2e::log_step(1000 + step, val);
    }
  }
  {
    torch::NoGradGuard no_grad;
    at::autocast::set_cpu_enabled(true);
    auto val = criterion(model->forward(data.input(0)), data.target(0));
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    e2e::log_step(2000, val);
  }
  std::printf("validate %.6f\n", validate(model, criterion, data, 3));
  e2e::log_params(model->parameters());
}
