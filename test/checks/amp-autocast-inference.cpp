// RUN: %check_amp %s %t.cpp
// RUN: %amp-migrate --checks='amp-*,-amp-autocast-inference' %s -- -std=c++17 -I%mock | FileCheck --check-prefix=OFF %s
// Issue #11 item 7: an autocast scope in inference code (no backward() in its function, nor in any
// function of this file that calls it, nor on what it returns) is one finding, worded for inference, and nothing else; a
// scope whose function is called by training code is still a training scope; the check is an
// option: --checks=-amp-autocast-inference leaves inference code without findings.
#include <torch/torch.h>
#include "scaler.h"

namespace torch {
namespace autograd {
void backward(const std::vector<torch::Tensor> &tensors);
} // namespace autograd
} // namespace torch

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

struct AutocastGuard {
  AutocastGuard() { at::autocast::set_enabled(true); }
  ~AutocastGuard() { at::autocast::set_enabled(false); }
};

// Inference: nobody in this file runs a backward pass through it.
torch::Tensor predict(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  auto out = model->forward(x);
  at::autocast::set_enabled(false);
  return out;
}

// Called by evaluate() only, which does not train either.
torch::Tensor logits_of(Net &model, const torch::Tensor &x) {
  AutocastGuard guard;
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: autocast scope opened by guard 'AutocastGuard' in inference code: {{.*}} [amp-autocast-inference]
  return model->forward(x);
}

float evaluate(Net &model, const torch::Tensor &x) {
  return logits_of(model, x).item<float>();
}

// Called from a function that runs backward (through torch::autograd::backward): training code,
// reported as before (the scaler-less step is not migrated here).
torch::Tensor loss_of(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: {{.*}} [amp-manual-migration]
  auto loss = torch::nll_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  return loss;
}

void train_step(Net &model, const torch::Tensor &x, const torch::Tensor &y) {
  auto loss = loss_of(model, x, y);
  torch::autograd::backward({loss});
}

// A callback handed to other code may run under training: not called inference.
torch::Tensor callback_loss(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: {{.*}} [amp-manual-migration]
  auto out = model->forward(x).sum();
  at::autocast::set_enabled(false);
  return out;
}

template <class F> void run_and_backward(F f) { f().backward(); }

void train_with_callback(Net &model, const torch::Tensor &x) {
  run_and_backward([&] { return callback_loss(model, x); });
}

// The result is handed to a function that runs backward on it (as an argument, or through the
// variable it initialised): a training loss.
torch::Tensor fed_loss(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: {{.*}} [amp-manual-migration]
  auto out = model->forward(x).sum();
  at::autocast::set_enabled(false);
  return out;
}

void backward_of(const torch::Tensor &loss) { loss.backward(); }

void train_fed(Net &model, const torch::Tensor &x) {
  backward_of(fed_loss(model, x));
  auto again = fed_loss(model, x);
  backward_of(again);
}

// Its result is only printed, though a training function is called beside it: inference.
torch::Tensor logged_logits(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: {{.*}} [amp-autocast-inference]
  auto out = model->forward(x);
  at::autocast::set_enabled(false);
  return out;
}

void log_and_train(Net &model, const torch::Tensor &x) {
  float shown = logged_logits(model, x).sum().item<float>();
  (void)shown;
  train_fed(model, x);
}

// OFF-NOT: [amp-autocast-inference]
// OFF: :49:3: warning: autocast scope enabled {{.*}}[amp-autocast-scope]
// OFF-NOT: [amp-autocast-inference]
