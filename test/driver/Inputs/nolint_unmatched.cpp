#include <torch/torch.h>
void start_up() {
  // NOLINTBEGIN(amp-autocast-leak)
  at::autocast::set_enabled(true);
}
