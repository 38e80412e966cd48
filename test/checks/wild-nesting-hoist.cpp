// RUN: %check_amp %s %t.cpp
// WILD: a pair with nesting, dtype and cache calls around it, a guard that disables autocast for a
// nested region (kept: it only turns off what is already off), zero_grad between the scope and the
// backward, a unique_ptr scaler, and a loss declared in the scope and used after it (hoisted).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class NoAutocast {
public:
  NoAutocast() : prev_(at::autocast::is_enabled()) { at::autocast::set_enabled(false); }
  ~NoAutocast() { at::autocast::set_enabled(prev_); }
private:
  bool prev_;
};

float hoisted(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
              const torch::Tensor &target) {
  auto scaler = std::make_unique<torch::amp::GradScaler>();
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  at::autocast::increment_nesting();
  at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
  auto output = model->forward(data);
  auto loss = torch::nll_loss(output, target);
  {
    NoAutocast fp32;
    // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: guard 'NoAutocast' disables autocast for a nested region; under amp::auto_mixed_precision the region's precision follows the converted model [amp-autocast-scope]
    loss = loss + torch::mse_loss(output, target);
  }
  at::autocast::decrement_nesting();
  at::autocast::clear_cache();
  at::autocast::set_enabled(false);
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler->step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler->update();
  return loss.item<float>();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  auto scaler = std::make_unique<amp::GradScaler>();{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, at::kBFloat16, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(output, target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    {
// CHECK-FIXES-NEXT: {{^}}      NoAutocast fp32;{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss = loss + torch::mse_loss(output, target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }
// CHECK-FIXES-NEXT: {{^}}    return scaler->scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler->step(optimizer, grads);{{$}}
