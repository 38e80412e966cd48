// The step-overhead benchmark's migrated program: before.cpp's step as amp-migrate --fix writes
// it (examples/expected/train_mlp.O2.cpp shows the same form), with the level (--mode=O0|O1) read
// from the command line instead of being a constant, so that one binary serves both levels.
#include "common.h"

#include <amp/torch.h>

int main(int argc, char **argv) {
  const bench::Args args = bench::parse(argc, argv);
  if (args.mode != "O0" && args.mode != "O1") {
    std::fprintf(stderr, "--mode=O0|O1\n");
    return 2;
  }
  const bench::Data d = bench::make_data(args);
  bench::Mlp model(args);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).growth_interval(100));
  const double max_norm = 1.0;
  const int rows = static_cast<int>(d.inputs.size(0));
  model->train();
  auto amp_model = amp::auto_mixed_precision(model, args.mode);
  const std::string what = "after-" + args.mode;
  return bench::run(args, what.c_str(), [&](int step) {
    auto data = d.inputs.narrow(0, (step * args.batch) % rows, args.batch);
    auto target = d.targets.narrow(0, (step * args.batch) % rows, args.batch);
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.unscale_(optimizer, grads);
    amp::clip_by_global_norm_(grads, max_norm);
    scaler.step(optimizer, grads);
    scaler.update();
    return loss.item<double>();
  });
}
