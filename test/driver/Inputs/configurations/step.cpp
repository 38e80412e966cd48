// One training step compiled in two configurations: INSPECT_GRADS reads .grad between backward()
// and step(), which blocks the rewrite (it would leave the loop reading nothing).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void inspect(const torch::Tensor &g);

void train(int epochs, double max_norm) {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  torch::amp::GradScaler scaler;
  torch::Tensor data, target;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      loss = torch::nll_loss(model->forward(data), target);
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
#ifdef INSPECT_GRADS
    for (auto &p : model->parameters())
      inspect(p.grad());
#endif
    scaler.unscale_(optimizer);
    scaler.step(optimizer);
    scaler.update();
  }
}
