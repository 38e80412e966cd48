// RUN: %check_amp %s %t.cpp
// WILD: a run-time flag guarding a block that sets the autocast dtype and enables autocast
// (`if (bf16) { set_autocast_cpu_dtype(...); set_cpu_enabled(true); }`): the whole if goes, and
// the flag chooses the level, as for `if (use_amp) set_cpu_enabled(true);`. Before, the flag was
// dropped and the fp32 mode trained in bf16.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
           const torch::Tensor &y, bool bf16) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < 10; ++step) {
    if (bf16) {
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::set_cpu_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    }
    auto loss = torch::nll_loss(model->forward(x), y);
    if (bf16)
      at::autocast::set_cpu_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, bf16 ? amp::Level::O2 : amp::Level::O0, at::kBFloat16);{{$}}
// CHECK-FIXES: {{^}}  for (int step = 0; step < 10; ++step) {{{$}}
// CHECK-FIXES: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
