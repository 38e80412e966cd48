// RUN: %check_amp %s %t.cpp
// amp-autocast-scope, the note at the end of a call-pair scope: without clear_cache() in the
// function, libtorch's cast cache keeps the weights' casts from one step to the next (the
// original trains on stale casts; the migrated model casts afresh), and the note says so. With
// clear_cache(), or with the cache switched by set_autocast_cache_enabled, the note says only where
// the scope ends.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void no_clear_cache(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data) {
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = model->forward(data).sum();
  at::autocast::set_cpu_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here, without at::autocast::clear_cache(): libtorch keeps the casts made of the weights in this scope, and later scopes reuse them after the optimizer has changed the weights; the migrated model casts afresh in each forward, so its losses can differ slightly from this program's (they equal those of this program with clear_cache() after the scope){{$}}
  loss.backward();
  optimizer.step();
}

void with_clear_cache(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data) {
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = model->forward(data).sum();
  at::autocast::set_cpu_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here{{$}}
  at::autocast::clear_cache();
  loss.backward();
  optimizer.step();
}

void cache_switched_off(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data) {
  at::autocast::set_autocast_cache_enabled(false);
  at::autocast::set_cpu_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_cpu_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto loss = model->forward(data).sum();
  at::autocast::set_cpu_enabled(false);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the scope ends here{{$}}
  loss.backward();
  optimizer.step();
}
