// A trainer whose helpers are defined in trainer_log.cpp: log_grads() reads .grad, log_step()
// does not.
#pragma once
#include <torch/torch.h>
#include "scaler.h"
#include "net.h"

struct Trainer {
  Net model;
  torch::optim::SGD optimizer{model->parameters(), torch::optim::SGDOptions(0.01)};
  void log_grads();
  void log_step();
  void train_reads(const torch::Tensor &data, const torch::Tensor &target);
  void train_logs(const torch::Tensor &data, const torch::Tensor &target);
};
