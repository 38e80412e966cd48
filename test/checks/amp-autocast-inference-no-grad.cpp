// RUN: %check_amp %s %t.cpp
// amp-autocast-inference, a scope under a guard that turns gradient recording off (types.no-grad-
// guards: c10::NoGradGuard, which torch:: and at::NoGradGuard name, and c10::InferenceMode) in a
// function that also trains: the validation after a training loop is inference code, reported as
// such and left as it is, while the training step beside it is rewritten. InferenceMode(false)
// and a lambda that may run after the guard's block are not under the guard.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train_then_validate(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                         const torch::Tensor &x) {
  for (int i = 0; i < 10; ++i) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model->forward(x).sum();
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
  }
  {
    torch::NoGradGuard no_grad;
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: 'torch::NoGradGuard no_grad' before it turns gradient recording off and nothing computed under it is differentiated, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
    auto val = model->forward(x);
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
  }
  if (x.defined()) {
    c10::InferenceMode guard;
    for (int i = 0; i < 2; ++i) {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: 'c10::InferenceMode guard' before it {{.*}} [amp-autocast-inference]
      auto val = model->forward(x);
      at::autocast::set_enabled(false);
      at::autocast::clear_cache();
    }
  }
  {
    c10::InferenceMode off(false);
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; {{.*}} [amp-autocast-scope]
    auto val = model->forward(x);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    // CHECK-MESSAGES: :[[@LINE-5]]:5: warning: not migrated automatically: no training step {{.*}} [amp-manual-migration]
    at::autocast::clear_cache();
  }
}
// The training step is rewritten, the validation scopes are kept as written.
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES: {{^}}    torch::NoGradGuard no_grad;{{$}}
// CHECK-FIXES-NEXT: {{^}}    at::autocast::set_enabled(true);{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto val = model->forward(x);{{$}}
// CHECK-FIXES-NEXT: {{^}}    at::autocast::set_enabled(false);{{$}}
