// RUN: %check_amp %s %t.cpp --rules=%S/Inputs/found-inf-unscale-and-check.yaml
// A rule file can say what a checked unscale answers in its code base; it overrides the built-in
// meaning of unscale_and_check (true when every grad is finite). Here true means an inf or NaN was
// found, so the binding's answer is negated.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class OverflowScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss);
  bool unscale_and_check(torch::optim::Optimizer &opt); // true: an inf or NaN was found
  void step(torch::optim::Optimizer &opt);
  void update();
};

void train(Net &model, torch::optim::SGD &opt, const torch::Tensor &data, int &overflows) {
  OverflowScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  const bool overflow = scaler.unscale_and_check(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:25: warning: checked unscale without explicit grads; with explicit gradients it takes them and answers whether every grad is finite: unscale_and_check(optimizer, grads) [amp-scaler-unscale]
  overflows += overflow ? 1 : 0;
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  const bool overflow = !scaler.unscale_and_check(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  overflows += overflow ? 1 : 0;{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(opt, grads);{{$}}
