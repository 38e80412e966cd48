// RUN: %check_amp %s %t.cpp --rules=%S/Inputs/overflow-unscale-rules.yaml
// A checked unscale whose answer is used becomes the binding's checked unscale on the grads,
// `scaler.unscale_and_check(opt, grads)`, which answers whether every grad is finite (from the
// inf check unscale_ records; one host read). What the user's answer means comes from the rules:
// unscale_and_check is listed in scaler.methods.checked-unscale-finite (true: all finite); a
// method listed in checked-unscale-found-inf (true: an inf or NaN was found) is negated.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class CheckedScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss);
  bool unscale_and_check(torch::optim::Optimizer &opt);
  bool unscale_overflowed(torch::optim::Optimizer &opt);
  void step(torch::optim::Optimizer &opt);
  void update();
};

void finite_answer(Net &model, torch::optim::SGD &opt, const torch::Tensor &data, int &skipped) {
  CheckedScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE+2]]:5: note: the scope ends here
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  bool finite = scaler.unscale_and_check(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: checked unscale without explicit grads; with explicit gradients it takes them and answers whether every grad is finite: unscale_and_check(optimizer, grads) [amp-scaler-unscale]
  if (!finite)
    ++skipped;
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void found_inf_answer(Net &model, std::shared_ptr<torch::optim::SGD> opt, const torch::Tensor &data,
                      int &skipped) {
  auto scaler = std::make_shared<CheckedScaler>();
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE+2]]:5: note: the scope ends here
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler->scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  if (scaler->unscale_overflowed(*opt))
  // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: checked unscale without explicit grads; with explicit gradients it takes them and answers whether every grad is finite: unscale_and_check(optimizer, grads) [amp-scaler-unscale]
    ++skipped;
  scaler->step(*opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler->update();
}

// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  bool finite = scaler.unscale_and_check(opt, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  if (!finite){{$}}
// CHECK-FIXES-NEXT: {{^}}    ++skipped;{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(opt, grads);{{$}}
// CHECK-FIXES: {{^}}  auto scaler = std::make_shared<amp::GradScaler>();{{$}}
// CHECK-FIXES: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  if (!scaler->unscale_and_check(*opt, grads)){{$}}
// CHECK-FIXES-NEXT: {{^}}    ++skipped;{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler->step(*opt, grads);{{$}}
