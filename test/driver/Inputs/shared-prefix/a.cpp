#include <torch/torch.h>
#include "guard_def.h"
#include "scaler.h"
#include "touch_all.h"

// The canonical step; its first two include lines are those of b.cpp and c.cpp.
struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(int epochs, double max_norm) {
  Net model;
  model->train();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  torch::amp::GradScaler scaler;
  torch::Tensor data, target;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    optimizer.zero_grad();
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      auto output = model->forward(data);
      loss = torch::nll_loss(output, target);
      at::autocast::clear_cache();
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
    scaler.step(optimizer);
    scaler.update();
    float l = loss.item<float>();
    (void)l;
  }
}
