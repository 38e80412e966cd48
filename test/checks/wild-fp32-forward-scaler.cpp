// RUN: %check_amp %s %t.cpp --level=O3
// RUN: not grep -n 'auto_mixed[_]precision' %t.cpp
// WILD: a loss scaler with no autocast scope (issue #38 "Shape 2", seen in a GPT trainer): an fp32
// forward, micro-batch accumulation of `(loss / k)`, unscale_, clip, step, update. Rewritten with
// the forward as it is: O0, no model converted, even under --level=O3 (the second RUN line); the
// forward region is what the loss is computed from. Refused, with the reason, where that region
// is not in the backward's block, cannot be carried, or may run under autocast after all (a
// forward whose body is elsewhere, autocast inside the model).
#include <torch/torch.h>
#include "scaler.h"

struct GptImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &tokens) { return tokens * 2; }
};
TORCH_MODULE(Gpt);

torch::Tensor next_tokens(const torch::Tensor &corpus, int micro) { return corpus * micro; }

// The GPT trainer's shape: the model runs in fp32, the scaler only guards the fp32 grads.
void train_gpt(Gpt &model, torch::optim::SGD &optimizer, const torch::Tensor &corpus,
               const torch::Tensor &targets, int steps, int grad_accum) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < steps; ++step) {
    float step_loss = 0;
    for (int micro = 0; micro < grad_accum; ++micro) {
      auto tokens = next_tokens(corpus, micro);
      auto logits = model->forward(tokens);
      auto loss = torch::nll_loss(logits, targets);
      step_loss += loss.item<float>();
      scaler.scale(loss / grad_accum).backward();
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    }
    scaler.unscale_(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() ends a gradient accumulation: with explicit gradients it clears the summed grads list instead (grads.clear()) [amp-zero-grad]
  }
}

// One batch per step, zero_grad() first: the region starts after it, at the first statement the
// loss is computed from.
void train_plain(Gpt &model, torch::optim::SGD &optimizer, const torch::Tensor &batch,
                 const torch::Tensor &target, int steps) {
  torch::amp::GradScaler scaler;
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: zero_grad() is redundant: explicit gradients from amp::value_and_grad never accumulate in .grad [amp-zero-grad]
    std::printf("step %d\n", step);
    auto out = model(batch);
    auto loss = torch::nll_loss(out, target);
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(optimizer);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

// A log line reading the scale between the loss and the backward ends no step: it goes into the
// function with the loss.
void scale_logged(Gpt &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                  const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  auto loss = torch::nll_loss(model(x), y);
  std::printf("scale %f\n", scaler.get_scale());
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

struct EncoderImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x); // defined in another file
};
TORCH_MODULE(Encoder);

// The forward's body is not in this file: it may turn autocast on itself.
void forward_elsewhere(Encoder &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                       const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  auto loss = torch::nll_loss(model->forward(x), y);
  // CHECK-MESSAGES: :[[@LINE-1]]:31: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, so its forward would be handed to amp::value_and_grad in fp32 (O0); but `model->forward(x)` (line [[@LINE-1]]) runs 'EncoderImpl::forward', whose body is in no file of this run or of its compilation database: it may turn autocast on itself, so the forward's precision is not known; migrate this step by hand [amp-manual-migration]
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

struct HalfNetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x) {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    // CHECK-MESSAGES: :[[@LINE-2]]:5: warning: not migrated automatically: no training step (a backward of the loss computed here, then the optimizer's or the scaler's step) follows this autocast scope in this function; when they are in another function, move the step into one function or migrate by hand [amp-manual-migration]
    auto y = x * 2;
    at::autocast::set_enabled(false);
    return y;
  }
};
TORCH_MODULE(HalfNet);

