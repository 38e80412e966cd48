// RUN: %check_amp %s %t.cpp
// WILD: AMP code under an inactive `#if 0` in the step's function: reported as manual migration,
// and nothing is edited (the other configuration cannot be checked).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
           const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
#if 0
// CHECK-MESSAGES: :[[@LINE-1]]:1: warning: not migrated automatically: AMP code under an inactive preprocessor branch in this function; migrate each configuration by hand or run once per configuration [amp-manual-migration]
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
#endif
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
// CHECK-FIXES: {{^}}  torch::amp::GradScaler scaler;
// CHECK-FIXES: {{^}}    at::autocast::set_enabled(true);
