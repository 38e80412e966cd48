// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include -I %amp_torch_include -I %amp_runtime_include
// WILD (issue #38 item 7, docs/real-projects.md shape 3), over real libtorch 1.13 headers:
// autocast on for the whole function, turned off only around the loss tail and backward and on
// again inside the loop. One function-long scope with a hole: every iteration's forward runs
// under autocast. Reported with that reason (not "closes inside the loop", not "no training step
// follows"), and nothing changes.
#include <ATen/autocast_mode.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

void train(torch::nn::Linear &m, torch::optim::AdamW &opt, const torch::Tensor &x, int cycles) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+6]]:7: note: a hole in this scope: autocast is turned off here, inside the loop, and on again at line 25
  // CHECK-MESSAGES: :[[@LINE+16]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: warning: not migrated automatically: autocast is on from line 14 to line 33 with a hole from line 22 to line 25 (turned off and on again inside the loop): each iteration's forward runs under autocast and the backward() at line 24 runs without it; a scope with a hole is not a shape the rewrite carries: migrate this step by hand [amp-manual-migration]
  for (int c = 0; c < cycles; ++c) {
    for (int b = 0; b < 4; ++b) {
      auto y = m->forward(x);
      at::autocast::set_enabled(false);
      auto loss = y.to(torch::kFloat32).pow(2).mean();
      loss.backward();
      at::autocast::set_enabled(true);
    }
    torch::nn::utils::clip_grad_norm_(m->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad in a step whose loss was computed under autocast{{.*}} [amp-clip-grad-norm]
    opt.step();
    m->zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() ends a gradient accumulation; keep it while this step is migrated by hand{{.*}} [amp-zero-grad]
  }
  at::autocast::set_enabled(false);
}
// CHECK-FIXES: {{^}}  at::autocast::set_enabled(true);{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int c = 0; c < cycles; ++c) {{{$}}
// CHECK-FIXES: {{^}}      at::autocast::set_enabled(false);{{$}}
// CHECK-FIXES: {{^}}      at::autocast::set_enabled(true);{{$}}

// The same hole where the optimizer steps in another function (DooT2's re-enable far from the
// step): the scope's reason is the hole, not "no backward() is visible" nor "no training step".
void accumulate(torch::nn::Linear &m, const torch::Tensor &x, int micro) {
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'{{.*}} [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE+5]]:5: note: a hole in this scope: autocast is turned off here, inside the loop, and on again at line 53
  // CHECK-MESSAGES: :[[@LINE+9]]:3: note: the scope ends here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: warning: not migrated automatically: autocast is on from line 43 to line 55 with a hole from line 50 to line 53 (turned off and on again inside the loop): each iteration's forward runs under autocast and the backward() at line 52 runs without it; a scope with a hole is not a shape the rewrite carries: migrate this step by hand [amp-manual-migration]
  for (int i = 0; i < micro; ++i) {
    auto y = m->forward(x);
    at::autocast::set_cpu_enabled(false);
    auto loss = y.to(torch::kFloat32).pow(2).mean();
    loss.backward();
    at::autocast::set_cpu_enabled(true);
  }
  at::autocast::set_cpu_enabled(false);
}
