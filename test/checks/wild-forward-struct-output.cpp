// RUN: %check_amp %s %t.cpp
// WILD: a forward that returns a struct. An aggregate of tensors and scalars is cast back to fp32
// field by field (amp::cast_to_adapter_tensor); a class whose tensors the cast cannot reach (a
// constructor of its own, a base class) is reported: its fields would reach the loss in bf16.
#include <torch/torch.h>
#include "scaler.h"

struct Output {
  torch::Tensor logits;
  torch::Tensor aux;
  int heads;
};

struct NetImpl : torch::nn::Module {
  Output forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void aggregate(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
               const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  Output out = model->forward(x);
  auto loss = torch::nll_loss(out.logits, y) + out.aux;
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

class Prediction {
public:
  Prediction(torch::Tensor l) : logits_(l) {}
  const torch::Tensor &logits() const { return logits_; }
private:
  torch::Tensor logits_;
};

struct BaseOutput {
  torch::Tensor logits;
};
struct DerivedOutput : BaseOutput {
  torch::Tensor aux;
};

struct OtherImpl : torch::nn::Module {
  Prediction forward(const torch::Tensor &x);
};
TORCH_MODULE(Other);

struct DerivedImpl : torch::nn::Module {
  DerivedOutput forward(const torch::Tensor &x);
};
TORCH_MODULE(Derived);

void with_constructor(Other &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                      const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::nll_loss(model->forward(x).logits(), y);
  // CHECK-MESSAGES: :[[@LINE-1]]:31: warning: not migrated automatically: the forward returns 'Prediction', whose tensors amp::cast_to_adapter_tensor cannot cast back to fp32 (it casts tensors, tuples, pairs and vectors of them, and aggregates of such fields and scalars without base classes, up to 12 fields), so the loss would be computed from low-precision outputs; return such a type, or migrate this step by hand [amp-manual-migration]
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void with_base(Derived &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
               const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto out = model->forward(x);
  // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: not migrated automatically: the forward returns 'DerivedOutput', whose tensors amp::cast_to_adapter_tensor cannot cast back to fp32 (it casts tensors, tuples, pairs and vectors of them, and aggregates of such fields and scalars without base classes, up to 12 fields), so the loss would be computed from low-precision outputs; return such a type, or migrate this step by hand [amp-manual-migration]
  auto loss = torch::nll_loss(out.logits, y) + out.aux;
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}    Output out = amp::cast_to_adapter_tensor(amp_model->forward(x));{{$}}
// CHECK-FIXES: {{^}}  auto loss = torch::nll_loss(model->forward(x).logits(), y);{{$}}
// CHECK-FIXES: {{^}}  auto out = model->forward(x);{{$}}
