// RUN: %check_amp %s %t.cpp
// amp-autocast-leak: an enable that nothing disables (braces do not end it), and a return
// between enable and disable. Neither is rewritten: the leak is reported as the bug it is.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

torch::Tensor braces_do_not_end_it(Net &model, const torch::Tensor &x) {
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast is enabled here and never disabled; it stays on for backward and every later step (braces do not end it) [amp-autocast-leak]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-3]]:5: warning: not migrated automatically: autocast is enabled with no training step in this function (a global or start-up switch?); convert the model where it is created with amp::auto_mixed_precision [amp-manual-migration]
  }
  return model->forward(x);
}

torch::Tensor early_return(Net &model, const torch::Tensor &x, bool fast) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: autocast enabled here stays on past an early return that skips the disable [amp-autocast-leak]
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  auto y = model->forward(x);
  if (fast)
    return y;
  at::autocast::set_enabled(false);
  return y;
}

torch::Tensor closed_on_every_path(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  auto y = model->forward(x);
  at::autocast::set_enabled(false);
  return y;
}
// CHECK-FIXES: {{^}}    at::autocast::set_enabled(true);
