// A project's RAII guard, defined in its own header (the only file that names the autocast API).
#pragma once
#include <torch/torch.h>

class MixedPrecision {
public:
  explicit MixedPrecision(bool on) : previous_(at::autocast::is_enabled()) {
    at::autocast::set_enabled(on);
  }
  ~MixedPrecision() { at::autocast::set_enabled(previous_); }

private:
  bool previous_;
};
