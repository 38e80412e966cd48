// RUN: %check_amp %s %t.cpp
// WILD: a scaler port built from an options object (`GradScaler scaler{GradScalerOptions{}
// .enabled(false)}`, a GPT trainer's; issue #38 item 8): the setters written in the argument map
// onto amp::GradScalerOptions one by one, with the options class's own defaults written out where
// they differ from the target's (`pow(2.0, 15)` is folded). A subclass that only adds a
// constructor taking the options is the type the declaration spells. Refused with the reason: an
// options object held in a variable, and a setter with no known meaning.
#include <torch/torch.h>
#include <cmath>

namespace port {
struct Options {
  Options() = default;
  Options &init_scale(double v) { init_scale_ = v; return *this; }
  Options &growth_interval(int v) { growth_interval_ = v; return *this; }
  Options &enabled(bool v) { enabled_ = v; return *this; }
  Options &verbose(bool v) { verbose_ = v; return *this; }
  double init_scale_ = std::pow(2.0, 15);
  int growth_interval_ = 2000;
  bool enabled_ = true;
  bool verbose_ = false;
};
class Scaler {
public:
  explicit Scaler(const Options &options = {});
  torch::Tensor scale(const torch::Tensor &outputs);
  void unscale_(torch::optim::Optimizer &optimizer);
  void step(torch::optim::Optimizer &optimizer);
  void update();
};
class OptionsScaler : public Scaler {
public:
  explicit OptionsScaler(const Options &options) : Scaler(options) {}
};
} // namespace port

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x) { return x; }
};
TORCH_MODULE(Net);

void disabled(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  port::Scaler scaler{port::Options{}.enabled(false)};
  auto loss = model->forward(x).mean();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void disabled(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler{amp::GradScalerOptions().init_scale(32768.0).enabled(false)};{{$}}

void subclass(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  port::OptionsScaler scaler(port::Options().init_scale(1024.0).growth_interval(10));
  auto loss = model->forward(x).mean();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}void subclass(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {{[{]}}{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).growth_interval(10));{{$}}

void held(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  port::Options options;
  options.init_scale(1024.0);
  port::Scaler scaler(options);
  // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: not migrated automatically: the scaler's options object `options` of class 'Options' is not built in the argument by its setters (`Options{}.init_scale(x)...`); write it so or migrate by hand [amp-manual-migration]
  auto loss = model->forward(x).mean();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void unknown_setter(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  port::Scaler scaler(port::Options{}.verbose(true));
  // CHECK-MESSAGES: :[[@LINE-1]]:39: warning: not migrated automatically: the scaler option 'verbose' of 'Options' has no known meaning; map it in a rule file (scaler.options) [amp-manual-migration]
  auto loss = model->forward(x).mean();
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// The refused steps keep their code.
// CHECK-FIXES: {{^}}  port::Scaler scaler(options);{{$}}
// CHECK-FIXES: {{^}}  port::Scaler scaler(port::Options{}.verbose(true));{{$}}
