// A loss scaler built from an options object, as some libtorch projects write theirs
// (`GradScaler scaler(GradScalerOptions{}.init_scale(1024.0))`): the options class has one setter
// per option, returning the object, and the defaults of torch.amp.GradScaler.
#pragma once

#include <cmath>

#include "loss_scaler.h"

namespace train {

struct ScalerOptions {
  ScalerOptions() = default;
  ScalerOptions &init_scale(double v) { init_scale_ = v; return *this; }
  ScalerOptions &growth_factor(double v) { growth_factor_ = v; return *this; }
  ScalerOptions &backoff_factor(double v) { backoff_factor_ = v; return *this; }
  ScalerOptions &growth_interval(int v) { growth_interval_ = v; return *this; }
  double init_scale_ = std::pow(2.0, 16);
  double growth_factor_ = 2.0;
  double backoff_factor_ = 0.5;
  int growth_interval_ = 2000;
};

class OptionsGradScaler : public GradScaler {
public:
  explicit OptionsGradScaler(const ScalerOptions &options = {})
      : GradScaler(options.init_scale_, options.growth_factor_, options.backoff_factor_,
                   options.growth_interval_) {}
};

} // namespace train
