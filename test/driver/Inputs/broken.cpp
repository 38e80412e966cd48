#include <torch/torch.h>
#include "scaler.h"
void step(torch::nn::Linear &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  torch::amp::GradScaler scaler;
  at::autocast::set_enabled(true);
  auto loss = model(x).sum()
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  scaler.step(opt);
}
