// RUN: %check_amp %s %t.cpp
// WILD: a scaler port whose constructor defaults differ from torch.amp.GradScaler's (growth every
// 10 steps, a smaller start): the defaults the construction relies on are written out where they
// differ, or the migrated scaler would grow its scale 200 times more slowly.
#include <torch/torch.h>
#include <memory>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class DynamicLossScaler {
public:
  explicit DynamicLossScaler(double init_scale = 128.0, double growth_factor = 2.0,
                             double backoff_factor = 0.5, int growth_interval = 10)
      : scale_(init_scale) {}
  torch::Tensor scale(const torch::Tensor &loss) { return loss * scale_; }
  void unscale_(torch::optim::Optimizer &opt);
  void step(torch::optim::Optimizer &opt);
  void update();

private:
  double scale_;
};

void written(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
             const torch::Tensor &target) {
  DynamicLossScaler scaler(256.0);
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(data), target);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void made_shared(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                 const torch::Tensor &target) {
  auto scaler = std::make_shared<DynamicLossScaler>(512.0, 4.0);
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(data), target);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler->step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler->update();
}

void all_defaults(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                  const torch::Tensor &target) {
  DynamicLossScaler scaler;
  // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: not migrated automatically: the scaler is constructed with its class's defaults, which differ from amp::GradScaler's; write them out (amp::GradScalerOptions().init_scale(128.0).growth_interval(10)) or migrate by hand [amp-manual-migration]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(data), target);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(256.0).growth_interval(10));{{$}}
// CHECK-FIXES: {{^}}  auto scaler = std::make_shared<amp::GradScaler>(amp::GradScalerOptions().init_scale(512.0).growth_factor(4.0).growth_interval(10));{{$}}
// CHECK-FIXES: {{^}}  DynamicLossScaler scaler;{{$}}
