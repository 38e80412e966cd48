// RUN: %check_amp %s %t.cpp
// WILD: one guard class for both directions: `Guard on(true)` around the forward, `Guard off(false)`
// for a loss computed in fp32 inside it. The inner use disables autocast (kept, like a guard class
// that only disables); it is no second scope that would run the loss under autocast.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class CudaAutocast {
public:
  explicit CudaAutocast(bool enabled) : prev_(at::autocast::is_enabled()) {
    at::autocast::set_enabled(enabled);
    at::autocast::increment_nesting();
  }
  ~CudaAutocast() {
    if (at::autocast::decrement_nesting() == 0)
      at::autocast::clear_cache();
    at::autocast::set_enabled(prev_);
  }
private:
  bool prev_;
};

void train_step(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                const torch::Tensor &data, const torch::Tensor &target) {
  torch::Tensor loss;
  {
    CudaAutocast autocast(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: autocast scope opened by guard 'CudaAutocast'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto logits = model->forward(data);
    {
      CudaAutocast fp32(false);
      // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: guard 'CudaAutocast' disables autocast for a nested region; under amp::auto_mixed_precision the region's precision follows the converted model [amp-autocast-scope]
      loss = torch::nll_loss(logits.to(torch::kFloat), target);
    }
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  torch::nn::utils::clip_grad_norm_(model->parameters(), 2.0);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}void train_step(Net &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    auto logits = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES-NEXT: {{^}}    {
// CHECK-FIXES-NEXT: {{^}}      CudaAutocast fp32(false);{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss = torch::nll_loss(logits.to(torch::kFloat), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::clip_by_global_norm_(grads, 2.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
