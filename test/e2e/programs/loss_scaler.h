// The before-programs' own loss scaler: a port of Python's torch.cuda.amp.GradScaler of the kind
// libtorch projects carry (libtorch has none). Implicit gradients: it works on `.grad`.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

namespace train {

class GradScaler {
public:
  explicit GradScaler(double init_scale = 65536.0, double growth_factor = 2.0,
                      double backoff_factor = 0.5, int growth_interval = 2000)
      : scale_(init_scale), growth_factor_(growth_factor), backoff_factor_(backoff_factor),
        growth_interval_(growth_interval) {}

  torch::Tensor scale(const torch::Tensor &loss) const { return loss * scale_; }

  void unscale_(torch::optim::Optimizer &optimizer) {
    if (!unscaled_.insert(&optimizer).second)
      return;
    torch::NoGradGuard no_grad;
    for (auto &group : optimizer.param_groups())
      for (auto &p : group.params()) {
        if (!p.grad().defined())
          continue;
        if (!torch::isfinite(p.grad()).all().item<bool>())
          found_inf_ = true;
        p.mutable_grad().mul_(1.0 / scale_);
      }
  }

  /// unscale_, then whether every grad was finite (whether step() will apply the update).
  bool unscale_and_check(torch::optim::Optimizer &optimizer) {
    unscale_(optimizer);
    return !found_inf_;
  }

  void step(torch::optim::Optimizer &optimizer) {
    unscale_(optimizer);
    if (!found_inf_)
      optimizer.step();
  }

  void update() {
    if (found_inf_) {
      scale_ *= backoff_factor_;
      tracker_ = 0;
    } else if (++tracker_ == growth_interval_) {
      scale_ *= growth_factor_;
      tracker_ = 0;
    }
    found_inf_ = false;
    unscaled_.clear();
  }

  double get_scale() const { return scale_; }

  /// Checkpointing, with the keys and meaning of Python's GradScaler.state_dict().
  std::map<std::string, double> state_dict() const {
    return {{"scale", scale_},
            {"growth_factor", growth_factor_},
            {"backoff_factor", backoff_factor_},
            {"growth_interval", static_cast<double>(growth_interval_)},
            {"_growth_tracker", static_cast<double>(tracker_)}};
  }
  void load_state_dict(const std::map<std::string, double> &state) {
    scale_ = state.at("scale");
    growth_factor_ = state.at("growth_factor");
    backoff_factor_ = state.at("backoff_factor");
    growth_interval_ = static_cast<int>(state.at("growth_interval"));
    tracker_ = static_cast<int>(state.at("_growth_tracker"));
  }

private:
  double scale_, growth_factor_, backoff_factor_;
  int growth_interval_;
  int tracker_ = 0;
  bool found_inf_ = false;
  std::set<const torch::optim::Optimizer *> unscaled_; // per optimizer, as in PyTorch
};

} // namespace train
