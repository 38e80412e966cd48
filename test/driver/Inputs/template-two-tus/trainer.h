// A header-only trainer: a step function template over the model.
#pragma once
#include <torch/torch.h>
#include "scaler.h"

template <class Model>
float train_step(Model &model, torch::optim::SGD &opt, const torch::Tensor &x) {
  static torch::amp::GradScaler scaler;
  opt.zero_grad();
  at::autocast::set_enabled(true);
  auto loss = model->forward(x).sum();
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
  return loss.template item<float>();
}
