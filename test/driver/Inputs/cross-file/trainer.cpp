// A trainer's steps, each with a call between the backward and the step of a method defined in
// trainer_log.cpp: one reads .grad there, one does not.
#include <torch/torch.h>
#include "trainer.h"

void Trainer::train_reads(const torch::Tensor &data, const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  log_grads();
  scaler.step(optimizer);
  scaler.update();
}

void Trainer::train_logs(const torch::Tensor &data, const torch::Tensor &target) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  log_step();
  scaler.step(optimizer);
  scaler.update();
}
