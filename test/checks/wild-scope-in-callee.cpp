// RUN: %check_amp %s %t.cpp
// WILD: scope and scaling in different functions. The step calls a function of this file for its
// loss (`auto loss = forward_loss(...)`) and that function holds the autocast scope and the
// forward. The loss statement becomes the function handed to value_and_grad; in the callee the
// scope goes and the model is converted where the scope began; both are one fix. A callee that
// also scales, or a loss computed some other way, is reported.
#include <torch/torch.h>
#include "scaler.h"
#include <cstdio>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class Trainer {
public:
  torch::Tensor forward_loss(const torch::Tensor &x, const torch::Tensor &y);
  void train_step(const torch::Tensor &x, const torch::Tensor &y);

private:
  Net model_;
  std::unique_ptr<torch::optim::SGD> opt_;
  torch::amp::GradScaler scaler_;
};

torch::Tensor Trainer::forward_loss(const torch::Tensor &x, const torch::Tensor &y) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  auto out = model_->forward(x);
  auto loss = torch::nll_loss(out, y);
  at::autocast::set_enabled(false);
  return loss;
}
// CHECK-FIXES: {{^}}torch::Tensor Trainer::forward_loss(const torch::Tensor &x, const torch::Tensor &y) {
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model_, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES: {{^}}  auto out = amp::cast_to_adapter_tensor(amp_model->forward(x));
// CHECK-FIXES-NEXT: {{^}}  auto loss = torch::nll_loss(out, y);
// CHECK-FIXES-NEXT: {{^}}  return loss;
// CHECK-FIXES-NEXT: {{^}}}

void Trainer::train_step(const torch::Tensor &x, const torch::Tensor &y) {
  opt_->zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
  auto loss = forward_loss(x, y);
  scaler_.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler_.unscale_(*opt_);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: {{.*}} [amp-clip-grad-norm]
  scaler_.step(*opt_);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler_.update();
  std::printf("loss %f\n", loss.item<float>());
}
// CHECK-FIXES: {{^}}void Trainer::train_step(const torch::Tensor &x, const torch::Tensor &y) {
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    loss = forward_loss(x, y);
// CHECK-FIXES-NEXT: {{^}}    return scaler_.scale(loss);
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(*opt_));
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();
// CHECK-FIXES: {{^}}  scaler_.unscale_(*opt_, grads);
// CHECK-FIXES: {{^}}  amp::clip_by_global_norm_(grads, 1.0);
// CHECK-FIXES: {{^}}  scaler_.step(*opt_, grads);
// CHECK-FIXES: {{^}}  std::printf("loss %f\n", loss.item<float>());

// A guard in a free function: the guard's declaration becomes the conversion.
struct AmpGuard {
  AmpGuard() { at::autocast::set_enabled(true); }
  ~AmpGuard() {
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
  }
};
torch::Tensor compute_loss(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  AmpGuard guard;
  // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: autocast scope opened by guard 'AmpGuard'{{.*}} [amp-autocast-scope]
  return torch::nll_loss(model->forward(x), y);
}
void train(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y, int steps) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < steps; ++i) {
    torch::Tensor loss = compute_loss(model, x, y);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}torch::Tensor compute_loss(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);
// CHECK-FIXES: {{^}}  return torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < steps; ++i) {
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}      torch::Tensor loss = compute_loss(model, x, y);
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt));
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}    scaler.step(opt, grads);

// The loss function also holds the scaler: reported, nothing changes in either function.
torch::Tensor scaled_loss_of(Net &model, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: no training step (a backward of the loss computed here, then the optimizer's or the scaler's step) follows this autocast scope in this function{{.*}} [amp-manual-migration]
  auto out = model->forward(x);
  at::autocast::set_enabled(false);
  return scaler.scale(out.sum());
}
void step_with_scaled(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  auto loss = scaled_loss_of(model, scaler, x);
  // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: not migrated automatically: the autocast scope is in 'scaled_loss_of', which also scales or steps; migrate it by hand [amp-manual-migration]
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  at::autocast::set_enabled(true);
// CHECK-FIXES: {{^}}  auto out = model->forward(x);
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();

// No scaler (bf16): the loss function holds the scope and the loop backpropagates its loss
// plainly, then steps the optimizer; the loss is read after the step, so it is declared before
// the function handed to value_and_grad.
torch::Tensor bf16_loss(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'{{.*}} [amp-autocast-scope]
  auto out = model->forward(x);
  auto loss = torch::nll_loss(out, y);
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  return loss;
}
void train_bf16(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y, int steps) {
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    auto loss = bf16_loss(model, x, y);
    loss.backward();
    opt.step();
    std::printf("loss %f\n", loss.item<float>());
  }
}
// CHECK-FIXES: {{^}}torch::Tensor bf16_loss(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, at::kBFloat16);
// CHECK-FIXES-NEXT: {{^}}  auto out = amp::cast_to_adapter_tensor(amp_model->forward(x));
// CHECK-FIXES-NEXT: {{^}}  auto loss = torch::nll_loss(out, y);
// CHECK-FIXES-NEXT: {{^}}  return loss;
// CHECK-FIXES-NEXT: {{^}}}
// CHECK-FIXES: {{^}}  for (int i = 0; i < steps; ++i) {
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss;
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}      loss = bf16_loss(model, x, y);
// CHECK-FIXES-NEXT: {{^}}      return loss;
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt));
// CHECK-FIXES-NEXT: {{^}}    auto [loss_value, grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}    amp::step(opt, grads);
// CHECK-FIXES-NEXT: {{^}}    std::printf("loss %f\n", loss.item<float>());

