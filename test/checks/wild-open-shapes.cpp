// REQUIRES: libtorch
// RUN: %check_amp_real %s %t.cpp -- -isystem %torch_include -I %amp_torch_include -I %amp_runtime_include
// WILD (issue 38, item 8): the open shapes, over real libtorch headers. Rewritten: a thin wrapper
// class whose method forwards its argument to autocast, called with constants
// (`mp.set_enabled(true)` ... `(false)`; e2e setter_wrapper), and a scope that calls submodules
// (`model->encoder->forward(x)`: each submodule converted; e2e submodule_forward). Reported with
// their true reason: a guard held in a std::optional or std::unique_ptr (opened and ended by
// calls on the holder), two optimizers each clipped through a model's parameters() (which
// optimizer holds which model is not seen), and a remainder flush after an accumulation loop.
// The messages are checked at the end of the file, by line.
#include <ATen/autocast_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/module.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <optional>
#include <memory>
#include <vector>

namespace train {
class GradScaler {
public:
  torch::Tensor scale(const torch::Tensor &loss) const;
  void unscale_(torch::optim::Optimizer &optimizer);
  void step(torch::optim::Optimizer &optimizer);
  void update();
};
}

class AutocastGuard {
public:
  AutocastGuard() : prev_(at::autocast::is_enabled()) { at::autocast::set_enabled(true); }
  ~AutocastGuard() { at::autocast::clear_cache(); at::autocast::set_enabled(prev_); }
private:
  bool prev_;
};

void optional_guard(torch::nn::Linear &model, torch::optim::Adam &opt, train::GradScaler &scaler,
                    const torch::Tensor &x, const torch::Tensor &y, bool use_amp) {
  std::optional<AutocastGuard> g;
  if (use_amp)
    g.emplace();
  auto loss = torch::mse_loss(model(x), y);
  g.reset();
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}

void unique_guard(torch::nn::Linear &model, torch::optim::Adam &opt, train::GradScaler &scaler,
                    const torch::Tensor &x, const torch::Tensor &y) {
  auto g = std::make_unique<AutocastGuard>();
  auto loss = torch::mse_loss(model(x), y);
  g.reset();
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}

struct MixedPrecision {
  void set_enabled(bool e) { at::autocast::set_enabled(e); }
};

void wrapper(torch::nn::Linear &model, torch::optim::Adam &opt, train::GradScaler &scaler,
             MixedPrecision &mp, const torch::Tensor &x, const torch::Tensor &y) {
  mp.set_enabled(true);
  auto loss = torch::mse_loss(model(x), y);
  mp.set_enabled(false);
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}

struct PPO {
  torch::nn::Linear actor_{nullptr}, critic_{nullptr};
  std::unique_ptr<torch::optim::Adam> actor_opt_, critic_opt_;
  train::GradScaler scaler_;
  void update(const torch::Tensor &x, const torch::Tensor &ret) {
    torch::Tensor loss;
    at::autocast::set_enabled(true);
    auto a = actor_->forward(x);
    auto v = critic_->forward(x);
    loss = (a - ret).pow(2).mean() + (v - ret).pow(2).mean();
    at::autocast::set_enabled(false);
    scaler_.scale(loss).backward();
    scaler_.unscale_(*actor_opt_);
    scaler_.unscale_(*critic_opt_);
    torch::nn::utils::clip_grad_norm_(actor_->parameters(), 0.5);
    torch::nn::utils::clip_grad_norm_(critic_->parameters(), 0.5);
    scaler_.step(*actor_opt_);
    scaler_.step(*critic_opt_);
    scaler_.update();
  }
};

struct AutoEncoderImpl : torch::nn::Module {
  AutoEncoderImpl() : encoder(register_module("encoder", torch::nn::Linear(4, 2))),
                      decoder(register_module("decoder", torch::nn::Linear(2, 4))) {}
  torch::nn::Linear encoder, decoder;
  torch::Tensor forward(const torch::Tensor &x) { return decoder(encoder(x)); }
};
TORCH_MODULE(AutoEncoder);

void submodules(AutoEncoder &model, torch::optim::Adam &opt, train::GradScaler &scaler,
                const torch::Tensor &x) {
  at::autocast::set_enabled(true);
  auto z = model->encoder->forward(x);
  auto out = model->decoder->forward(z);
  auto loss = torch::mse_loss(out, x);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}

void remainder(torch::nn::Linear &model, torch::optim::Adam &opt, train::GradScaler &scaler,
               const std::vector<torch::Tensor> &xs, const torch::Tensor &y, int k) {
  int i = 0;
  for (const auto &x : xs) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(model(x), y) / k;
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    if (++i % k == 0) {
      scaler.step(opt);
      scaler.update();
      opt.zero_grad();
    }
  }
  if (i % k != 0) {
    scaler.step(opt);
    scaler.update();
    opt.zero_grad();
  }
}

