#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <cstdio>

#include "common.h"
#include "loss_scaler.h"

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
  train::GradScaler scaler(4096.0);
  for (int step = 0; step < e2e::kSteps; ++step) {
    sgd.zero_grad();
    at::autocast::set_cpu_enabled(true);
    Output out = net->forward(data.input(step));
    auto loss = torch::nn::functional::cross_entropy(out.logits, data.target(step)) +
                0.5 * out.balance / out.experts;
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(sgd);
    torch::nn::utils::clip_grad_norm_(net->parameters(), 5.0);
    scaler.step(sgd);
    scaler.update();
    schedule.step();
    e2e::log_step(step, loss);
    std::printf("balance %.6f\n", out.balance.item<double>());
  }
  e2e::log_params(net->parameters());
}
