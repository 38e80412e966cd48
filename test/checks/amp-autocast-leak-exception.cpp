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
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast enabled here stays on when an exception leaves the function before the disable [amp-autocast-leak]
  // CHECK-MESSAGES: :[[@LINE+7]]:5: note: autocast is still enabled when this throws
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-4]]:3: warning: not migrated automatically: no training step (a backward of the loss computed here, then the optimizer's or the scaler's step) follows this autocast scope in this function; when they are in another function, move the step into one function or migrate by hand [amp-manual-migration]
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
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast enabled here stays on past an early return that skips the disable [amp-autocast-leak]
  // CHECK-MESSAGES: :[[@LINE+7]]:5: note: autocast is still enabled when this returns
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-4]]:3: warning: not migrated automatically: no training step (a backward of the loss computed here, then the optimizer's or the scaler's step) follows this autocast scope in this function; when they are in another function, move the step into one function or migrate by hand [amp-manual-migration]
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
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast enabled here stays on when an exception leaves the function before the disable [amp-autocast-leak]
  // CHECK-MESSAGES: :[[@LINE+7]]:5: note: autocast is still enabled when this throws
  // CHECK-MESSAGES: :[[@LINE-3]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-4]]:3: warning: not migrated automatically: no training step (a backward of the loss computed here, then the optimizer's or the scaler's step) follows this autocast scope in this function; when they are in another function, move the step into one function or migrate by hand [amp-manual-migration]
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
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: no training step (a backward of the loss computed here, then the optimizer's or the scaler's step) follows this autocast scope in this function; when they are in another function, move the step into one function or migrate by hand [amp-manual-migration]
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
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: not migrated automatically: no training step (a backward of the loss computed here, then the optimizer's or the scaler's step) follows this autocast scope in this function; when they are in another function, move the step into one function or migrate by hand [amp-manual-migration]
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
