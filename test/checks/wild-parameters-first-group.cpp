// RUN: %check_amp %s %t.cpp --rules=%S/Inputs/first-group-parameters.yaml
// Rules whose target has no parameters-of: the parameters handed to value_and_grad are the
// optimizer's own, reached with `.` or `->` as the optimizer argument is written (a reference, a
// dereferenced shared_ptr, a dereferenced raw pointer).
#include <torch/torch.h>
#include <memory>
#include "scaler.h"
struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);


void by_reference(Net &model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  }, opt.parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(opt, grads);{{$}}

void by_shared_ptr(Net &model, std::shared_ptr<torch::optim::SGD> opt, const torch::Tensor &x,
                   const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(*opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  }, opt->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(*opt, grads);{{$}}

void by_pointer(Net &model, torch::optim::SGD *opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(*opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  }, opt->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(*opt, grads);{{$}}