// The messages, by line (the lines above are the code's).
// CHECK-MESSAGES: :41:32: warning: not migrated automatically: the autocast scope is guard 'AutocastGuard' held in the std::optional 'g', opened and ended by calls on the holder (emplace, make_unique, reset) rather than by a block; a held guard is not rewritten yet: declare the guard in a block around the forward, or migrate this step by hand [amp-manual-migration]
// CHECK-MESSAGES: :46:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
// CHECK-MESSAGES: :47:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
// CHECK-MESSAGES: :53:8: warning: not migrated automatically: the autocast scope is guard 'AutocastGuard' held in the std::unique_ptr 'g', opened and ended by calls on the holder (emplace, make_unique, reset) rather than by a block; a held guard is not rewritten yet: declare the guard in a block around the forward, or migrate this step by hand [amp-manual-migration]
// CHECK-MESSAGES: :56:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
// CHECK-MESSAGES: :57:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
// CHECK-MESSAGES: :67:3: warning: autocast scope enabled with 'MixedPrecision::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
// CHECK-MESSAGES: :69:3: note: the scope ends here{{.*}}
// CHECK-MESSAGES: :70:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
// CHECK-MESSAGES: :71:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
// CHECK-MESSAGES: :81:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
// CHECK-MESSAGES: :85:5: note: the scope ends here{{.*}}
// CHECK-MESSAGES: :86:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
// CHECK-MESSAGES: :87:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
// CHECK-MESSAGES: :88:5: warning: unscale_() without explicit grads; with explicit gradients it takes them: unscale_(optimizer, grads) [amp-scaler-unscale]
// CHECK-MESSAGES: :89:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
// CHECK-MESSAGES: :89:39: warning: not migrated automatically: with several optimizers, clipping a model's parameters: which optimizer's grads to clip is unknown; clip optimizer.parameters() or migrate by hand [amp-manual-migration]
// CHECK-MESSAGES: :90:5: warning: clipping the parameters' .grad inside a scaled step; clip the explicit grads instead: amp::clip_by_global_norm_(grads, max_norm) [amp-clip-grad-norm]
// CHECK-MESSAGES: :90:39: warning: not migrated automatically: with several optimizers, clipping a model's parameters: which optimizer's grads to clip is unknown; clip optimizer.parameters() or migrate by hand [amp-manual-migration]
// CHECK-MESSAGES: :91:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
// CHECK-MESSAGES: :92:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
// CHECK-MESSAGES: :107:3: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
// CHECK-MESSAGES: :111:3: note: the scope ends here{{.*}}
// CHECK-MESSAGES: :112:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
// CHECK-MESSAGES: :113:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
// CHECK-MESSAGES: :121:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
// CHECK-MESSAGES: :123:5: note: the scope ends here{{.*}}
// CHECK-MESSAGES: :124:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
// CHECK-MESSAGES: :126:7: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
// CHECK-MESSAGES: :128:7: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
// CHECK-MESSAGES: :132:5: warning: not migrated automatically: this step() after the accumulation loop (line 120) flushes the last partial accumulation, which the loop's step() (line 126) did not take; a remainder flush is not rewritten yet: migrate this step by hand [amp-manual-migration]
// CHECK-MESSAGES: :132:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
// CHECK-MESSAGES: :134:5: warning: zero_grad() clears the .grad that this step's backward fills; keep it while the step is migrated by hand (see amp-manual-migration): with explicit gradients from amp::value_and_grad it is redundant [amp-zero-grad]
// CHECK-FIXES: {{^}}#include <amp/torch.h>{{$}}
// CHECK-FIXES: {{^}}void wrapper(torch::nn::Linear &model, torch::optim::Adam &opt, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}             MixedPrecision &mp, const torch::Tensor &x, const torch::Tensor &y) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto loss = torch::mse_loss(amp::cast_to_adapter_tensor(amp_model(x)), y);{{$}}
// CHECK-FIXES-NEXT: {{^}}    return scaler.scale(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  }, amp::parameters_of(opt));{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(opt, grads);{{$}}
// CHECK-FIXES: {{^}}void submodules(AutoEncoder &model, torch::optim::Adam &opt, amp::GradScaler &scaler,{{$}}
// CHECK-FIXES-NEXT: {{^}}                const torch::Tensor &x) {{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_encoder = amp::auto_mixed_precision(model->encoder, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto amp_decoder = amp::auto_mixed_precision(model->decoder, amp::Level::O2, torch::kCUDA);{{$}}
// CHECK-FIXES-NEXT: {{^}}  auto grad_fn = amp::value_and_grad([&] {{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto z = amp::cast_to_adapter_tensor(amp_encoder->forward(x));{{$}}
// CHECK-FIXES-NEXT: {{^}}    auto out = amp::cast_to_adapter_tensor(amp_decoder->forward(z));{{$}}
// CHECK-FIXES: {{^}}  scaler.step(opt, grads);{{$}}
// CHECK-FIXES: {{^}}void remainder(
// CHECK-FIXES: {{^}}    at::autocast::set_enabled(true);{{$}}
