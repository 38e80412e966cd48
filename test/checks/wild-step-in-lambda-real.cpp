// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp --level=O1 -- -isystem %torch_include -I %amp_torch_include -I %amp_runtime_include
// WILD, over real libtorch 1.13 headers (issue #12 item 7): a generic per-batch lambda over
// torch::data::Example<> batches, handed to a std::function, with a hand-written scaler. The step
// is read through the lambda's instantiation; the model is converted once before the epoch loop
// and captured by copy (the binding's forward is const for that); the fix is re-parsed with the
// real binding.
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <functional>
#include <vector>

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

float train(torch::nn::Linear &model, torch::optim::SGD &optimizer,
            const std::vector<torch::data::Example<>> &batches, int epochs) {
  LossScaler scaler;
  float last = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::function<void(const torch::data::Example<> &)> run;
    auto train_step = [&](const auto &batch) {
      optimizer.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
      at::autocast::set_cpu_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      auto loss = torch::mse_loss(model->forward(batch.data), batch.target);
      at::autocast::set_cpu_enabled(false);
      scaler.scale(loss).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
      scaler.unscale_(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
      scaler.step(optimizer);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
      scaler.update();
      last = loss.template item<float>();
    };
    run = train_step;
    for (const auto &b : batches)
      run(b);
  }
  return last;
}

// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  float last = 0;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int epoch = 0; epoch < epochs; ++epoch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    std::function<void(const torch::data::Example<> &)> run;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto train_step = [&, amp_model](const auto &batch) {{{$}}
// CHECK-FIXES-NEXT: {{^}}      torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto grad_fn = amp::value_and_grad([&] {
// CHECK-FIXES-NEXT: {{^}}        loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model->forward(batch.data)), batch.target);{{$}}
// CHECK-FIXES-NEXT: {{^}}        return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}      }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}      scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}      last = loss.template item<float>();{{$}}
// CHECK-FIXES-NEXT: {{^}}    };{{$}}
