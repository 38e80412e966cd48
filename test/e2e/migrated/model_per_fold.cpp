#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "common.h"
#include "loss_scaler.h"
#include <amp/torch.h>

// e2e before-program: k-fold training, a fresh model and optimizer at the top of each fold (the
// holder assigned anew), one scaler across folds. The model's conversion must follow each
// assignment: converted before the fold loop, the later folds would train the first fold's model
// (issue #37 item 3: their losses stayed constant).

int main() {
  e2e::SyntheticData data;
  constexpr int kFolds = 3;
  e2e::Mlp model;
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0));
  for (int fold = 0; fold < kFolds; ++fold) {
    torch::manual_seed(fold);
    model = e2e::Mlp();
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    model->train();
    auto amp_model = amp::auto_mixed_precision(model, amp::Level::O1);
    for (int step = 0; step < e2e::kSteps / kFolds; ++step) {
      int at = fold * (e2e::kSteps / kFolds) + step;
      torch::Tensor loss;
      auto grad_fn = amp::value_and_grad([&] {
        auto output = amp::cast_to_adapter_tensor(amp_model->forward(data.input(at)));
        loss = torch::nll_loss(output, data.target(at));
        return scaler.scale(loss);
      }, amp::parameters_of(optimizer));
      auto [scaled_loss, grads] = grad_fn();
      scaler.step(optimizer, grads);
      scaler.update();
      e2e::log_step(at, loss);
    }
  }
  e2e::log_params(model->parameters());
}
