// RUN: %check_amp %s %t.cpp
// WILD (issue #37): a `continue`, `break` or `return` between the scaled backward and step().
// Without a zero_grad() of the step before its backward, the original keeps the skipped batch's
// gradients in .grad and the next backward adds to them, while the rewrite's explicit grads would
// be dropped: refused, naming the statement. With one at the top of the loop (the usual skip of
// a non-finite batch), both drop them, and the step is rewritten. A loop inside the window may
// break or continue as it likes. A zero_grad() between the backward and the step() it clears for
// is refused too: the original steps on what it leaves, the explicit grads would not; and a hook
// called through a std::function or a function pointer there (what it runs is not known).
#include <torch/torch.h>
#include "scaler.h"
#include <functional>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

bool bad_batch(int i) { return i % 7 == 3; }
double last_logged;
void log_value(double v) { last_logged = v; }

void skip_keeps_grads(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  for (int i = 0; i < 10; ++i) {
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = model->forward(x).mean();
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    if (bad_batch(i))
      continue;
    // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: `if (bad_batch(i)) ...` can leave the step between its backward and step() ({{.*}}.cpp:[[@LINE-1]]): the original keeps the backward's gradients in .grad, where the next backward adds to them (no zero_grad() of the step clears them before its backward), while the explicit grads of amp::value_and_grad would be dropped: migrate this step by hand [amp-manual-migration]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
  }
}

void return_keeps_grads(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x,
                        bool stop) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  if (stop)
    return;
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `if (stop) ...` can leave the step between its backward and step() ({{.*}}.cpp:[[@LINE-1]]): the original keeps the backward's gradients in .grad, where the next backward adds to them (no zero_grad() of the step clears them before its backward), while the explicit grads of amp::value_and_grad would be dropped: migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void skip_after_zero_grad(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  for (int i = 0; i < 10; ++i) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = model->forward(x).mean();
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    for (int k = 0; k < 3; ++k) {
      if (k == 1)
        break;
      log_value(k);
    }
    if (bad_batch(i))
      continue;
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}
void zero_in_window(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  for (int i = 0; i < 10; ++i) {
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = model->forward(x).mean();
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    if (i == 3)
      model->zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: not migrated automatically: `model->zero_grad()` clears the gradients between the backward and `scaler.step(opt)` ({{.*}}.cpp:[[@LINE+2]]), which then steps on what zero_grad() leaves; the explicit grads of amp::value_and_grad would still hold the backward's gradients: migrate this step by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:7: warning: zero_grad() {{.*}} [amp-zero-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

struct Hooks {
  std::function<void()> after_backward;
  void (*raw)();
};

void hooks(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x, Hooks &h) {
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  h.after_backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `h.after_backward()` calls `h.after_backward` through a function pointer or a std::function between the scaled backward and step(): what it runs is not known, and it may read or write .grad, which the explicit grads of amp::value_and_grad never reach: migrate this step by hand [amp-manual-migration]
  h.raw();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `h.raw()` calls `h.raw` through a function pointer or a std::function {{.*}} [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// The refused steps keep their code; skip_after_zero_grad is rewritten.
// CHECK-FIXES: {{^}}    scaler.scale(loss).backward();{{$}}
// CHECK-FIXES-NEXT: {{^}}    if (bad_batch(i)){{$}}
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();{{$}}
// CHECK-FIXES-NEXT: {{^}}  if (stop){{$}}
// CHECK-FIXES: {{^}}void skip_after_zero_grad({{.*}}
// CHECK-FIXES: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES: {{^}}    if (bad_batch(i)){{$}}
// CHECK-FIXES-NEXT: {{^}}      continue;{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(opt, grads);{{$}}
// CHECK-FIXES: {{^}}      model->zero_grad();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(opt);{{$}}
// CHECK-FIXES: {{^}}  h.after_backward();{{$}}
