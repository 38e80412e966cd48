// RUN: %check_amp %s %t.cpp
// amp-manual-migration: what the tool will not rewrite, each with its reason and no edit.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

// The scope is in one function, the scaler calls in another.
torch::Tensor forward_loss(Net &model, const torch::Tensor &data, const torch::Tensor &target) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: no training step (a backward of the loss computed here, then the optimizer's or the scaler's step) follows this autocast scope in this function; when they are in another function, move the step into one function or migrate by hand [amp-manual-migration]
  auto loss = torch::nll_loss(model->forward(data), target);
  at::autocast::set_enabled(false);
  return loss;
}
void apply_step(torch::amp::GradScaler &scaler, torch::optim::SGD &optimizer, torch::Tensor loss) {
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, and no statement before it in its block computes the loss `loss` (`loss` is a parameter of this function), so the forward pass to hand to amp::value_and_grad is unknown: compute the loss in the backward's block, or migrate this step by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// The loss forward_loss() computes is what apply_step() calls backward() on: a training scope.
void train_step(Net &model, torch::amp::GradScaler &scaler, torch::optim::SGD &optimizer,
                const torch::Tensor &data, const torch::Tensor &target) {
  apply_step(scaler, optimizer, forward_loss(model, data, target));
}

// backward() runs inside the autocast scope.
void backward_inside(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                     const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(data), target);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: backward() runs inside the autocast scope (the scope is not closed before it) [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  at::autocast::set_enabled(false);
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// A non-L2 clip norm: clip_by_global_norm is L2 only.
void inf_norm(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
              const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
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
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0, 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: clip norm type 1.0 is not L2; clip_by_global_norm only does the L2 norm [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;

// A backward of the scope's loss through a function the tool does not recognise as a scaler's
// scale(): the reason names it, not "no training step follows".
struct OpaqueScaler;
torch::Tensor scale_loss(OpaqueScaler &s, const torch::Tensor &loss);
void opaque_step(OpaqueScaler &s, torch::optim::SGD &optimizer);
void unknown_scaler(Net &model, torch::optim::SGD &optimizer, OpaqueScaler &s,
                    const torch::Tensor &data) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: backward() at line [[#@LINE+3]] runs on `scale_loss(s, loss)`, which is not the scale() of a loss scaler the tool recognises; name the scaler class in a rule file (scaler.classes, docs/rules.md) or migrate by hand [amp-manual-migration]
  auto loss = model->forward(data).sum();
  at::autocast::set_enabled(false);
  scale_loss(s, loss).backward();
  opaque_step(s, optimizer);
}

// A clip that throws on a non-finite norm (error_if_nonfinite = true): clip_by_global_norm has no
// such check, so the step is reported rather than silently losing it.
void clip_that_throws(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                      const torch::Tensor &data) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = model->forward(data).sum();
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0, 2.0, /*error_if_nonfinite=*/true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: the clip is called with error_if_nonfinite = `true`: it throws when the total norm is not finite, and amp::clip_by_global_norm does not; drop the check or migrate this step by hand [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// A project scaler whose step() also takes the module (it reads the module's .grad): the
// explicit-grad step has no place for it.
struct ModuleScaler {
  torch::Tensor scale(const torch::Tensor &loss);
  void step(torch::optim::SGD &optimizer, torch::nn::Module *owner);
  void update();
};
void step_with_module(NetImpl &net, torch::optim::SGD &optimizer, ModuleScaler &scaler,
                      const torch::Tensor &data) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = net.forward(data).sum();
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer, &net);
  // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: not migrated automatically: `scaler.step(optimizer, &net)` passes `&net` besides the optimizer; the explicit-grad form takes the optimizer and the grads only, and what this argument is for is not known (a module whose .grad the scaler reads?): migrate this step by hand [amp-manual-migration]
  scaler.update();
}

// Training whose backward() runs in a function this file only declares (a loss helper of another
// file): the function steps the optimizer and clips, so it is not inference code, and the reason
// says what is missing.
struct LossComputer {
  torch::Tensor compute(const torch::Tensor &out, bool train); // runs loss.backward() elsewhere
};
void backward_elsewhere(Net &model, torch::optim::SGD &optimizer, LossComputer &losses,
                        const torch::Tensor &data) {
  optimizer.zero_grad();
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: no backward() is visible in this function, yet it steps the optimizer (line [[#@LINE+4]]): the backward runs in a function this file does not define, so the forward pass cannot be handed to amp::value_and_grad; migrate this step by hand [amp-manual-migration]
  auto loss = losses.compute(model->forward(data), /*train=*/true);
  at::autocast::set_enabled(false);
  torch::nn::utils::clip_grad_norm_(model->parameters(), 5.0);
  optimizer.step();
}
