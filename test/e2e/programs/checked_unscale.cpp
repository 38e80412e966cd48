#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: a checked unscale whose answer is used (`bool finite =
// scaler.unscale_and_check(optimizer);`), logged per step, with a clip after it. The
// migrated program's checked unscale (`scaler.unscale_and_check(optimizer, grads)`) must answer
// the same on the same steps (compare.py checks the "step <i> skipped|applied" lines). On two steps a
// term whose value is 0 but whose gradient is huge makes the scaled grads overflow: those steps
// are skipped on both sides.

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  train::GradScaler scaler(65536.0, 2.0, 0.5);
  model->train();
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    optimizer.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto output = model->forward(input);
    auto loss = torch::nll_loss(output, target);
    if (step == 5 || step == 17) // grads that overflow once scaled; the loss's value is unchanged
      loss = loss + 1e36 * (output.sum() - output.sum().detach());
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    bool finite = scaler.unscale_and_check(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    scaler.step(optimizer);
    scaler.update();
    std::printf("step %d %s\n", step, finite ? "applied" : "skipped");
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
