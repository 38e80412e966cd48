#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <memory>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: a project's own RAII autocast guard (saves the state, nests, clears the
// cache), a scaler held by std::shared_ptr, no clipping, Adam, a model with BatchNorm1d. The same
// guard class turns autocast off again for a penalty term computed in fp32 inside the scope. Its
// constructor sets the dtype from a parameter with a default (bf16), which the conversion takes.

class AutocastGuard {
public:
  explicit AutocastGuard(bool enabled, at::ScalarType dtype = at::kBFloat16)
      : previous_(at::autocast::is_cpu_enabled()) {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::increment_nesting();
  }
  ~AutocastGuard() {
    if (at::autocast::decrement_nesting() == 0)
      at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(previous_);
  }

private:
  bool previous_;
};

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  e2e::Mlp model(/*batch_norm=*/true);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(3e-3));
  auto scaler = std::make_shared<amp::GradScaler>(amp::GradScalerOptions().init_scale(4096.0).growth_factor(2.0).backoff_factor(0.5).growth_interval(10));
  auto penalty = torch::randn({e2e::kClasses, e2e::kClasses}) * 0.1;
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, at::kBFloat16);
  for (int step = 0; step < e2e::kSteps; ++step) {
    auto input = data.input(step);
    auto target = data.target(step);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model(input));
      loss = torch::nll_loss(output, target);
      {
        AutocastGuard fp32(false);  // the penalty in full precision
        loss = loss + 0.1 * output.to(torch::kFloat).matmul(penalty).pow(2).mean();
      }
      return scaler->scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled, grads] = grad_fn();
    scaler->step(optimizer, grads);
    scaler->update();
    e2e::log_step(step, loss);
  }
  e2e::log_params(model->parameters());
}
