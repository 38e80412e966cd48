// A project header holding a whole training step: the prefilter must look into it.
#pragma once
#include <torch/torch.h>
#include "scaler.h"

inline void header_step(torch::nn::Linear &model, torch::optim::SGD &optimizer,
                        torch::amp::GradScaler &scaler, const torch::Tensor &x,
                        const torch::Tensor &y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(model(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  scaler.step(optimizer);
  scaler.update();
}
