#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

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
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(65536.0).growth_factor(2.0).backoff_factor(0.5));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(input));
      loss = torch::nll_loss(output, target);
      if (step == 5 || step == 17) // grads that overflow once scaled; the loss's value is unchanged
        loss = loss + 1e36 * (output.sum() - output.sum().detach());
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    bool finite = scaler.unscale_and_check(optimizer, grads);
    amp::clip_by_global_norm_(grads, 1.0);
    scaler.step(optimizer, grads);
    scaler.update();
    std::printf("step %d %s\n", step, finite ? "applied" : "skipped");
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
