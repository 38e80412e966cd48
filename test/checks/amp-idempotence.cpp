// RUN: %check_amp %s %t.cpp
// RUN: cp %S/amp-autocast-scope.cpp %t.amp-autocast-scope.cpp && %amp-migrate --fix %t.amp-autocast-scope.cpp -- -std=c++17 -I%mock
// RUN: cp %t.amp-autocast-scope.cpp %t.amp-autocast-scope.again.cpp && %amp-migrate --fix --use-color=never %t.amp-autocast-scope.again.cpp -- -std=c++17 -I%mock > %t.amp-autocast-scope.out 2>&1
// RUN: not grep warning: %t.amp-autocast-scope.out
// RUN: diff %t.amp-autocast-scope.cpp %t.amp-autocast-scope.again.cpp
// RUN: cp %S/amp-scaler-implicit-grad.cpp %t.amp-scaler-implicit-grad.cpp && %amp-migrate --fix %t.amp-scaler-implicit-grad.cpp -- -std=c++17 -I%mock
// RUN: cp %t.amp-scaler-implicit-grad.cpp %t.amp-scaler-implicit-grad.again.cpp && %amp-migrate --fix --use-color=never %t.amp-scaler-implicit-grad.again.cpp -- -std=c++17 -I%mock > %t.amp-scaler-implicit-grad.out 2>&1
// RUN: not grep warning: %t.amp-scaler-implicit-grad.out
// RUN: diff %t.amp-scaler-implicit-grad.cpp %t.amp-scaler-implicit-grad.again.cpp
// RUN: cp %S/amp-scaler-step.cpp %t.amp-scaler-step.cpp && %amp-migrate --fix %t.amp-scaler-step.cpp -- -std=c++17 -I%mock
// RUN: cp %t.amp-scaler-step.cpp %t.amp-scaler-step.again.cpp && %amp-migrate --fix --use-color=never %t.amp-scaler-step.again.cpp -- -std=c++17 -I%mock > %t.amp-scaler-step.out 2>&1
// RUN: not grep warning: %t.amp-scaler-step.out
// RUN: diff %t.amp-scaler-step.cpp %t.amp-scaler-step.again.cpp
// RUN: cp %S/amp-clip-grad-norm.cpp %t.amp-clip-grad-norm.cpp && %amp-migrate --fix %t.amp-clip-grad-norm.cpp -- -std=c++17 -I%mock
// RUN: cp %t.amp-clip-grad-norm.cpp %t.amp-clip-grad-norm.again.cpp && %amp-migrate --fix --use-color=never %t.amp-clip-grad-norm.again.cpp -- -std=c++17 -I%mock > %t.amp-clip-grad-norm.out 2>&1
// RUN: not grep warning: %t.amp-clip-grad-norm.out
// RUN: diff %t.amp-clip-grad-norm.cpp %t.amp-clip-grad-norm.again.cpp
// RUN: cp %S/amp-zero-grad.cpp %t.amp-zero-grad.cpp && %amp-migrate --fix %t.amp-zero-grad.cpp -- -std=c++17 -I%mock
// RUN: cp %t.amp-zero-grad.cpp %t.amp-zero-grad.again.cpp && %amp-migrate --fix --use-color=never %t.amp-zero-grad.again.cpp -- -std=c++17 -I%mock > %t.amp-zero-grad.out 2>&1
// RUN: not grep warning: %t.amp-zero-grad.out
// RUN: diff %t.amp-zero-grad.cpp %t.amp-zero-grad.again.cpp
// RUN: cp %S/amp-scaler-unscale.cpp %t.amp-scaler-unscale.cpp && %amp-migrate --fix %t.amp-scaler-unscale.cpp -- -std=c++17 -I%mock
// RUN: cp %t.amp-scaler-unscale.cpp %t.amp-scaler-unscale.again.cpp && %amp-migrate --fix --use-color=never %t.amp-scaler-unscale.again.cpp -- -std=c++17 -I%mock > %t.amp-scaler-unscale.out 2>&1
// RUN: not grep warning: %t.amp-scaler-unscale.out
// RUN: diff %t.amp-scaler-unscale.cpp %t.amp-scaler-unscale.again.cpp
// RUN: cp %S/wild-raii-guard.cpp %t.wild-raii-guard.cpp && %amp-migrate --fix %t.wild-raii-guard.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-raii-guard.cpp %t.wild-raii-guard.again.cpp && %amp-migrate --fix --use-color=never %t.wild-raii-guard.again.cpp -- -std=c++17 -I%mock > %t.wild-raii-guard.out 2>&1
// RUN: not grep warning: %t.wild-raii-guard.out
// RUN: diff %t.wild-raii-guard.cpp %t.wild-raii-guard.again.cpp
// RUN: cp %S/wild-if-guarded.cpp %t.wild-if-guarded.cpp && %amp-migrate --fix %t.wild-if-guarded.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-if-guarded.cpp %t.wild-if-guarded.again.cpp && %amp-migrate --fix --use-color=never %t.wild-if-guarded.again.cpp -- -std=c++17 -I%mock > %t.wild-if-guarded.out 2>&1
// RUN: not grep warning: %t.wild-if-guarded.out
// RUN: diff %t.wild-if-guarded.cpp %t.wild-if-guarded.again.cpp
// RUN: cp %S/wild-macro-pair.cpp %t.wild-macro-pair.cpp && %amp-migrate --fix %t.wild-macro-pair.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-macro-pair.cpp %t.wild-macro-pair.again.cpp && %amp-migrate --fix --use-color=never %t.wild-macro-pair.again.cpp -- -std=c++17 -I%mock > %t.wild-macro-pair.out 2>&1
// RUN: not grep warning: %t.wild-macro-pair.out
// RUN: diff %t.wild-macro-pair.cpp %t.wild-macro-pair.again.cpp
// RUN: cp %S/wild-api24.cpp %t.wild-api24.cpp && %amp-migrate --fix %t.wild-api24.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-api24.cpp %t.wild-api24.again.cpp && %amp-migrate --fix --use-color=never %t.wild-api24.again.cpp -- -std=c++17 -I%mock > %t.wild-api24.out 2>&1
// RUN: not grep warning: %t.wild-api24.out
// RUN: diff %t.wild-api24.cpp %t.wild-api24.again.cpp
// RUN: cp %S/wild-camelcase-scaler.cpp %t.wild-camelcase-scaler.cpp && %amp-migrate --fix %t.wild-camelcase-scaler.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-camelcase-scaler.cpp %t.wild-camelcase-scaler.again.cpp && %amp-migrate --fix --use-color=never %t.wild-camelcase-scaler.again.cpp -- -std=c++17 -I%mock > %t.wild-camelcase-scaler.out 2>&1
// RUN: not grep warning: %t.wild-camelcase-scaler.out
// RUN: diff %t.wild-camelcase-scaler.cpp %t.wild-camelcase-scaler.again.cpp
// RUN: cp %S/wild-shared-scaler.cpp %t.wild-shared-scaler.cpp && %amp-migrate --fix %t.wild-shared-scaler.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-shared-scaler.cpp %t.wild-shared-scaler.again.cpp && %amp-migrate --fix --use-color=never %t.wild-shared-scaler.again.cpp -- -std=c++17 -I%mock > %t.wild-shared-scaler.out 2>&1
// RUN: not grep warning: %t.wild-shared-scaler.out
// RUN: diff %t.wild-shared-scaler.cpp %t.wild-shared-scaler.again.cpp
// RUN: cp %S/wild-module-call.cpp %t.wild-module-call.cpp && %amp-migrate --fix %t.wild-module-call.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-module-call.cpp %t.wild-module-call.again.cpp && %amp-migrate --fix --use-color=never %t.wild-module-call.again.cpp -- -std=c++17 -I%mock > %t.wild-module-call.out 2>&1
// RUN: not grep warning: %t.wild-module-call.out
// RUN: diff %t.wild-module-call.cpp %t.wild-module-call.again.cpp
// RUN: cp %S/wild-nesting-hoist.cpp %t.wild-nesting-hoist.cpp && %amp-migrate --fix %t.wild-nesting-hoist.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-nesting-hoist.cpp %t.wild-nesting-hoist.again.cpp && %amp-migrate --fix --use-color=never %t.wild-nesting-hoist.again.cpp -- -std=c++17 -I%mock > %t.wild-nesting-hoist.out 2>&1
// RUN: not grep warning: %t.wild-nesting-hoist.out
// RUN: diff %t.wild-nesting-hoist.cpp %t.wild-nesting-hoist.again.cpp
// RUN: cp %S/wild-two-models.cpp %t.wild-two-models.cpp && %amp-migrate --fix %t.wild-two-models.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-two-models.cpp %t.wild-two-models.again.cpp && %amp-migrate --fix --use-color=never %t.wild-two-models.again.cpp -- -std=c++17 -I%mock > %t.wild-two-models.out 2>&1
// RUN: not grep warning: %t.wild-two-models.out
// RUN: diff %t.wild-two-models.cpp %t.wild-two-models.again.cpp
// RUN: cp %S/wild-guard-end-try.cpp %t.wild-guard-end-try.cpp && %amp-migrate --fix %t.wild-guard-end-try.cpp -- -std=c++17 -I%mock
// RUN: cp %t.wild-guard-end-try.cpp %t.wild-guard-end-try.again.cpp && %amp-migrate --fix --use-color=never %t.wild-guard-end-try.again.cpp -- -std=c++17 -I%mock > %t.wild-guard-end-try.out 2>&1
// RUN: not grep warning: %t.wild-guard-end-try.out
// RUN: diff %t.wild-guard-end-try.cpp %t.wild-guard-end-try.again.cpp
// Already-migrated code reports nothing; and the rewrite's own output of the per-check tests,
// run through the tool again, reports nothing and stays byte-identical.
#include <torch/torch.h>
#include <amp/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(int epochs, double max_norm) {
  Net model;
  model->train();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  amp::GradScaler scaler;
  torch::Tensor data, target;
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(optimizer, grads);
    auto norm = amp::clip_by_global_norm_(grads, max_norm).item<double>();
    scaler.step(optimizer, grads);
    scaler.update();
    float l = loss.item<float>() + static_cast<float>(norm);
    (void)l;
  }
}
