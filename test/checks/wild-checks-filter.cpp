// RUN: %check_amp %s %t.cpp --checks=-*,amp-autocast-scope
// WILD: --checks=-*,amp-autocast-scope reports only scopes.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
           const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  optimizer.zero_grad();
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  scaler.unscale_(optimizer);
  torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  scaler.step(optimizer);
  scaler.update();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
