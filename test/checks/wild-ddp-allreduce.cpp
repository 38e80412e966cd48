// RUN: %check_amp %s %t.cpp
// WILD: data-parallel libtorch training (no DDP in C++): after the scaled backward a loop
// all-reduces every p.grad() over the caller's c10d process group and averages it. The loop is
// rewritten onto the explicit grads (amp::all_reduce_grads, one bucketed collective); shapes that
// do not map exactly are reported with the statement named.
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

void train(Net &model, torch::optim::SGD &optimizer, c10::intrusive_ptr<c10d::ProcessGroup> pg,
           const torch::Tensor &data, const torch::Tensor &target) {
  const int world = pg->getSize();
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    loss = torch::nll_loss(model->forward(data), target);
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  for (auto &p : model->parameters()) {
    std::vector<torch::Tensor> bufs{p.grad()};
    pg->allreduce(bufs)->wait();
    p.grad().div_(world);
  }
  scaler.unscale_(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: unscale_() without explicit grads{{.*}} [amp-scaler-unscale]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::all_reduce_grads(grads, pg);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.unscale_(optimizer, grads);{{$}}

// A sum without the average, the buffer built in the call.
void sum_only(Net &model, torch::optim::SGD &optimizer, c10::intrusive_ptr<c10d::ProcessGroup> pg,
              const torch::Tensor &data) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  for (auto &p : model->parameters()) {
    std::vector<torch::Tensor> bufs{p.grad()};
    pg->allreduce(bufs)->wait();
  }
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  amp::all_reduce_grads(grads, pg, /*average=*/false);{{$}}

// Divided by something other than the group's size: not the same computation; reported.
void other_divisor(Net &model, torch::optim::SGD &optimizer, c10::intrusive_ptr<c10d::ProcessGroup> pg,
                   const torch::Tensor &data) {
  torch::amp::GradScaler scaler;
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled{{.*}} [amp-autocast-scope]
    loss = model->forward(data).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss{{.*}} [amp-scaler-implicit-grad]
  for (auto &p : model->parameters()) {
    std::vector<torch::Tensor> bufs{p.grad()};
    // CHECK-MESSAGES: :[[@LINE-1]]:37: warning: not migrated automatically: `for (auto &p : model->parameters()) { ...` reads or writes .grad between the scaled backward and step(){{.*}} [amp-manual-migration]
    pg->allreduce(bufs)->wait();
    p.grad().div_(8);
  }
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
