#include <torch/torch.h>
#include "scaler.h"
#include "runner.h"

void train_step(Runner &runner, torch::optim::SGD &opt, torch::amp::GradScaler &scaler,
                const torch::Tensor &x, const torch::Tensor &y) {
  auto loss = runner.forward_and_loss(x, y);
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}
