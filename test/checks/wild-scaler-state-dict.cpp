// RUN: %check_amp %s %t.cpp --level=O1
// WILD: a project's scaler port with checkpointing (`state_dict()` / `load_state_dict(state)`),
// saved and restored around the step. The target's scaler has the same two methods, with a
// std::map<std::string, double> of PyTorch's keys: a port whose state is that (its body names no
// other key) keeps its checkpoint code as written when its type changes. A port with a key of its
// own (`loss_scale`) would read nothing from the target's state: reported, naming the key.
#include <torch/torch.h>
#include <map>
#include <string>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

class LossScaler {
public:
  explicit LossScaler(double init_scale = 65536.0) : scale_(init_scale) {}
  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }
  void unscale_(torch::optim::Optimizer &opt);
  void step(torch::optim::Optimizer &opt);
  void update();
  std::map<std::string, double> state_dict() const {
    return {{"scale", scale_}, {"growth_factor", 2.0}, {"backoff_factor", 0.5},
            {"growth_interval", 2000.0}, {"_growth_tracker", double(tracker_)}};
  }
  void load_state_dict(const std::map<std::string, double> &s) {
    scale_ = s.at("scale");
    tracker_ = int(s.at("_growth_tracker"));
  }

private:
  double scale_;
  int tracker_ = 0;
};

class OwnKeysScaler {
public:
  explicit OwnKeysScaler(double init_scale = 65536.0) : scale_(init_scale) {}
  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }
  void unscale_(torch::optim::Optimizer &opt);
  void step(torch::optim::Optimizer &opt);
  void update();
  std::map<std::string, double> state_dict() const { return {{"loss_scale", scale_}}; }
  void load_state_dict(const std::map<std::string, double> &s) { scale_ = s.at("loss_scale"); }

private:
  double scale_;
};

std::map<std::string, double> train(Net &model, torch::optim::SGD &opt, const torch::Tensor &x,
                                    const torch::Tensor &y, const std::map<std::string, double> &resume) {
  LossScaler scaler(1024.0);
  if (!resume.empty())
    scaler.load_state_dict(resume);
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
  return scaler.state_dict();
}

std::map<std::string, double> train_own_keys(Net &model, torch::optim::SGD &opt, const torch::Tensor &x,
                                             const torch::Tensor &y) {
  OwnKeysScaler scaler(1024.0);
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto loss = torch::mse_loss(model->forward(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the scaler 'scaler' is used at {{[^ ]+}} through state_dict(), whose state has the key `"loss_scale"`, not one of PyTorch's GradScaler (scale, growth_factor, backoff_factor, growth_interval, _growth_tracker) that amp::GradScaler uses; changing its type to amp::GradScaler would break this use [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
  return scaler.state_dict();
}
// CHECK-FIXES: {{^}}  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));{{$}}
// CHECK-FIXES: {{^}}  if (!resume.empty()){{$}}
// CHECK-FIXES: {{^}}    scaler.load_state_dict(resume);{{$}}
// CHECK-FIXES: {{^}}    scaler.step(opt, grads);{{$}}
// CHECK-FIXES: {{^}}  return scaler.state_dict();{{$}}
// CHECK-FIXES: {{^}}  OwnKeysScaler scaler(1024.0);{{$}}
