// RUN: %check_amp %s %t.cpp --rules=%S/Inputs/grad-free-rules.yaml
// WILD (issue #37): a step is rewritten only when every call between its backward and its step()
// is understood. A library call that does not act on .grad is; a project function is when every
// body it reaches is known (here, or in the run's summaries) and none of them touches .grad,
// runs a backward or calls through a function pointer; a function the rules name grad-free is
// known by its name. Everything else makes the step manual, naming the statement: a function
// whose body is in no file of the run, a helper that runs another loss's backward, one that steps
// another optimizer, another optimizer's zero_grad() (library code on .grad), one that calls a
// callback, a virtual hook whose override in this file reads .grad, a variable whose class's
// destructor reads .grad, a library method that changes the model, a throw; and before the
// backward, a helper that reads the last step's .grad.
#include <torch/torch.h>
#include "scaler.h"
#include <stdexcept>

struct NetImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor &x);
};
TORCH_MODULE(Net);

namespace metrics {
void record(const char *name, float v); // a library of the project's, named grad-free
}
void audit_value(float v);             // named grad-free too
void report(float v);                  // no body anywhere, not named: not understood

void print_loss(const torch::Tensor &loss) { metrics::record("loss", loss.item<float>()); }
void aux_backward(const torch::Tensor &aux) { aux.backward(); }
void step_other(torch::optim::SGD &o) { o.step(); }
void notify(void (*cb)()) { cb(); }
void on_step();

double last_norm;
void log_grad_norm(Net &m) {
  for (auto &p : m->parameters())
    last_norm = p.grad().sum().item<double>();
}

// A timer of the project's: its constructor and destructor are judged like calls.
struct GradTimer {
  explicit GradTimer(torch::Tensor *t) : t(t) {}
  ~GradTimer() { t->grad(); }
  torch::Tensor *t;
};
struct Counter {
  int n = 0; // defaulted constructor and destructor: nothing of their own
};

// A trainer's hooks: a virtual call runs any override; those of this translation unit are judged.
struct Hooks {
  virtual ~Hooks() = default;
  virtual void after_backward(float loss) { (void)loss; }
};
struct GradWatch : Hooks {
  torch::Tensor *watched = nullptr;
  void after_backward(float loss) override { (void)loss; watched->grad(); }
};

