// RUN: %check_amp %s %t.cpp
// WILD (issue #38, public projects measured after run 3): two reasons that were not true.
// 1. A PPO trainer computes its loss in a lambda defined before the autocast scope and called in
//    it; backward() and the optimizer's step() follow. The reason said "no optimizer or scaler
//    step() follows" (false: one does); the step is not rewritten because the scope's own
//    statements do not compute the loss, which is what the reason now says.
// 2. A learner clips a member list of parameters that its constructor fills and builds the
//    optimizer from. The reason said the clip covers "a parameter set other than the model's or
//    the optimizer's" (false in fact); now it says the translation unit does not show which.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void lambda_loss(Net &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::Tensor loss;
  auto compute = [&]() { loss = model->forward(x).sum(); };
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: not migrated automatically: backward() at line 27 follows this autocast scope and `opt.step()` at line 28 follows it, but the scope does not compute `loss` in its own statements: it is assigned in a lambda defined at line 19; the rewrite hands the scope's statements to amp::value_and_grad as the forward, so write the loss's computation in the scope, or migrate this step by hand [amp-manual-migration]
    compute();
    at::autocast::set_enabled(false);
  }
  loss.backward();
  opt.step();
}

struct Learner {
  explicit Learner(Net m);
  void update(const torch::Tensor &x) {
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = model->forward(x).mean();
      at::autocast::set_enabled(false);
    }
    loss.backward();
    torch::nn::utils::clip_grad_norm_(all, 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad in a step whose loss was computed under autocast; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    // CHECK-MESSAGES: :[[@LINE-2]]:39: warning: not migrated automatically: the clip covers `all`, which this translation unit does not show to be the model's or the optimizer's parameters (a list the optimizer is built from counts where that construction is in sight); the explicit grads cover the optimizer's parameters, so the clip could act on other gradients than the original's: migrate this step by hand [amp-manual-migration]
    opt->step();
  }
  Net model;
  std::vector<torch::Tensor> all;
  std::shared_ptr<torch::optim::SGD> opt;
};