// The model turns autocast on inside its own forward.
void autocast_in_model(HalfNet &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                       const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  auto loss = torch::nll_loss(model->forward(x), y);
  // CHECK-MESSAGES: :[[@LINE-1]]:31: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, yet its forward turns autocast on in 'HalfNetImpl::forward' (`at::autocast::set_enabled(true)` at {{.*}}.cpp:[[@LINE-15]], reached from `model->forward(x)` (line [[@LINE-1]])): autocast inside the model or a helper of the forward is not a shape the rewrite carries; migrate this step by hand [amp-manual-migration]
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// The loss arrives as a parameter: its forward is not in this function.
void loss_given(torch::amp::GradScaler &scaler, torch::optim::SGD &optimizer, torch::Tensor loss) {
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, and no statement before it in its block computes the loss `loss` (`loss` is a parameter of this function), so the forward pass to hand to amp::value_and_grad is unknown: compute the loss in the backward's block, or migrate this step by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// A statement of the region the function given to amp::value_and_grad cannot carry.
void declared_together(Gpt &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                       const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  auto out = model(x), detached = out.detach();
  // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: not migrated automatically: 'detached' is declared with other variables in one statement in the forward region and used after it; declare it on its own [amp-manual-migration]
  auto loss = torch::nll_loss(out, y);
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
  std::printf("%f\n", detached.mean().item<float>());
}

// The loss is computed before the zero_grad() that ends the previous step.
void loss_before_zero_grad(Gpt &model, torch::optim::SGD &optimizer, const torch::Tensor &x,
                           const torch::Tensor &y) {
  torch::amp::GradScaler scaler;
  auto loss = torch::nll_loss(model->forward(x), y);
  optimizer.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: no autocast scope precedes this scaled backward in this function, and the loss `loss` is computed before `optimizer.zero_grad()` (line [[@LINE-3]]), which ends the statements the forward region can hold, so the forward pass to hand to amp::value_and_grad is unknown: compute the loss in the backward's block, or migrate this step by hand [amp-manual-migration]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  scaler.step(optimizer);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}void train_gpt(Gpt &model, torch::optim::SGD &optimizer, const torch::Tensor &corpus,{{$}}
// CHECK-FIXES-NEXT: {{^}}               const torch::Tensor &targets, int steps, int grad_accum) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  std::vector<torch::Tensor> grads;{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int step = 0; step < steps; ++step) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    float step_loss = 0;{{$}}
// CHECK-FIXES-NEXT: {{^}}    for (int micro = 0; micro < grad_accum; ++micro) {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}        auto tokens = next_tokens(corpus, micro);{{$}}
// CHECK-FIXES-NEXT: {{^}}        auto logits = model->forward(tokens);{{$}}
// CHECK-FIXES-NEXT: {{^}}        auto loss = torch::nll_loss(logits, targets);{{$}}
// CHECK-FIXES-NEXT: {{^}}        step_loss += loss.item<float>();{{$}}
// CHECK-FIXES-NEXT: {{^}}        return scaler.scale(loss / grad_accum);{{$}}
// CHECK-FIXES-NEXT: {{^}}      }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto [scaled_loss, micro_grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}      amp::accumulate_grads(grads, micro_grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.unscale_(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::check_holds(optimizer, model->parameters());{{$}}
// CHECK-FIXES-NEXT: {{^}}    amp::clip_by_global_norm_(grads, 1.0);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}    grads.clear();{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}void train_plain(Gpt &model, torch::optim::SGD &optimizer, const torch::Tensor &batch,{{$}}
// CHECK-FIXES-NEXT: {{^}}                 const torch::Tensor &target, int steps) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  for (int step = 0; step < steps; ++step) {{{$}}
// CHECK-FIXES-NEXT: {{^}}    std::printf("step %d\n", step);{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto out = model(batch);{{$}}
// CHECK-FIXES-NEXT: {{^}}      auto loss = torch::nll_loss(out, target);{{$}}
// CHECK-FIXES-NEXT: {{^}}      return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}    }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.step(optimizer, grads);{{$}}
// CHECK-FIXES-NEXT: {{^}}    scaler.update();{{$}}
// CHECK-FIXES-NEXT: {{^}}  }{{$}}
// CHECK-FIXES-NEXT: {{^}}}{{$}}
// CHECK-FIXES: {{^}}void scale_logged(Gpt &model, torch::optim::SGD &optimizer, const torch::Tensor &x,{{$}}
// CHECK-FIXES-NEXT: {{^}}                  const torch::Tensor &y) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  amp::GradScaler scaler;{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto loss = torch::nll_loss(model(x), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}    std::printf("scale %f\n", scaler.get_scale());{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(optimizer));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(optimizer, grads);{{$}}
