#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: the model's forward returns a struct (logits, an auxiliary load-balancing
// loss and a count), and the loss is computed from its fields inside the autocast scope: the
// migrated forward's result must reach the loss cast back to fp32 field by field, as autocast's
// fp32 loss ops did (cross_entropy on bf16 logits differs by up to 1 % per step). A learning-rate
// schedule steps after the scaler, and the struct's fields are logged after the step.

struct Output {
  torch::Tensor logits;
  torch::Tensor balance; // auxiliary loss of the gate
  long experts;
};

struct GatedImpl : torch::nn::Module {
  GatedImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(e2e::kInputs, 64));
    gate = register_module("gate", torch::nn::Linear(64, 4));
    fc2 = register_module("fc2", torch::nn::Linear(64, e2e::kClasses));
  }
  Output forward(const torch::Tensor &x) {
    auto h = torch::tanh(fc1->forward(x));
    auto g = torch::softmax(gate->forward(h), -1);
    return {fc2->forward(h), (g.mean(0) - 0.25).pow(2).sum(), g.size(1)};
  }
  torch::nn::Linear fc1{nullptr}, gate{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Gated);

int main() {
  e2e::SyntheticData data;
  torch::manual_seed(0);
  Gated net;
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::StepLR schedule(sgd, 15, 0.3);
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(4096.0));
  auto amp_net = amp::auto_mixed_precision(net, amp::Level::O1);
  for (int step = 0; step < e2e::kSteps; ++step) {
    Output out;
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      out = amp::cast_to_adapter_tensor(amp_net->forward(data.input(step)));
      loss = torch::nn::functional::cross_entropy(out.logits, data.target(step)) +
                  0.5 * out.balance / out.experts;
      return scaler.scale(loss);
    }, amp::parameters_of(sgd));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(sgd, grads);
    amp::clip_by_global_norm_(grads, 5.0);
    scaler.step(sgd, grads);
    scaler.update();
    schedule.step();
    e2e::log_step(step, loss);
    std::printf("balance %.6f\n", out.balance.item<double>());
  }
  e2e::log_params(net->parameters());
}
