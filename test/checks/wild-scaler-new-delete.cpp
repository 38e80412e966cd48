// RUN: %check_amp %s %t.cpp
// WILD: the scaler held by a raw pointer from `new`, deleted after training. The `new` is
// retyped with the pointer; `delete` deletes whatever the pointer points to, so it stays.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x, const torch::Tensor &y) {
  auto *scaler = new torch::amp::GradScaler();
  for (int step = 0; step < 10; ++step) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here, without at::autocast::clear_cache(){{.*}}
    scaler->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler->step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler->update();
  }
  delete scaler;
}
// CHECK-FIXES: {{^}}  auto *scaler = new amp::GradScaler();{{$}}
// CHECK-FIXES: {{^}}    scaler->step(optimizer, grads);{{$}}
// CHECK-FIXES: {{^}}  delete scaler;{{$}}
