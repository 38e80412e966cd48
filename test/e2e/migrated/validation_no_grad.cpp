#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <memory>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

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
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  auto amp_criterion = amp::auto_mixed_precision(criterion, amp::Level::O1);
  for (int step = 0; step < e2e::kSteps; ++step) {
    model->train();
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(data.input(step)));
      loss = amp::cast_to_adapter_tensor(amp_criterion(output, data.target(step)));
      return scaler.scale(loss);
    }, amp::parameters_of(*optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(*optimizer, grads);
    amp::clip_by_global_norm_(grads, 1.0);
    scaler.step(*optimizer, grads);
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
