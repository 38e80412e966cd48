// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include
// WILD, over real libtorch 1.13 headers: a model returning (logits, loss) taken apart with a
// structured binding inside the scope, both read after the step, and a loop averaging every
// parameter's .grad between the scaled backward and step() (issue #12 items 3 and 5).
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <tuple>

class LossScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }
  void unscale_(torch::optim::Optimizer &opt) {
    for (auto &p : opt.param_groups()[0].params())
      if (p.grad().defined())
        p.mutable_grad().div_(scale_);
  }
  void step(torch::optim::Optimizer &opt) { opt.step(); }
  void update() {}

private:
  double scale_ = 1024.0;
};

struct HeadImpl : torch::nn::Module {
  HeadImpl() : fc(register_module("fc", torch::nn::Linear(8, 2))) {}
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor &x, const torch::Tensor &y) {
    auto logits = fc->forward(x);
    return {logits, torch::cross_entropy_loss(logits, y)};
  }
  torch::nn::Linear fc;
};
TORCH_MODULE(Head);

double train(Head &model, torch::optim::SGD &optimizer, LossScaler &scaler, int world) {
  double total = 0;
  for (int i = 0; i < 10; ++i) {
    auto x = torch::randn({4, 8});
    auto y = torch::randint(0, 2, {4});
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto [logits, loss] = model->forward(x, y);
    at::autocast::set_cpu_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    for (auto &p : model->parameters())
      if (p.grad().defined())
        p.mutable_grad().div_(world);
    scaler.unscale_(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
    total += loss.item<double>() + logits.sum().item<double>();
  }
  return total;
}
// CHECK-FIXES: {{^}}double train(Head &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler, int world) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  double total = 0;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int i = 0; i < 10; ++i) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto x = torch::randn({4, 8});{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto y = torch::randint(0, 2, {4});{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor logits;{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      std::tie(logits, loss) = amp::cast_to_adapter_tensor(amp_model->forward(x, y));{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    for (auto &p_grad : grads){{$}}
// CHECK-FIXES-NEXT: {{^}}      if (p_grad.defined()){{$}}
// CHECK-FIXES-NEXT: {{^}}        p_grad.div_(world);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    total += loss.item<double>() + logits.sum().item<double>();{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}  return total;{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