void understood(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  print_loss(loss);
  audit_value(loss.item<float>());
  model->train();
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void unknown_function(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  report(loss.item<float>());
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `report(loss.item<float>())` runs 'report' between the scaled backward and step(), and its body is in no file of this run or of its compilation database: it may read or write .grad, which the explicit grads of amp::value_and_grad never reach; add the file that defines it to the compilation database (its summary decides), name it under grad-free in the rules if it never touches .grad, or migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void another_backward(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss, aux;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    aux = model->forward(x).sum();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  aux_backward(aux);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `aux_backward(aux)` runs 'aux_backward', which runs a backward() ({{.*}}.cpp:{{[0-9]+}}), between the scaled backward and step(): its gradients add to .grad, which the explicit grads of amp::value_and_grad never reach, so the rewrite would drop them: migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void other_optimizer(Net &model, torch::optim::SGD &opt, torch::optim::SGD &other, torch::amp::GradScaler &scaler,
                     const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  step_other(other);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `step_other(other)` runs 'step_other', which reads or writes .grad ({{.*}}.cpp:{{[0-9]+}}), between the scaled backward and step(); the explicit grads of amp::value_and_grad never reach .grad, so after the rewrite it would act on nothing: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void other_zero_grad(Net &model, torch::optim::SGD &opt, torch::optim::SGD &other, torch::amp::GradScaler &scaler,
                     const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  other.zero_grad();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `other.zero_grad()` reads or writes .grad between the scaled backward and step(); the explicit grads of amp::value_and_grad never reach .grad, so after the rewrite it would act on nothing: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void callback(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  notify(on_step);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `notify(on_step)` runs 'notify', which calls through a function pointer or a std::function ({{.*}}.cpp:{{[0-9]+}}), between the scaled backward and step(): what that runs is not known, and it may read or write .grad, which the explicit grads of amp::value_and_grad never reach: migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void moves_model(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  model->to(torch::kCPU);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `model->to(torch::kCPU)` changes the step's model or optimizer ('to') between the scaled backward and step(): the original's step() then works on what it leaves (its parameters and their .grad), the rewrite's step() on the explicit grads taken before it: migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void virtual_hook(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, Hooks &hooks,
                  const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  hooks.after_backward(loss.item<float>());
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: not migrated automatically: `hooks.after_backward(loss.item<float>())` runs 'GradWatch::after_backward', which reads or writes .grad ({{.*}}.cpp:{{[0-9]+}}), between the scaled backward and step(); the explicit grads of amp::value_and_grad never reach .grad, so after the rewrite it would act on nothing: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
  hooks.Hooks::after_backward(loss.item<float>()); // no dispatch: the base's own, understood
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

void objects_made(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, torch::Tensor &w,
                  const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  Counter c;
  GradTimer timer(&w);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: not migrated automatically: `GradTimer timer(&w);` runs 'GradTimer::~GradTimer', which reads or writes .grad ({{.*}}.cpp:{{[0-9]+}}), between the scaled backward and step(); the explicit grads of amp::value_and_grad never reach .grad, so after the rewrite it would act on nothing: rewrite it onto the grads or migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// Before the backward, a helper reading .grad finds the last iteration's gradients in the original.
void reads_before(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  for (int i = 0; i < 3; ++i) {
    log_grad_norm(model);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `log_grad_norm(model)` calls 'log_grad_norm', which reads .grad ({{.*}}.cpp:{{[0-9]+}}) before this step's backward, where the original finds the last step's gradients (or the zeros of zero_grad()); the explicit grads of amp::value_and_grad never reach .grad, so it would find none: move it after the step and hand it the step's grads, or migrate this step by hand [amp-manual-migration]
    torch::Tensor loss;
    {
      at::autocast::set_enabled(true);
      // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
      loss = model->forward(x).mean();
      at::autocast::set_enabled(false);
    }
    scaler.scale(loss).backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
    scaler.step(opt);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
    scaler.update();
  }
}

void throws(Net &model, torch::optim::SGD &opt, torch::amp::GradScaler &scaler, const torch::Tensor &x) {
  torch::Tensor loss;
  {
    at::autocast::set_enabled(true);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: autocast scope enabled with 'at::autocast::set_enabled'; convert the model once with amp::auto_mixed_precision instead [amp-autocast-scope]
    loss = model->forward(x).mean();
    at::autocast::set_enabled(false);
  }
  scaler.scale(loss).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: backward() of a scaled loss puts the gradients in .grad implicitly; use amp::value_and_grad to get the loss and the grads explicitly [amp-scaler-implicit-grad]
  if (loss.item<float>() > 1e6f)
    throw std::runtime_error("diverged");
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: not migrated automatically: `if (loss.item<float>() > 1e6f) ...` can leave the step between its backward and step() ({{.*}}.cpp:{{[0-9]+}}): the original keeps the backward's gradients in .grad, where the next backward adds to them (no zero_grad() of the step clears them before its backward), while the explicit grads of amp::value_and_grad would be dropped: migrate this step by hand [amp-manual-migration]
  scaler.step(opt);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step() without explicit grads; with explicit gradients it takes them: step(optimizer, grads) [amp-scaler-step]
  scaler.update();
}

// Understood: rewritten, the calls staying where they were.
// CHECK-FIXES: {{^}}void understood(
// CHECK-FIXES: {{^}}  auto [scaled_loss, grads] = grad_fn();{{$}}
// CHECK-FIXES-NEXT: {{^}}  print_loss(loss);{{$}}
// CHECK-FIXES-NEXT: {{^}}  audit_value(loss.item<float>());{{$}}
// CHECK-FIXES-NEXT: {{^}}  model->train();{{$}}
// CHECK-FIXES-NEXT: {{^}}  scaler.step(opt, grads);{{$}}
// The others are left as they were.
// CHECK-FIXES: {{^}}void unknown_function(
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();{{$}}
// CHECK-FIXES-NEXT: {{^}}  report(loss.item<float>());{{$}}
// CHECK-FIXES: {{^}}void virtual_hook(
// CHECK-FIXES: {{^}}  hooks.after_backward(loss.item<float>());{{$}}
// CHECK-FIXES: {{^}}void throws(
// CHECK-FIXES: {{^}}  scaler.scale(loss).backward();{{$}}
