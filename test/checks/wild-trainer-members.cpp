// RUN: %check_amp %s %t.cpp
// WILD: a trainer class: member model (ModuleHolder), optimizer in a unique_ptr passed as `*opt_`,
// scaler in a std::optional, `torch::autocast::` spelling, a structured-binding forward, and
// `nn::utils::clip_grad_norm_` after `using namespace torch`. With the scaler port in `torch::amp`
// and that using-directive, `amp::` would be ambiguous: the edits write `::amp::`.
#include <torch/torch.h>
#include "scaler.h"
#include <optional>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor &x, const torch::Tensor &y);
};
TORCH_MODULE(Net);

using namespace torch;

class Trainer {
public:
  void step(const torch::Tensor &data, const torch::Tensor &target);
private:
  Net model_;
  std::unique_ptr<torch::optim::Adam> opt_;
  std::optional<torch::amp::GradScaler> scaler_;
  double max_norm_ = 1.0;
};

void Trainer::step(const torch::Tensor &data, const torch::Tensor &target) {
  torch::Tensor loss;
  {
    torch::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto [logits, l] = model_->forward(data, target);
    loss = l;
    torch::autocast::set_enabled(false);
  }
  scaler_->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler_->unscale_(*opt_);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  nn::utils::clip_grad_norm_(model_->parameters(), max_norm_);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
  scaler_->step(*opt_);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler_->update();
}

// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  std::optional<::amp::GradScaler> scaler_;{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = ::amp::auto_mixed_precision(model_, ::amp::Level::O2, ::torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = ::amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    auto [logits, l] = ::amp::cast_to_adapter_tensor(amp_model->forward(data, target));{{$}}
// CHECK-FIXES: {{^}}    return scaler_->scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, ::amp::parameters_of(*opt_));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler_->unscale_(*opt_, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  ::amp::check_holds(*opt_, model_->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}  ::amp::clip_by_global_norm_(grads, max_norm_);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler_->step(*opt_, grads);{{$}}
