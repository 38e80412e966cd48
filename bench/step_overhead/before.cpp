// The step-overhead benchmark's original program: autocast around forward and loss, a loss scaler
// of the project's own, clip_grad_norm_ after unscale_, step, update (the form amp-migrate
// rewrites; as examples/train_mlp). --mode=hand: the e2e programs' hand-rolled scaler
// (test/e2e/programs/loss_scaler.h: one host-synchronising isfinite check per parameter);
// --mode=aten: one built on ATen's fused _amp_foreach_non_finite_check_and_unscale_ and
// _amp_update_scale_. --autocast=0 for the O0 comparison.
#include "common.h"
#include "loss_scaler.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace {
// The CPU autocast switch of this libtorch: 2.4+ deprecates set_cpu_enabled and warns on every
// call (a line on stderr each step would be part of the original's step time).
void set_cpu_autocast(bool enabled) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::autocast::set_autocast_enabled(at::kCPU, enabled);
#else
  at::autocast::set_cpu_enabled(enabled);
#endif
}
} // namespace

namespace train {

/// The same scaler on ATen's own fused AMP ops (what torch.amp.GradScaler calls).
class AtenScaler {
public:
  AtenScaler(double init_scale, double growth_factor, double backoff_factor, int growth_interval)
      : scale_(torch::full({}, init_scale)), tracker_(torch::zeros({}, torch::kInt)),
        found_inf_(torch::zeros({})), growth_factor_(growth_factor),
        backoff_factor_(backoff_factor), growth_interval_(growth_interval) {}

  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }

  void unscale_(torch::optim::Optimizer &optimizer) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> grads;
    for (auto &group : optimizer.param_groups())
      for (auto &p : group.params())
        if (p.grad().defined())
          grads.push_back(p.mutable_grad());
    found_inf_.zero_();
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, scale_.reciprocal());
    unscaled_ = true;
  }

  void step(torch::optim::Optimizer &optimizer) {
    if (!unscaled_)
      unscale_(optimizer);
    if (found_inf_.item<float>() == 0.0f)
      optimizer.step();
  }

  void update() {
    at::_amp_update_scale_(scale_, tracker_, found_inf_, growth_factor_, backoff_factor_,
                           growth_interval_);
    unscaled_ = false;
  }

private:
  torch::Tensor scale_, tracker_, found_inf_;
  double growth_factor_, backoff_factor_;
  int growth_interval_;
  bool unscaled_ = false;
};

} // namespace train

template <class Scaler> int train_with(const bench::Args &args, const char *what) {
  const bench::Data d = bench::make_data(args);
  bench::Mlp model(args);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  Scaler scaler(1024.0, 2.0, 0.5, 100);
  const double max_norm = 1.0;
  const int rows = static_cast<int>(d.inputs.size(0));
  model->train();
  return bench::run(args, what, [&](int step) {
    auto data = d.inputs.narrow(0, (step * args.batch) % rows, args.batch);
    auto target = d.targets.narrow(0, (step * args.batch) % rows, args.batch);
    optimizer.zero_grad();
    set_cpu_autocast(args.autocast);
    auto output = model->forward(data);
    auto loss = torch::nll_loss(output, target);
    set_cpu_autocast(false);
    at::autocast::clear_cache();
    scaler.scale(loss).backward();
    scaler.unscale_(optimizer);
    torch::nn::utils::clip_grad_norm_(model->parameters(), max_norm);
    scaler.step(optimizer);
    scaler.update();
    return loss.item<double>();
  });
}

int main(int argc, char **argv) {
  const bench::Args args = bench::parse(argc, argv);
  try {
    if (args.mode == "hand")
      return train_with<train::GradScaler>(args, "before-hand");
    if (args.mode == "aten")
      return train_with<train::AtenScaler>(args, "before-aten");
  } catch (const std::exception &e) {
    // libtorch 1.13 has no CPU kernels for the fused AMP ops: the script reports "n/a".
    std::fprintf(stderr, "before --mode=%s: %s\n", args.mode.c_str(), e.what());
    return 3;
  }
  std::fprintf(stderr, "--mode=hand|aten\n");
  return 2;
}
