// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include -I %amp_torch_include -I %amp_runtime_include
// WILD (issue #38 item 7, docs/real-projects.md shape 6, the derived-class side), over real
// libtorch 1.13 headers: a step split over two methods where no third method calls both. The
// scaling half's loss comes from a base-class method defined in another file: that is the reason
// given. A scaling half that calls the stepping half itself is said to do so (not "no method of
// the class calls both").
#include <ATen/autocast_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/sgd.h>

#include <memory>

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

struct Batch {
  torch::Tensor x, y;
};

class Runner {
public:
  torch::Tensor ForwardAndLoss(Batch &b); // defined in runner.cpp, with the autocast scope

protected:
  torch::nn::Linear model_{4, 2};
};

class Trainer : public Runner {
public:
  void RunStep(Batch &b) {
    auto loss = ForwardAndLoss(b);
    scaler_->scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the step is split over two methods of 'Trainer': its unscale_()/step()/update() are in 'Finish' (line [[@LINE+11]]); its grads would travel from 'RunStep' to 'Finish' in a new member of the class, but its loss comes from 'ForwardAndLoss' (line [[@LINE-2]]), whose body is not in this file: the forward to hand to amp::value_and_grad is in another file: migrate this step by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    Finish();
  }

private:
  void Finish() {
    scaler_->unscale_(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model_->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step{{.*}} [amp-clip-grad-norm]
    scaler_->step(*opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the step is split over two methods of 'Trainer': its scaled backward is in 'RunStep' (line 47); its grads would travel from 'RunStep' to 'Finish' in a new member of the class, but its loss comes from 'ForwardAndLoss' (line 46), whose body is not in this file: the forward to hand to amp::value_and_grad is in another file: migrate this step by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_->update();
  }
  std::unique_ptr<torch::optim::SGD> opt_;
  std::shared_ptr<LossScaler> scaler_ = std::make_shared<LossScaler>();
};

// The scope and the scaled backward in one method, which then calls the stepping method itself.
class ChainedTrainer {
public:
  void RunTrainSteps(const torch::Tensor &x, const torch::Tensor &y) {
    at::autocast::set_cpu_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'{{.*}} [amp-autocast-scope]
    auto loss = torch::mse_loss(model_->forward(x), y);
    at::autocast::set_cpu_enabled(false);
    scaler_.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the step is split over two methods of 'ChainedTrainer': its unscale_()/step()/update() are in 'RunOptimizer' (line [[@LINE+9]]); its grads would travel from 'RunTrainSteps' to 'RunOptimizer' in a new member of the class, but 'RunTrainSteps' calls 'RunOptimizer' itself (line [[@LINE+2]]), and the rewrite carries a split step only when a third method calls both: move both halves into one method or migrate by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
    RunOptimizer();
  }

private:
  void RunOptimizer() {
    scaler_.unscale_(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
    scaler_.step(opt_);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: the step is split over two methods of 'ChainedTrainer': its scaled backward is in 'RunTrainSteps' (line 76);{{.*}} but 'RunTrainSteps' calls 'RunOptimizer' itself (line 79), and the rewrite carries a split step only when a third method calls both: move both halves into one method or migrate by hand [amp-manual-migration]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: step() without explicit grads{{.*}} [amp-scaler-step]
    scaler_.update();
  }
  torch::nn::Linear model_{4, 2};
  torch::optim::SGD opt_{model_->parameters(), 0.1};
  LossScaler scaler_;
};
// CHECK-FIXES: {{^}}    scaler_->scale(loss).backward();{{$}}
// CHECK-FIXES: {{^}}    scaler_.scale(loss).backward();{{$}}
