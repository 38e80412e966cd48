// RUN: %check_amp %s %t.cpp
// WILD: a step skipped when its loss is not finite: `if (!finite) { log; continue; }` between the
// autocast scope and the scaled backward. The check leaves the iteration, so it cannot move into
// the function given to value_and_grad; it runs right after the call instead, before the step
// (and before the accumulation of micro-step grads), with the same effect: no step, no update, no
// accumulation for that iteration. Not when it runs under autocast, or changes the loss.
#include <torch/torch.h>
#include "scaler.h"
#include <cstdio>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void skip_nonfinite(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                    const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 100; ++step) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    if (!torch::isfinite(loss).item<bool>()) {
      std::printf("step %d: loss is not finite, skipped\n", step);
      continue;
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}  for (int step = 0; step < 100; ++step) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (!torch::isfinite(loss).item<bool>()) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      std::printf("step %d: loss is not finite, skipped\n", step);{{$}}
// CHECK-FIXES-NEXT: {{^}}      continue;{{$}}
// CHECK-FIXES-NEXT: {{^}}    }{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(optimizer, grads);{{$}}

// Accumulation: a skipped micro-step adds nothing to the summed grads.
void skip_micro(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                const torch::Tensor &y, int k) {
  torch::amp::GradScaler scaler;
  for (int i = 0; i < k; ++i) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    if (torch::isnan(loss).item<bool>())
      break;
    scaler.scale(loss / k).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
  }
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}    auto [scaled_loss, micro_grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (torch::isnan(loss).item<bool>()){{$}}
// CHECK-FIXES-NEXT: {{^}}      break;{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::accumulate_grads(grads, micro_grads);{{$}}

// The check runs under autocast, before the scope ends, and closes the scope itself before it
// leaves: a test of the loss's values computes the same with autocast off, so it runs after the
// call, without the scope's calls (removed with the scope).
void skip_in_scope(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                   const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  int skipped = 0;
  for (int step = 0; step < 100; ++step) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    if (!torch::isfinite(loss).item<bool>()) {
      at::autocast::set_enabled(false);
      at::autocast::clear_cache();
      ++skipped;
      continue;
    }
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}    torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (!torch::isfinite(loss).item<bool>()) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}      ++skipped;{{$}}
// CHECK-FIXES-NEXT: {{^}}      continue;{{$}}
// CHECK-FIXES-NEXT: {{^}}    }{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(optimizer, grads);{{$}}

// A check under autocast that computes with an op autocast changes (a matmul) stays: the step is
// manual, naming the op.
void skip_in_scope_computes(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                            const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 100; ++step) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    auto out = model->forward(x);
    auto loss = torch::nll_loss(out, y);
    if (torch::isnan(torch::matmul(out, out)).item<bool>()) {
      at::autocast::set_enabled(false);
      continue;
    }
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here, without at::autocast::clear_cache(){{.*}}
    // CHECK-MESSAGES: :[[@LINE-4]]:7: warning: not migrated automatically: the forward region contains a statement that leaves it {{.*}}; nor can it run after that call, before the step ({{.*}}:[[@LINE-6]]): it runs before the autocast scope ends, and `torch::matmul(out, out)` could compute differently without it [amp-manual-migration]
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}

// The guard changes the loss the backward reads: it cannot run after the backward.
void skip_changes_loss(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                       const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 100; ++step) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    if (!torch::isfinite(loss).item<bool>()) {
      if (step > 10)
        continue;
      // CHECK-MESSAGES: :[[@LINE-1]]:9: warning: not migrated automatically: {{.*}}; nor can it run after that call, before the step ({{.*}}:[[@LINE+1]]): `loss = loss * 0` changes what the scaled backward reads [amp-manual-migration]
      loss = loss * 0;
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
}
