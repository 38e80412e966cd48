// RUN: %check_amp %s %t.cpp
// WILD: the NOLINT family (same line, next line with an id, a begin/end range) suppresses findings.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void start_up() {
  at::autocast::set_enabled(true); // NOLINT
}

void start_up_ranged() {
  // NOLINTBEGIN(amp-autocast-scope, amp-autocast-leak, amp-manual-migration)
  at::autocast::set_cpu_enabled(true);
  // NOLINTEND(amp-autocast-scope, amp-autocast-leak, amp-manual-migration)
}

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
           const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  // NOLINTNEXTLINE(amp-zero-grad)
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: its edit at wild-nolint.cpp.tmp.cpp:[[@LINE-1]] lies under the NOLINTNEXTLINE at wild-nolint.cpp.tmp.cpp:[[@LINE-2]], so the step is left whole [amp-manual-migration]
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
}
// NOLINTNEXTLINE on the step's first finding silences that diagnostic, and the rewrite would
// remove the line it covers (issue #37 item 9): the step is left whole, and says so.
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}  optimizer.zero_grad();
// CHECK-FIXES: {{^}}  scaler.step(optimizer);
