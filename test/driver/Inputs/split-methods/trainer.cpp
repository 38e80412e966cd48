#include "trainer.h"

void Trainer::forward_backward(const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  auto loss = model_->forward(x).mean();
  at::autocast::set_enabled(false);
  scaler_.scale(loss).backward();
}

void Trainer::optimizer_step() {
  scaler_.step(*opt_);
  scaler_.update();
  opt_->zero_grad();
}

void Trainer::train_batch(const torch::Tensor &x) {
  forward_backward(x);
  optimizer_step();
}
