// Steps whose callees are defined in other files: an fp32 forward (net.cpp) and a forward that
// turns autocast on itself (half.cpp), each under a scaler with no autocast scope.
#include <torch/torch.h>
#include "scaler.h"
#include "net.h"

void train_fp32(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                const torch::Tensor &data, const torch::Tensor &target) {
  auto output = model->forward(data);
  auto loss = torch::nll_loss(output, target);
  scaler.scale(loss).backward();
  scaler.step(optimizer);
  scaler.update();
}

void train_half(HalfNet &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                const torch::Tensor &data, const torch::Tensor &target) {
  auto output = model->forward(data);
  auto loss = torch::nll_loss(output, target);
  scaler.scale(loss).backward();
  scaler.step(optimizer);
  scaler.update();
}
