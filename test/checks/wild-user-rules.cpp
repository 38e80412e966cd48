// RUN: %check_amp %s %t.cpp --rules=%S/Inputs/inhouse-rules.yaml
// User rules (docs/rules.md): an in-house guard class whose body the tool cannot see, and a
// scaler class with its own method names and constructor parameter names.
#include <torch/torch.h>
namespace corp {
class MixedPrecisionScope {
public:
  MixedPrecisionScope();
  ~MixedPrecisionScope();
};
class DynamicLossScaler {
public:
  explicit DynamicLossScaler(double initialScale);
  torch::Tensor ScaleLoss(const torch::Tensor &loss);
  void UnscaleGrads(torch::optim::Optimizer &opt);
  void StepOptimizer(torch::optim::Optimizer &opt);
  void UpdateScale();
};
} // namespace corp
struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
           const torch::Tensor &target) {
  corp::DynamicLossScaler scaler(128.0);
  torch::Tensor loss;
  {
    corp::MixedPrecisionScope amp_scope;
    // CHECK-MESSAGES: :[[@LINE-1]]:31: warning: autocast scope opened by guard 'corp::MixedPrecisionScope'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
  }
  scaler.ScaleLoss(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.UnscaleGrads(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
  scaler.StepOptimizer(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.UpdateScale();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(128.0));{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}    loss = torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(data)), target);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update();{{$}}
