// RUN: %check_amp %s %t.cpp
// The declarations of a forward region that the code after the step still names (issue #12 item 5,
// #13 item 11): a std::tuple structured binding becomes std::tie into names declared before the
// lambda; static and constexpr locals and default-constructed variables move out as written (a
// static is still initialised once); `const` values and `T x(args)` are assigned in the lambda;
// comments in a removed type survive; a trailing comment on the backward line stays. A lambda, a
// struct binding, a static initialised by the forward pass and a local type alias used after the
// region block the step, each with the reason.
#include <torch/torch.h>
#include "scaler.h"

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor &x, const torch::Tensor &y);
};
TORCH_MODULE(Net);

struct Pair2 { torch::Tensor a, b; };
Pair2 split2(const torch::Tensor &x);
void log_value(float);

float tuple_binding(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                    const torch::Tensor &data, const torch::Tensor &target) {
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto [logits, loss] = model->forward(data, target);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward(); // scaled backward
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  return loss.item<float>() + logits.item<float>();
}

float kept_meanings(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                    const torch::Tensor &data, const torch::Tensor &target) {
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  static int calls = 0;
  constexpr double kWeight = 0.5;
  torch::Tensor extra;
  const auto output = model->forward(data);
  torch::Tensor /* keep */ loss = torch::nll_loss(output, target) * kWeight;
  int64_t batch(data.size(0));
  extra = output;
  ++calls;
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  log_value(extra.item<float>());
  return loss.item<float>() * batch + calls + output.item<float>() * kWeight;
}

float lambda_after(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                   const torch::Tensor &data, const torch::Tensor &target) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto out = model->forward(data);
  auto report = [&] { return out.item<float>(); };
  // CHECK-MESSAGES: :[[@LINE-1]]:8: warning: not migrated automatically: 'report' is declared in the forward region and used after it, and it holds a lambda, whose type has no name [amp-manual-migration]
  auto loss = torch::nll_loss(out, target);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  return report();
}

float struct_binding(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                     const torch::Tensor &data, const torch::Tensor &target) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto [a, b] = split2(model->forward(data));
  // CHECK-MESSAGES: :[[@LINE-1]]:8: warning: not migrated automatically: the structured binding [a, b] is declared in the forward region and used after it, and it decomposes Pair2, not a std::tuple or std::pair; declare its names before the scope and assign them with std::tie by hand [amp-manual-migration]
  auto loss = torch::nll_loss(a, target);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  return b.item<float>();
}

float static_from_forward(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                          const torch::Tensor &data, const torch::Tensor &target) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  auto out = model->forward(data);
  static float first = out.item<float>();
  // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: not migrated automatically: 'first' is a static or thread_local variable initialised in the forward region and used after it; moving it out of the function given to amp::value_and_grad would change when its initialiser runs [amp-manual-migration]
  auto loss = torch::nll_loss(out, target);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  return first;
}

float alias_after(Net &model, torch::optim::SGD &optimizer, torch::amp::GradScaler &scaler,
                  const torch::Tensor &data, const torch::Tensor &target) {
  at::autocast::set_enabled(true);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
  using Out = torch::Tensor;
  // CHECK-MESSAGES: :[[@LINE-1]]:9: warning: not migrated automatically: the type 'Out' is declared in the forward region and used after it; move its declaration before the scope [amp-manual-migration]
  Out out = model->forward(data);
  auto loss = torch::nll_loss(out, target);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  Out copy = loss;
  return copy.item<float>();
}
// CHECK-FIXES: {{^}}float tuple_binding(Net &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                    const torch::Tensor &data, const torch::Tensor &target) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor logits;{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    std::tie(logits, loss) = amp::cast_to_adapter_tensor(amp_model->forward(data, target));{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn(); // scaled backward{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  return loss.item<float>() + logits.item<float>();{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}float kept_meanings(Net &model, torch::optim::SGD &optimizer, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                    const torch::Tensor &data, const torch::Tensor &target) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  static int calls = 0;{{$}}
// CHECK-FIXES-NEXT: {{^}}  constexpr double kWeight = 0.5;{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor extra;{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor output;{{$}}
// CHECK-FIXES-NEXT: {{^}}  torch::Tensor loss;{{$}}
// CHECK-FIXES-NEXT: {{^}}  int64_t batch;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    output = amp::cast_to_adapter_tensor(amp_model->forward(data));{{$}}
// CHECK-FIXES-NEXT: {{^}}    /* keep */ loss = torch::nll_loss(output, target) * kWeight;{{$}}
// CHECK-FIXES-NEXT: {{^}}    batch = int64_t(data.size(0));{{$}}
// CHECK-FIXES-NEXT: {{^}}    extra = output;{{$}}
// CHECK-FIXES-NEXT: {{^}}    ++calls;{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  log_value(extra.item<float>());{{$}}
// CHECK-FIXES-NEXT: {{^}}  return loss.item<float>() * batch + calls + output.item<float>() * kWeight;{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