// A plain backward of a loss from a function without autocast is not AMP code: nothing to do.
torch::Tensor fp32_loss(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  return torch::nll_loss(model->forward(x), y);
}
void train_fp32(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  opt.zero_grad();
  auto loss = fp32_loss(model, x, y);
  loss.backward();
  opt.step();
}
// CHECK-FIXES: {{^}}  auto loss = fp32_loss(model, x, y);
// CHECK-FIXES-NEXT: {{^}}  loss.backward();
// CHECK-FIXES-NEXT: {{^}}  opt.step();

// A function that only turns autocast off around its loss is no scope of it: nothing to do here.
torch::Tensor fp32_region_loss(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  at::autocast::set_enabled(false);
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(true);
  return loss;
}
void train_fp32_region(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  auto loss = fp32_region_loss(model, x, y);
  loss.backward();
  opt.step();
}
// CHECK-FIXES: {{^}}  auto loss = fp32_region_loss(model, x, y);
// CHECK-FIXES-NEXT: {{^}}  loss.backward();

// The scaled loss divided for accumulation (`scaler.scale(loss / accum)`) of a loss the callee
// computes under its scope: the grads are summed over the micro-steps.
torch::Tensor micro_loss(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  auto out = model->forward(x);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  return torch::nll_loss(out, y);
}
void train_accumulated(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y,
                       int steps, int accum) {
  torch::amp::GradScaler scaler;
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() ends a gradient accumulation{{.*}} [amp-zero-grad]
  for (int i = 0; i < steps; ++i) {
    auto loss = micro_loss(model, x, y);
    scaler.scale(loss / accum).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    if ((i + 1) % accum == 0) {
      scaler.step(opt);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads{{.*}} [amp-scaler-step]
      scaler.update();
      opt.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() ends a gradient accumulation{{.*}} [amp-zero-grad]
    }
  }
}
// CHECK-FIXES: {{^}}  std::vector<torch::Tensor> grads;{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < steps; ++i) {
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}      auto loss = micro_loss(model, x, y);
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss / accum);
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(opt));
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, micro_grads] = grad_fn();
// CHECK-FIXES-NEXT: {{^}}    amp::accumulate_grads(grads, micro_grads);
// CHECK-FIXES: {{^}}      scaler.step(opt, grads);
// CHECK-FIXES: {{^}}      grads.clear();

// The loss function reads .grad (the last step's gradients, logged before the forward): the
// step is reported, naming the read; nothing changes in either function.
struct LoggedNetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
  torch::Tensor weight;
};
TORCH_MODULE(LoggedNet);
torch::Tensor logged_loss(LoggedNet &model, const torch::Tensor &x, const torch::Tensor &y) {
  if (model->weight.grad().defined())
    // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: the loss function 'logged_loss' uses .grad (`model->weight.grad()` at {{[^)]+}}), where the original finds the last step's gradients; the explicit grads of amp::value_and_grad never reach .grad, so it would find none: migrate this step by hand [amp-manual-migration]
    std::printf("%f\n", model->weight.grad().norm().item<float>());
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: no training step{{.*}} [amp-manual-migration]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_cpu_enabled(false);
  return loss;
}
void train_logged(LoggedNet &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  auto loss = logged_loss(model, x, y);
  loss.backward();
  opt.step();
}
// CHECK-FIXES: {{^}}  at::autocast::set_cpu_enabled(true);
// CHECK-FIXES: {{^}}  auto loss = logged_loss(model, x, y);
// CHECK-FIXES-NEXT: {{^}}  loss.backward();

// The same read one call down: a logging helper the loss function calls.
void log_grad_norm(LoggedNet &model) {
  if (model->weight.grad().defined())
    std::printf("%f\n", model->weight.grad().norm().item<float>());
}
torch::Tensor helper_logged_loss(LoggedNet &model, const torch::Tensor &x, const torch::Tensor &y) {
  log_grad_norm(model);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the loss function 'helper_logged_loss' uses .grad (`model->weight.grad()` at {{[^)]+}}, through `log_grad_norm(model)` at {{[^)]+}}), where the original finds the last step's gradients{{.*}} [amp-manual-migration]
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: no training step{{.*}} [amp-manual-migration]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_cpu_enabled(false);
  return loss;
}
void train_helper_logged(LoggedNet &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  auto loss = helper_logged_loss(model, x, y);
  loss.backward();
  opt.step();
}
// CHECK-FIXES: {{^}}  log_grad_norm(model);
// CHECK-FIXES-NEXT: {{^}}  at::autocast::set_cpu_enabled(true);
// CHECK-FIXES: {{^}}  auto loss = helper_logged_loss(model, x, y);
// CHECK-FIXES-NEXT: {{^}}  loss.backward();
