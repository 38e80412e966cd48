// RUN: %check_amp %s %t.cpp
// amp-manual-migration: valid steps whose meaning the rewrite cannot carry (issue #37). Each was
// rewritten into a program that computes something else; each is now reported, naming the
// statement or argument, and left as it was. The last functions are the near misses that still
// migrate.
#include <torch/torch.h>
#include "scaler.h"
#include <cmath>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

// backward(gradient): the weight would be dropped (value_and_grad differentiates the loss).
void weighted_backward(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                       const torch::Tensor &data, const torch::Tensor &target, const torch::Tensor &w) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward(w);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  // CHECK-MESSAGES: :[[@LINE-2]]:31: warning: not migrated automatically: `scaler.scale(loss).backward(w)` passes a gradient (`w`) to backward(); amp::value_and_grad differentiates the loss itself and takes no such argument, so the rewrite would compute other gradients or free the graph: migrate this step by hand [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// retain_graph in the split form.
void retained_backward(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                       const torch::Tensor &data, const torch::Tensor &target) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  auto scaled = scaler.scale(loss);
  scaled.backward(torch::Tensor(), true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  // CHECK-MESSAGES: :[[@LINE-2]]:36: warning: not migrated automatically: `scaled.backward(torch::Tensor(), true)` passes retain_graph (`true`) to backward(); amp::value_and_grad differentiates the loss itself and takes no such argument, so the rewrite would compute other gradients or free the graph: migrate this step by hand [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// The scaled loss divided in place before its backward: the division would be left on a value
// that no longer feeds the grads.
void mutated_scaled_loss(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                         const torch::Tensor &data, const torch::Tensor &target, int accum) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  auto scaled = scaler.scale(loss);
  scaled.div_(accum);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the scaled loss `scaled` is used by `scaled.div_(accum)` besides its backward(); after the rewrite the scaled loss is what amp::value_and_grad's function returns, so this use would no longer act on what the gradients are computed from: move it before the scale() call (on the loss), or migrate this step by hand [amp-manual-migration]
  scaled.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// A helper of this file that reads .grad, called after the step: the original logs the step's
// gradient norm, the migrated program would log nothing (no .grad).
double grad_norm(Net &model) {
  double total = 0;
  for (auto &p : model->parameters())
    if (p.grad().defined())
      total += p.grad().norm().item<double>();
  return total;
}
double last_logged;
void log_value(double v) { last_logged = v; }
void logged_grad_norm(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                      const torch::Tensor &data, const torch::Tensor &target) {
  for (int i = 0; i < 10; ++i) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = torch::nll_loss(model->forward(data), target);
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
    log_value(grad_norm(model));
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: not migrated automatically: `log_value(grad_norm(model))` calls `grad_norm`, which reads .grad (`p.grad()`, {{.*}}.cpp:{{[0-9]+}}) after the step, where the original's gradients still are; the explicit grads of amp::value_and_grad never reach .grad, so it would find none: hand it the step's grads instead, or migrate this step by hand [amp-manual-migration]
  }
}

// A max norm of 0: libtorch zeroes the grads, the runtime refuses it.
void zero_clip(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
               const torch::Tensor &data, const torch::Tensor &target) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), 0.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-2]]:58: warning: not migrated automatically: `torch::nn::utils::clip_grad_norm_(model->parameters(), 0.0)` clips with the max norm `0.0`, which is not a positive number; libtorch scales the grads by it all the same, amp::clip_by_global_norm_ refuses it: migrate this clip by hand [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// A guard that counts its scopes: removing the guard would remove the count.
int amp_scopes_opened = 0;
struct CountingGuard {
  CountingGuard() {
    ++amp_scopes_opened;
    at::autocast::set_enabled(true);
  }
  ~CountingGuard() { at::autocast::set_enabled(false); }
};
void counting_guard(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                    const torch::Tensor &data, const torch::Tensor &target) {
  torch::Tensor loss;
  {
    CountingGuard guard;
    // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: autocast scope opened by guard 'CountingGuard'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:19: warning: not migrated automatically: the guard class `CountingGuard` does more than switch autocast: `++amp_scopes_opened` ({{.*}}.cpp:{{[0-9]+}}) would be removed with the guard; keep that code outside the guard class, or migrate this step by hand [amp-manual-migration]
    loss = torch::nll_loss(model->forward(data), target);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// A guard that logs when it closes.
void log_line(const char *what);
struct LoggingGuard {
  LoggingGuard() { at::autocast::set_enabled(true); }
  ~LoggingGuard() {
    at::autocast::set_enabled(false);
    log_line("autocast off");
  }
};
void logging_guard(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                   const torch::Tensor &data, const torch::Tensor &target) {
  torch::Tensor loss;
  {
    LoggingGuard guard;
    // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: autocast scope opened by guard 'LoggingGuard'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:18: warning: not migrated automatically: the guard class `LoggingGuard` does more than switch autocast: `log_line("autocast off")` ({{.*}}.cpp:{{[0-9]+}}) would be removed with the guard; keep that code outside the guard class, or migrate this step by hand [amp-manual-migration]
    loss = torch::nll_loss(model->forward(data), target);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// Near misses, migrated: a helper after the step that only clears .grad; an infinite max norm
// (the norm is logged, nothing clipped: the runtime's in-place clip leaves the grads as they are).
void clear_grads(Net &model) {
  for (auto &p : model->parameters())
    if (p.grad().defined())
      p.grad().zero_();
}
void cleared_after_and_infinite_clip(Net &model, torch::optim::SGD &optimizer,
                                     torch::amp::GradScaler &scaler, const torch::Tensor &data,
                                     const torch::Tensor &target) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  double norm = torch::nn::utils::clip_grad_norm_(model->parameters(), INFINITY);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  log_value(norm);
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  clear_grads(model);
}
// The refused steps keep their code.
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward(w);{{$}}
// CHECK-FIXES: {{^}}  scaled.div_(accum);{{$}}
// CHECK-FIXES: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  double norm = amp::clip_by_global_norm_(grads, INFINITY).item<double>();{{$}}
// CHECK-FIXES-NEXT: {{^}}  log_value(norm);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  clear_grads(model);{{$}}

// A project's scaler port whose update() logs: replacing the class by amp::GradScaler would drop
// the log line (issue #37 item 7, the scaler half). The same port without it migrates (above:
// torch::amp::GradScaler's declarations in the mock have no bodies).
void log_line(const char *what);
struct LoggingScaler {
  at::Tensor scale(const at::Tensor &loss) { return loss * scale_; }
  void unscale_(torch::optim::Optimizer &opt) {}
  void step(torch::optim::Optimizer &opt) { opt.step(); }
  void update() {
    scale_ *= 2;
    log_line("scale grew");
  }
  double scale_ = 1024;
};
void logging_port(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                  const torch::Tensor &target) {
  LoggingScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the scaler class `LoggingScaler`'s update() does more than scaling: `log_line("scale grew")` ({{.*}}.cpp:{{[0-9]+}}) would be lost when the class is replaced by amp::GradScaler; move it out of the class, or migrate this step by hand [amp-manual-migration]
}
