// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include -I %S/Inputs
// WILD: the most copied GradScaler port, whose scale() is a template (`auto scale(T const&)`,
// also `T scale(T const&)` beside an overload for a list of tensors), over real libtorch
// headers. The class is recognised by what scale() returns for a tensor; the project clips the
// gradients before unscaling them, a bug amp-clip-before-unscale reports.
#include <ATen/autocast_mode.h>
#include <torch/nn/module.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/sgd.h>
#include "template_scaler.h"

struct Net : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};

void clips_scaled_gradients(Net &model, torch::optim::SGD &optimizer, port::GradScaler &scaler,
                            const torch::Tensor &x, const torch::Tensor &y) {
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  torch::Tensor loss = (model.forward(x) - y).pow(2).mean();
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  torch::nn::utils::clip_grad_norm_(model.parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping still-scaled gradients: no unscale_() before this clip, so max_norm is compared with the scaled norm (call unscale_ first) [amp-clip-before-unscale]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: not migrated automatically: clipping still-scaled gradients (no unscale_ before it); fix the order first (amp-clip-before-unscale) [amp-manual-migration]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void typed_scaler(Net &model, torch::optim::SGD &optimizer, port::TypedScaler &scaler,
                  const torch::Tensor &x, const torch::Tensor &y) {
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  torch::Tensor loss = (model.forward(x) - y).pow(2).mean();
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model.parameters(), 1.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// Its scale() is instantiated nowhere in this file: unscale_, step and update beside a template
// scale() say what the class is.
struct SplitScaler {
  template <typename T> auto scale(T const &outputs) { return outputs; }
  void unscale_(torch::optim::Optimizer &optimizer);
  void step(torch::optim::Optimizer &optimizer);
  void update();
};

void step_half(torch::optim::SGD &optimizer, SplitScaler &scaler) {
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: no scaled backward (scaler.scale(loss).backward()) in this function; the scope, scaling and stepping are in different functions [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// Not a scaler: a template scale() used on numbers, and no unscale_ or update.
struct Zoom {
  template <typename T> T scale(T const &factor) { return factor * 2; }
  void step(int frames);
};

void zoom(Zoom &z) {
  double f = z.scale(2.0);
  z.step(static_cast<int>(f));
}
// A scaler parameter of a function no call in this file names: its type changes in the
// declaration (callers elsewhere would need a declaration of their own, in no header here).
// CHECK-FIXES: {{^}}void typed_scaler(Net &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,{{$}}
