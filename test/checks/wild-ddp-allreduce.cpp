// RUN: %check_amp %s %t.cpp
// WILD: data-parallel libtorch training (no DDP in C++): after the scaled backward a loop
// all-reduces every p.grad() over the caller's c10d process group and averages it. The loop is
// rewritten onto the explicit grads (amp::all_reduce_grads, one bucketed collective); a loop that
// does not average by the group's size, or follows a gradient accumulation, stays a per-gradient
// loop, over the explicit grads.
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

// Divided by something other than the group's size: not amp::all_reduce_grads' averaging, but each
// iteration still works on one gradient alone, so the loop carries over to the explicit grads.
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
    pg->allreduce(bufs)->wait();
    p.grad().div_(8);
  }
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads{{.*}} [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}  for (auto &p_grad : grads) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    std::vector<torch::Tensor> bufs{p_grad};{{$}}
// CHECK-FIXES-NEXT: {{^}}    pg->allreduce(bufs)->wait();{{$}}
// CHECK-FIXES-NEXT: {{^}}    p_grad.div_(8);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}

// After a gradient accumulation the summed grads are not bucketed by amp::all_reduce_grads here
// (not rewritten that way yet), but the all-reduce loop touches each gradient alone, so it stays a
// loop, over the summed explicit grads.
void accumulated(Net &model, torch::optim::SGD &optimizer, c10::intrusive_ptr<c10d::ProcessGroup> pg,
                 const torch::Tensor &data, int micro) {
  torch::amp::GradScaler scaler;
  for (int m = 0; m < micro; ++m) {
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = model->forward(data).sum();
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  }
  for (auto &p : model->parameters()) {
    std::vector<torch::Tensor> bufs{p.grad()};
    pg->allreduce(bufs)->wait();
    p.grad().div_(pg->getSize());
  }
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() ends a gradient accumulation: with explicit gradients it clears the summed grads list instead (grads.clear()) [amp-zero-grad]
}
// CHECK-FIXES: {{^}}void accumulated(Net &model, torch::optim::SGD &optimizer, c10::intrusive_ptr<c10d::ProcessGroup> pg,{{$}}
// CHECK-FIXES-NEXT: {{^}}                 const torch::Tensor &data, int micro) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads;{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int m = 0; m < micro; ++m) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      loss = amp::cast_to_adapter_tensor(amp_model->forward(data)).sum();{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, micro_grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::accumulate_grads(grads, micro_grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (auto &p_grad : grads) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    std::vector<torch::Tensor> bufs{p_grad};{{$}}
// CHECK-FIXES-NEXT: {{^}}    pg->allreduce(bufs)->wait();{{$}}
// CHECK-FIXES-NEXT: {{^}}    p_grad.div_(pg->getSize());{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  grads.clear();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
