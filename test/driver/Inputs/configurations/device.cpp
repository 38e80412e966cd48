// One training step compiled in two configurations whose AUTOCAST_ON is set_enabled (CUDA) in one
// and set_cpu_enabled (CPU) in the other: the model's conversion differs (its device).
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(int epochs, double max_norm) {
  Net model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  torch::amp::GradScaler scaler;
  torch::Tensor data, target;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      AUTOCAST_ON(true);
      loss = torch::nll_loss(model->forward(data), target);
      AUTOCAST_ON(false);
    }
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    scaler.step(optimizer);
    scaler.update();
  }
}
