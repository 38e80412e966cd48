// An autocast scope around a call that trains elsewhere is not inference code (issue #38: "a scope
// around a call whose body is unknown is never called inference"): the callee's body in a project
// header runs a backward and a step, or its body is in another translation unit and it is handed
// the optimizer. Both were called inference ("keep the scope for inference"). A scope whose calls
// are only a model's forward and a loss stays inference code.
// RUN: %check_amp %s %t.cpp -- -I %S/Inputs
#include <torch/torch.h>
#include "trainer_in_header.h"

torch::Tensor train_elsewhere(torch::nn::Linear &m, torch::optim::SGD &opt, const torch::Tensor &x);

void run_header(torch::nn::Linear &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: what this scope computes is handed to 'train_once' at line [[@LINE+1]], which trains with it (`loss.backward()` at trainer_in_header.h:8): a forward here and its backward in a function it calls is not a shape the rewrite carries; move the backward and the step into this function, or migrate by hand [amp-manual-migration]
  torch::Tensor l = train_once(model, opt, x);
  at::autocast::set_enabled(false);
}

void run_elsewhere(torch::nn::Linear &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: the call of 'train_elsewhere' at line [[@LINE+1]], in or after this scope, hands it an optimizer or a scaler, and its body is not in this translation unit: it may train there, so the scope is not taken for inference code, and a step whose backward is in another file cannot be rewritten from here; migrate it by hand where the backward is [amp-manual-migration]
  torch::Tensor l = train_elsewhere(model, opt, x);
  at::autocast::set_enabled(false);
}

torch::Tensor evaluate(torch::nn::Linear &model, const torch::Tensor &x) {
  torch::NoGradGuard no_grad;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code{{.*}} [amp-autocast-inference]
  torch::Tensor y = model->forward(x);
  at::autocast::set_enabled(false);
  return y;
}
// CHECK-MESSAGES-NOT: warning:
