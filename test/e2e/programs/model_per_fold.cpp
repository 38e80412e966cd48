#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"

// e2e before-program: k-fold training, a fresh model and optimizer at the top of each fold (the
// holder assigned anew), one scaler across folds. The model's conversion must follow each
// assignment: converted before the fold loop, the later folds would train the first fold's model
// (issue #37 item 3: their losses stayed constant).

int main() {
  e2e::SyntheticData data;
  constexpr int kFolds = 3;
  e2e::Mlp model;
  train::GradScaler scaler(1024.0);
  for (int fold = 0; fold < kFolds; ++fold) {
    torch::manual_seed(fold);
    model = e2e::Mlp();
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    model->train();
    for (int step = 0; step < e2e::kSteps / kFolds; ++step) {
      int at = fold * (e2e::kSteps / kFolds) + step;
      optimizer.zero_grad();
      at::autocast::set_cpu_enabled(true);
      auto output = model->forward(data.input(at));
      auto loss = torch::nll_loss(output, data.target(at));
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
      scaler.scale(loss).backward();
      scaler.step(optimizer);
      scaler.update();
      e2e::log_step(at, loss);
    }
  }
  e2e::log_params(model->parameters());
}
