// REQUIRES: libtorch2
// RUN: %check_amp_real %s %t.cpp -- %torch2_flags
// WILD (issue #38 item 7, docs/real-projects.md shape 6), over real libtorch 2.x headers (the
// 2.4+ set_autocast_enabled(device, bool)): a scope whose value leaves its function for training
// is never called inference. A loss returned by a function nothing in this file calls (its
// caller, which backpropagates it, is in another file), or a value handed to a function of this
// file that runs the backward and the step: each reported with where the value goes, and nothing
// changes. A forward's output returned uncalled stays inference (amp-autocast-inference.cpp).
#include <ATen/autocast_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

struct Batch {
  torch::Tensor x, y;
};

class Runner {
public:
  torch::Tensor ForwardAndLoss(Batch &b);

protected:
  torch::nn::Linear model{4, 2};
  at::DeviceType dev = at::kCUDA;
};

torch::Tensor Runner::ForwardAndLoss(Batch &b) {
  at::autocast::set_autocast_enabled(dev, true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_autocast_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: the loss computed in this scope leaves the function (returned at line [[@LINE+3]]) and nothing in this file calls 'ForwardAndLoss': its backward is not in this file, so the step cannot be rewritten from here; migrate it by hand where the backward is (a step that calls a function of its own file for its loss is rewritten) [amp-manual-migration]
  auto loss = torch::mse_loss(model->forward(b.x), b.y);
  at::autocast::set_autocast_enabled(dev, false);
  return loss;
}

// The scope's loss handed to a method that runs the backward and the step.
struct Updater {
  torch::nn::Linear model{4, 2};
  torch::optim::SGD opt{model->parameters(), 0.1};
  void optimize(const torch::Tensor &loss) {
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  void update(const torch::Tensor &x, const torch::Tensor &y) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: not migrated automatically: what this scope computes is handed to 'optimize' at line [[@LINE+3]], which trains with it (`loss.backward()` at line 42): a forward here and its backward in a function it calls is not a shape the rewrite carries; move the backward and the step into this function, or migrate by hand [amp-manual-migration]
    auto pred = model->forward(x);
    at::autocast::set_enabled(false);
    optimize(torch::mse_loss(pred.to(torch::kFloat32), y));
  }
};

// Its result only printed by its one caller: still inference.
torch::Tensor logits(torch::nn::Linear &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: {{.*}} [amp-autocast-inference]
  auto out = model->forward(x);
  at::autocast::set_enabled(false);
  return out;
}
float show(torch::nn::Linear &model, const torch::Tensor &x) { return logits(model, x).sum().item<float>(); }
// CHECK-FIXES: {{^}}  at::autocast::set_autocast_enabled(dev, true);{{$}}
// CHECK-FIXES: {{^}}    at::autocast::set_enabled(true);{{$}}
// CHECK-FIXES: {{^}}    optimize(torch::mse_loss(pred.to(torch::kFloat32), y));{{$}}
