// RUN: %check_amp %s %t.cpp
// Steps in templates. The parse hands every instantiated function body over beside its pattern; a
// template instantiated once in the file is analysed through that instantiation (where calls on
// template parameters are resolved) and not also through its pattern, so its step is reported and
// rewritten once. A scaler whose declared type is a template parameter cannot be retyped in the
// template: reported with the reason. A template instantiated several times: every instantiation
// is analysed and their plans must agree.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);
struct OtherImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Other);

template <class Model> class Trainer {
public:
  float train_step(const torch::Tensor &x) {
    opt_->zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = model_->forward(x).sum();
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    at::autocast::clear_cache();
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler_.step(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_.update();
    return 0;
  }
  Model model_;
  std::shared_ptr<torch::optim::SGD> opt_;
  torch::amp::GradScaler scaler_;
};
float run_trainer(Trainer<Net> &t, const torch::Tensor &x) { return t.train_step(x); }
// CHECK-FIXES: {{^}}    auto amp_model = amp::auto_mixed_precision(model_, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES: {{^}}    scaler_.step(*opt_, grads);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler_;{{$}}

template <class Model, class Scaler> class ParamScalerTrainer {
public:
  void train_step(const torch::Tensor &x) {
    opt_.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand {{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled {{.*}} [amp-autocast-scope]
    auto loss = model_->forward(x).sum();
    at::autocast::set_enabled(false);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: note: the scope ends here
    at::autocast::clear_cache();
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
    scaler_.step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the scaler 'scaler_' at {{.*}}amp-scaler-implicit-grad-templates.cpp.tmp.cpp:[[@LINE+6]] is declared with the template parameter 'Scaler' (torch::amp::GradScaler here); it must become amp::GradScaler where the template gets its argument: change that by hand or migrate this step by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_.update();
  }
  Model model_;
  torch::optim::SGD opt_;
  Scaler scaler_;
};
void run_param(ParamScalerTrainer<Net, torch::amp::GradScaler> &t, const torch::Tensor &x) {
  t.train_step(x);
}

// A template instantiated with two models: each instantiation is analysed (their calls on the
// template parameter resolved) and both plan the same edits of the one source, which is rewritten
// once.
template <class M>
float twice_instantiated(M &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled {{.*}} [amp-autocast-scope]
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
  return loss.template item<float>();
}
void run_both(Net &a, Other &b, torch::optim::SGD &opt, const torch::Tensor &x) {
  twice_instantiated(a, opt, x);
  twice_instantiated(b, opt, x);
}
// CHECK-FIXES: {{^}}float twice_instantiated(M &model, torch::optim::SGD &opt, const torch::Tensor &x) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}    loss = amp::cast_to_adapter_tensor(amp_model->forward(x)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(opt, grads);{{$}}

// One instantiation's model asks autocast whether it is on in its forward: that instantiation
// cannot be migrated, so neither is the other (the source is one).
struct QueryingImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x) {
    return at::autocast::is_enabled() ? x : x * 2;
  }
};
TORCH_MODULE(Querying);
template <class M>
void one_blocked(M &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled {{.*}} [amp-autocast-scope]
  auto loss = model->forward(x).sum();
  // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: not migrated automatically: the model's forward asks whether autocast is on {{.*}} [amp-manual-migration]
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss {{.*}} [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: another instantiation of this template cannot be migrated (the model's forward asks whether autocast is on {{.*}}); its one source is rewritten for all of them or for none [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
void run_one_blocked(Net &a, Querying &q, torch::optim::SGD &opt, const torch::Tensor &x) {
  one_blocked(a, opt, x);
  one_blocked(q, opt, x);
}
// CHECK-FIXES: {{^}}void one_blocked(M &model, torch::optim::SGD &opt, const torch::Tensor &x) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::amp::GradScaler scaler;{{$}}
