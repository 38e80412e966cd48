// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include
// amp-autocast-leak on exception paths, over real libtorch headers: a `catch` that rethrows or
// returns before the disable leaves autocast on for that path, as an early return does; a
// `catch` that disables first does not.
#include <ATen/autocast_mode.h>
#include <torch/nn/module.h>
#include <stdexcept>

struct Net : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};

torch::Tensor rethrows(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: autocast enabled here stays on when an exception leaves the function before the disable [amp-autocast-leak]
  // CHECK-MESSAGES: :[[@LINE+6]]:5: note: autocast is still enabled when this throws
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  torch::Tensor y;
  try {
    y = model.forward(x);
  } catch (const std::exception &) {
    throw;
  }
  at::autocast::set_enabled(false);
  return y;
}

torch::Tensor returns_from_catch(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: autocast enabled here stays on past an early return that skips the disable [amp-autocast-leak]
  // CHECK-MESSAGES: :[[@LINE+6]]:5: note: autocast is still enabled when this returns
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  torch::Tensor y;
  try {
    y = model.forward(x);
  } catch (const c10::Error &) {
    return torch::Tensor();
  }
  at::autocast::set_enabled(false);
  return y;
}

torch::Tensor throws_a_new_error(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: autocast enabled here stays on when an exception leaves the function before the disable [amp-autocast-leak]
  // CHECK-MESSAGES: :[[@LINE+6]]:5: note: autocast is still enabled when this throws
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  torch::Tensor y;
  try {
    y = model.forward(x);
  } catch (const c10::Error &e) {
    throw std::runtime_error(e.what());
  }
  at::autocast::set_enabled(false);
  return y;
}

torch::Tensor disables_before_rethrow(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  torch::Tensor y;
  try {
    y = model.forward(x);
  } catch (...) {
    at::autocast::set_enabled(false);
    throw;
  }
  at::autocast::set_enabled(false);
  return y;
}

torch::Tensor handled_in_the_try(Net &model, const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope opened with 'at::autocast::set_enabled' in inference code: no backward() runs in this function, in any function of this file that calls it, or on what it returns, so there is no training step to migrate; keep the scope for inference, or convert the model once with amp::auto_mixed_precision where it is created [amp-autocast-inference]
  // No backward() reaches this scope: inference, not a step to migrate by hand.
  torch::Tensor y;
  try {
    if (!x.defined())
      throw std::invalid_argument("no input");
    y = model.forward(x);
  } catch (const std::invalid_argument &) {
    y = x;
  }
  at::autocast::set_enabled(false);
  return y;
}
