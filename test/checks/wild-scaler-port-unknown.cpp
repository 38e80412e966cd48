// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include
// RUN: %amp-migrate --use-color=never --rules=%S/Inputs/loss-scaler-port.yaml %s -- -std=c++17 -isystem %torch_include | FileCheck --check-prefix=RULES %s
// WILD (issue #38 item 7, docs/real-projects.md shape 4), over real libtorch 1.13 headers: a
// project's scaler port with other method names and no autocast (scale, unscale without an
// underscore, has_overflow, update; no step: the caller skips the optimizer's step on overflow).
// Not a scaler by shape (no step method), so nothing named it and the tool was silent. Now a
// finding says which class scales the loss and how to name it in a rules file; named there
// (second RUN), its calls are scaler calls and the step is reported with its true blocker.
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <memory>

struct LossScaler {
  torch::Tensor scale(const torch::Tensor &l) { return l * s_; }
  void unscale(const std::shared_ptr<torch::optim::Optimizer> &opt) {
    overflow_ = false;
    for (auto &g : opt->param_groups())
      for (auto &p : g.params())
        if (p.grad().defined()) {
          p.mutable_grad().div_(s_);
          if (!torch::isfinite(p.grad()).all().item<bool>())
            overflow_ = true;
        }
  }
  bool has_overflow() const { return overflow_; }
  void update() { s_ = overflow_ ? s_ / 2 : s_; }
  double s_ = 65536.0;
  bool overflow_ = false;
};

void train_step(torch::nn::Linear &m, std::shared_ptr<torch::optim::Adam> opt, LossScaler &sc,
                const torch::Tensor &x) {
  opt->zero_grad();
  auto loss = m->forward(x.to(torch::kFloat16)).to(torch::kFloat32).pow(2).mean();
  loss = sc.scale(loss);
  // CHECK-MESSAGES: :[[@LINE-1]]:10: warning: not migrated automatically: a loss-scaling step by 'LossScaler', which the tool does not know as a loss scaler (it has scale() and unscale(), but no step method: scaler.methods.step); if it scales the loss, unscales the grads and skips the optimizer's step on overflow as GradScaler does, name it in a rules file (scaler: {classes: [LossScaler]}, docs/rules.md) to have the step analysed, or migrate by hand [amp-manual-migration]
  loss.backward();
  // RULES: :[[@LINE-1]]:3: warning: not migrated automatically: the scaler class 'LossScaler' has no step method (scaler.methods.step) (here the optimizer steps itself: `opt->step()` at line [[@LINE+5]]), and the rewrite needs the scaler's step(optimizer), which becomes step(optimizer, grads) and skips the step on overflow itself; migrate this step by hand [amp-manual-migration]
  // RULES: :[[@LINE-2]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  sc.unscale(opt);
  // RULES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  if (!sc.has_overflow())
    opt->step();
  sc.update();
}
// CHECK-FIXES: {{^}}  loss = sc.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  loss.backward();{{$}}

// A scale() with no backward in its function is not reported.
torch::Tensor scaled_only(LossScaler &sc, const torch::Tensor &l) { return sc.scale(l); }
