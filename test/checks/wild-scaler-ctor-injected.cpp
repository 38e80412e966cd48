// RUN: %check_amp %s %t.cpp
// WILD: the scaler made with make_shared through a type alias, handed to a trainer's constructor
// and kept in a member (`scaler_(std::move(scaler))`): the parameter, the member and the
// make_shared change type together.
#include <torch/torch.h>
#include "scaler.h"
#include <memory>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

using Scaler = torch::amp::GradScaler;

class Trainer {
public:
  Trainer(Net model, std::shared_ptr<Scaler> scaler, torch::optim::SGD &opt)
      : model_(model), scaler_(std::move(scaler)), opt_(opt) {}
  void step(const torch::Tensor &x, const torch::Tensor &y) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::nll_loss(model_->forward(x), y);
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    scaler_->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler_->step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler_->update();
  }
private:
  Net model_;
  std::shared_ptr<Scaler> scaler_;
  torch::optim::SGD &opt_;
};

void run(Net model, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  auto scaler = std::make_shared<Scaler>(1024.0);
  Trainer t(model, scaler, opt);
  t.step(x, y);
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}using Scaler = torch::amp::GradScaler;{{$}}
// CHECK-FIXES: {{^}}  Trainer(Net model, std::shared_ptr<amp::GradScaler> scaler, torch::optim::SGD &opt){{$}}
// CHECK-FIXES-NEXT: {{^}}      : model_(model), scaler_(std::move(scaler)), opt_(opt) {}{{$}}
// CHECK-FIXES: {{^}}    scaler_->step(opt_, grads);{{$}}
// CHECK-FIXES: {{^}}  std::shared_ptr<amp::GradScaler> scaler_;{{$}}
// CHECK-FIXES: {{^}}  auto scaler = std::make_shared<amp::GradScaler>(amp::GradScalerOptions().init_scale(1024.0));{{$}}
