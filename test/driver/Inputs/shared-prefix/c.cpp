#include <torch/torch.h>
#include "guard_def.h"
#include "scaler.h"

// Shares the first two include lines with a.cpp and b.cpp, and its whole include block with
// neither: a step with a scaler and no autocast scope (its fp32 forward kept).
void train(int steps) {
  torch::nn::Linear model(4, 1);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  torch::amp::GradScaler scaler;
  torch::Tensor data;
  for (int s = 0; s < steps; ++s) {
    optimizer.zero_grad();
    torch::Tensor loss = model->forward(data).sum();
    scaler.scale(loss).backward();
    scaler.step(optimizer);
    scaler.update();
  }
}
