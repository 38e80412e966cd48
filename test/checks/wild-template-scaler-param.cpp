// RUN: %check_amp %s %t.cpp --level=O1
// WILD: a step in a function template over the model whose scaler parameter has a type of its
// own (`template <class Model> float train_step(Model &model, ..., torch::amp::GradScaler &scaler)`).
// The parameter's type is one spelling for every instantiation: it changes, and so does the
// scaler each caller of each instantiation passes. A scaler whose type is the template's
// parameter stays manual (amp-scaler-implicit-grad-templates.cpp).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

struct WideImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Wide);

template <class Model>
torch::Tensor train_step(Model &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                         const torch::Tensor &x, const torch::Tensor &y) {
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::mse_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  return loss;
}

void run(Net &net, Wide &wide, torch::optim::SGD &opt_net, torch::optim::SGD &opt_wide,
         const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler net_scaler(1024.0);
  torch::amp::GradScaler wide_scaler;
  for (int step = 0; step < 10; ++step) {
    train_step(net, opt_net, net_scaler, x, y);
    train_step(wide, opt_wide, wide_scaler, x, y);
  }
}

// An explicit specialization has a source of its own, which would keep the old type: manual.
template <class Model>
void special_step(Model &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                  const torch::Tensor &x, const torch::Tensor &y) {
  opt.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = torch::mse_loss(model->forward(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: the scaler 'scaler' is a parameter of the template 'special_step', which has an explicit specialization at {{[^ ]+}} that would keep its type; change them by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
template <>
void special_step<Wide>(Wide &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                        const torch::Tensor &x, const torch::Tensor &y) {}

void run_special(Net &net, torch::optim::SGD &opt, const torch::Tensor &x, const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  special_step(net, opt, scaler, x, y);
}
// CHECK-FIXES: {{^}}torch::Tensor train_step(Model &model, torch::optim::SGD &opt, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1, torch::kCUDA);{{$}}
// CHECK-FIXES: {{^}}  scaler.step(opt, grads);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler net_scaler(amp::GradScalerOptions().init_scale(1024.0));{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler wide_scaler;{{$}}
// CHECK-FIXES: {{^}}void special_step(Model &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,{{$}}

// A member function of a class template whose scaler parameter has a type of its own: one source
// for the member of every specialization of the class; the scalers its callers pass change too.
template <class Model>
class Trainer {
public:
  explicit Trainer(Model m) : model_(m) {}
  float step(torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x,
             const torch::Tensor &y) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant{{.*}} [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::mse_loss(model_->forward(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler.update();
    return loss.template item<float>();
  }

private:
  Model model_;
};

void run_trainers(Net &net, Wide &wide, torch::optim::SGD &opt, const torch::Tensor &x,
                  const torch::Tensor &y) {
  Trainer<Net> a(net);
  Trainer<Wide> b(wide);
  torch::amp::GradScaler sa;
  torch::amp::GradScaler sb(1024.0);
  a.step(opt, sa, x, y);
  b.step(opt, sb, x, y);
}
// CHECK-FIXES: {{^}}  float step(torch::optim::SGD &opt, amp::GradScaler &scaler, const torch::Tensor &x,{{$}}
// CHECK-FIXES: {{^}}    auto amp_model = amp::auto_mixed_precision(model_, amp::Level::O1, torch::kCUDA);{{$}}
// CHECK-FIXES: {{^}}    scaler.step(opt, grads);{{$}}
// CHECK-FIXES: {{^}}  amp::GradScaler sa;{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler sb(amp::GradScalerOptions().init_scale(1024.0));{{$}}
