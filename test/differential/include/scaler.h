// The differential check's runnable stand-in for the mock headers' `torch::amp::GradScaler`
// (test/Inputs/mock-torch/scaler.h, a typical user port of Python's GradScaler): the same
// declarations, with the implicit-gradient semantics of the e2e programs' own scaler
// (test/e2e/programs/loss_scaler.h). The lit inputs' original functions run against this; their
// migrated forms against the runtime's amp::GradScaler.
#pragma once

#include "loss_scaler.h"

#include <torch/torch.h>

namespace torch {
namespace amp {
class GradScaler : public train::GradScaler {
public:
  explicit GradScaler(double init_scale = 65536.0, double growth_factor = 2.0,
                      double backoff_factor = 0.5, int64_t growth_interval = 2000,
                      bool enabled = true)
      : train::GradScaler(init_scale, growth_factor, backoff_factor,
                          static_cast<int>(growth_interval)),
        enabled_(enabled) {}
  torch::Tensor scale(const torch::Tensor &outputs) {
    return enabled_ ? train::GradScaler::scale(outputs) : outputs;
  }
  void unscale_(torch::optim::Optimizer &optimizer) {
    if (enabled_)
      train::GradScaler::unscale_(optimizer);
  }
  void step(torch::optim::Optimizer &optimizer) {
    if (enabled_)
      train::GradScaler::step(optimizer);
    else
      optimizer.step();
  }
  void update() {
    if (enabled_)
      train::GradScaler::update();
  }
  void update(double new_scale) {
    train::GradScaler::update();
    auto state = state_dict();
    state["scale"] = new_scale;
    load_state_dict(state);
  }
  bool is_enabled() const { return enabled_; }

private:
  bool enabled_;
};
} // namespace amp
} // namespace torch
