// RUN: %check_amp %s %t.cpp
// WILD: the loss is a tensor field of a local struct (`auto losses = compute_losses(...);
// losses.total.backward();`), as trainers that log several loss terms write it (issue #38 item 4;
// from a task-model trainer: bf16 autocast, accumulation, the step every k-th micro-batch). It
// was 'no optimizer or scaler step() follows'. The struct's variable is the loss: found, and
// rewritten like a local loss.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

struct Losses {
  torch::Tensor total;
  torch::Tensor aux;
};

void accumulate(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                const torch::Tensor &target, int steps, int accumulation) {
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() ends a gradient accumulation: with explicit gradients it clears the summed grads list instead (grads.clear()) [amp-zero-grad]
  for (int step = 0; step < steps; ++step) {
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_autocast_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    auto out = model->forward(data);
    Losses losses{torch::nll_loss(out, target), torch::mse_loss(out, target)};
    at::autocast::set_autocast_enabled(at::kCUDA, false);
    (losses.total / accumulation).backward();
    if ((step + 1) % accumulation == 0) {
      optimizer.step();
      optimizer.zero_grad();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: zero_grad() ends a gradient accumulation: with explicit gradients it clears the summed grads list instead (grads.clear()) [amp-zero-grad]
    }
  }
}
// CHECK-FIXES: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, at::kBFloat16, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads;{{$}}
// CHECK-FIXES: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto out = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES-NEXT: {{^}}      Losses losses{torch::nll_loss(out, target), torch::mse_loss(out, target)};{{$}}
// CHECK-FIXES-NEXT: {{^}}      return (losses.total / accumulation);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}

void plain_field(Net &model, torch::optim::SGD &optimizer, const torch::Tensor &data,
                 const torch::Tensor &target) {
  for (int step = 0; step < 10; ++step) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_autocast_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    Losses losses{torch::nll_loss(model->forward(data), target), torch::Tensor()};
    at::autocast::set_autocast_enabled(at::kCUDA, false);
    losses.total.backward();
    optimizer.step();
  }
}
// CHECK-FIXES: {{^}}      return losses.total;{{$}}
