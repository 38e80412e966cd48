// RUN: %check_amp %s %t.cpp
// WILD: .grad read before the step's backward: a gradient-norm log at the top of the loop (the
// last step's gradients, read before zero_grad()), and one inside a skip check that would move
// after value_and_grad. Explicit grads never reach .grad, so either read would find none after
// the migration: reported, naming the statement. A hand-written zero_grad() (`.zero_()`,
// `.detach_()` under `.defined()`, assigning an empty tensor) only clears .grad and is no
// obstacle: that step is rewritten.
#include <torch/torch.h>
#include "scaler.h"
#include <cstdio>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
  torch::Tensor weight;
};
TORCH_MODULE(Net);

void log_at_top(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    if (step > 0)
      std::printf("last grad norm %f\n", model->weight.grad().norm().item<float>());
    // CHECK-MESSAGES: :[[@LINE-1]]:42: warning: not migrated automatically: `if (step > 0) ...` uses .grad before this step's backward ({{[^)]+}}), where the original finds the last step's gradients (or the zeros of zero_grad()); the explicit grads of amp::value_and_grad never reach .grad, so it would find none: move it after the step and read the step's grads there, or migrate this step by hand [amp-manual-migration]
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand {{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here, without at::autocast::clear_cache(){{.*}}
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void log_in_skip(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                 const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand {{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here, without at::autocast::clear_cache(){{.*}}
    if (!torch::isfinite(loss).item<bool>()) {
      std::printf("skipped; grad defined: %d\n", (int)model->weight.grad().numel());
      // CHECK-MESSAGES: :[[@LINE-1]]:55: warning: not migrated automatically: `std::printf("skipped; grad defined: %d\n", (int)model->weight.grad().numel())` uses .grad before this step's backward {{.*}} [amp-manual-migration]
      continue;
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void hand_zero(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
               const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    for (auto &p : model->parameters())
      if (p.grad().defined()) {
        p.grad().detach_();
        p.grad().zero_();
      }
    model->weight.mutable_grad() = torch::Tensor();
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here, without at::autocast::clear_cache(){{.*}}
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}      std::printf("last grad norm %f\n", model->weight.grad().norm().item<float>());{{$}}
// CHECK-FIXES: {{^}}      std::printf("skipped; grad defined: %d\n", (int)model->weight.grad().numel());{{$}}
// CHECK-FIXES: {{^}}    model->weight.mutable_grad() = torch::Tensor();{{$}}
// CHECK-FIXES: {{^}}    scaler.step(optimizer, grads);{{$}}

// An LR scheduler's step() at the top of the loop is not the end of a training step: the read
// before it finds the last step's gradients and is reported.
struct WarmupScheduler {
  void step();
};
void log_after_scheduler(Net &model, torch::optim::SGD &optimizer, WarmupScheduler &sched,
                         const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    if (step > 0)
      std::printf("last grad norm %f\n", model->weight.grad().norm().item<float>());
    // CHECK-MESSAGES: :[[@LINE-1]]:42: warning: not migrated automatically: `if (step > 0) ...` uses .grad before this step's backward {{.*}} [amp-manual-migration]
    sched.step();
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}
