// Unit tests of <amp/torch.h> on the CPU: scaler state machine and errors, values against fp64
// references, value_and_grad against .backward(), the levels' dtypes, idempotent conversion,
// fp32 master parameters in the optimizer, and the exact code form the migration tool emits.
#include <amp/torch.h>
#include <torch/torch.h>

#include "clip_outputs.h"
#include "core_dispatch.h"

#include <c10/core/CPUAllocator.h>
#include <caffe2/serialize/inline_container.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

namespace {

using torch::Tensor;

struct MlpImpl : torch::nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 4));
  }
  Tensor forward(const Tensor &x) {
    return torch::log_softmax(fc2->forward(torch::relu(fc1->forward(x))), 1);
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

/// Records what its forward sees: the dtype of the linear's weight and of each activation.
struct ProbeImpl : torch::nn::Module {
  ProbeImpl() {
    fc = register_module("fc", torch::nn::Linear(6, 6));
    bn = register_module("bn", torch::nn::BatchNorm1d(6));
    unused = register_parameter("unused", torch::ones({3}));
  }
  std::tuple<Tensor, Tensor> forward(const Tensor &x) {
    input_dtype = x.scalar_type();
    weight_dtype = fc->weight.scalar_type();
    bn_weight_dtype = bn->weight.scalar_type();
    auto h = fc->forward(x);
    linear_dtype = h.scalar_type();
    auto y = bn->forward(h);
    return {y, h};
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
  Tensor unused;
  torch::Dtype input_dtype{}, weight_dtype{}, bn_weight_dtype{}, linear_dtype{};
};
TORCH_MODULE(Probe);

double max_rel_diff(const Tensor &a, const Tensor &b) {
  auto a64 = a.to(torch::kDouble), b64 = b.to(torch::kDouble);
  return ((a64 - b64).abs().max() / b64.abs().max().clamp_min(1e-12)).item<double>();
}

std::vector<Tensor> backward_grads(Mlp &model, const Tensor &x, const Tensor &y) {
  model->zero_grad();
  torch::nll_loss(model->forward(x), y).backward();
  std::vector<Tensor> out;
  for (const auto &p : model->parameters())
    out.push_back(p.grad().clone());
  model->zero_grad();
  return out;
}

// ---- GradScaler ---------------------------------------------------------------------------
TEST(Scaler, DefaultsAndOptions) {
  amp::GradScaler s;
  EXPECT_EQ(s.get_scale(), 65536.0);
  EXPECT_EQ(s.get_growth_factor(), 2.0);
  EXPECT_EQ(s.get_backoff_factor(), 0.5);
  EXPECT_EQ(s.get_growth_interval(), 2000);
  EXPECT_TRUE(s.is_enabled());
  amp::GradScaler t(amp::GradScalerOptions().init_scale(1024.0).growth_interval(100));
  EXPECT_EQ(t.get_scale(), 1024.0);
  EXPECT_EQ(t.get_growth_interval(), 100);
}

TEST(Scaler, RejectsBadOptions) {
  using O = amp::GradScalerOptions;
  EXPECT_THROW(amp::GradScaler(O().growth_factor(1.0)), std::runtime_error);
  EXPECT_THROW(amp::GradScaler(O().backoff_factor(1.0)), std::runtime_error);
  EXPECT_THROW(amp::GradScaler(O().init_scale(0.0)), std::runtime_error);
  EXPECT_THROW(amp::GradScaler(O().growth_interval(0)), std::runtime_error);
  EXPECT_NO_THROW(amp::GradScaler(O().growth_factor(0.5).enabled(false)));
}

TEST(Scaler, ScaleIsOutOfPlace) {
  amp::GradScaler s(amp::GradScalerOptions().init_scale(8.0));
  auto loss = torch::tensor(1.5);
  auto scaled = s.scale(loss);
  EXPECT_EQ(loss.item<double>(), 1.5);
  EXPECT_EQ(scaled.item<double>(), 12.0);
  EXPECT_EQ(scaled.dim(), 0);
}

std::string message_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "no error";
}

TEST(Scaler, StateMachineErrors) {
  auto p = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD opt({p}, 0.1);
  amp::GradScaler s(amp::GradScalerOptions().init_scale(4.0));
  s.scale(torch::tensor(1.0));
  std::vector<Tensor> grads{torch::full({2}, 4.0)};
  s.unscale_(opt, grads);
  EXPECT_EQ(message_of([&] { s.unscale_(opt, grads); }),
            "unscale_() has already been called on this optimizer since the last update().");
  s.step(opt, grads);
  EXPECT_EQ(message_of([&] { s.unscale_(opt, grads); }),
            "unscale_() is being called after step().");
  EXPECT_EQ(message_of([&] { s.step(opt, grads); }),
            "step() has already been called since the last update().");
  s.update();
  EXPECT_NO_THROW(s.unscale_(opt, grads)); // update() reset the state
}

TEST(Scaler, UnscaleBeforeScaleIsAnError) {
  auto p = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD opt({p}, 0.1);
  amp::GradScaler s;
  std::vector<Tensor> grads{torch::ones({2})};
  EXPECT_THROW(s.unscale_(opt, grads), std::runtime_error);
  EXPECT_THROW(s.update(), std::runtime_error);
}

TEST(Scaler, UnscaleValuesAllDtypes) {
  amp::GradScaler s(amp::GradScalerOptions().init_scale(1024.0));
  s.scale(torch::tensor(1.0));
  auto ref = torch::randn({1000}, torch::kDouble);
  std::vector<Tensor> grads{(ref * 1024).to(torch::kFloat), (ref * 1024).to(torch::kHalf),
                            (ref * 1024).to(torch::kBFloat16),
                            (ref * 1024).to(torch::kFloat).reshape({20, 50}).t()};
  std::vector<Tensor> params; // grads pair up with the optimizer's parameters
  for (const auto &g : grads)
    params.push_back(torch::zeros(g.sizes(), torch::requires_grad()));
  torch::optim::SGD opt(params, 0.1);
  s.unscale_(opt, grads);
  EXPECT_LT(max_rel_diff(grads[0], ref), 1e-6);
  EXPECT_LT(max_rel_diff(grads[1], ref), 1e-3);
  EXPECT_LT(max_rel_diff(grads[2], ref), 1e-2);
  EXPECT_LT(max_rel_diff(grads[3], ref.reshape({20, 50}).t()), 1e-6); // non-contiguous, in place
}

TEST(Scaler, InfSkipsStepAndBacksOff) {
  auto p = torch::ones({3}, torch::requires_grad());
  torch::optim::SGD opt({p}, 1.0);
  amp::GradScaler s(amp::GradScalerOptions().init_scale(16.0).growth_interval(2));
  s.scale(torch::tensor(1.0));
  std::vector<Tensor> bad{torch::tensor({1.0f, INFINITY, 2.0f})};
  s.step(opt, bad);
  EXPECT_TRUE(torch::equal(p.detach(), torch::ones({3})));
  s.update();
  EXPECT_EQ(s.get_scale(), 8.0);
  EXPECT_EQ(s.get_growth_tracker(), 0);
  std::vector<Tensor> nan{torch::tensor({NAN, 0.0f, 0.0f})};
  s.step(opt, nan);
  s.update();
  EXPECT_EQ(s.get_scale(), 4.0);
  for (int i = 0; i < 2; ++i) {
    std::vector<Tensor> good{torch::full({3}, 4.0)};
    s.step(opt, good);
    s.update();
  }
  EXPECT_EQ(s.get_scale(), 8.0); // grew after growth_interval clean steps
  EXPECT_EQ(s.get_growth_tracker(), 0);
  // 2 clean steps of lr 1 with unscaled grads 4 / 4
  EXPECT_TRUE(torch::allclose(p.detach(), torch::full({3}, -1.0)));
  EXPECT_FALSE(p.grad().defined()); // .grad is left as it was
}

/// The checked unscale answers what unscale_ recorded: whether step() will apply the update.
TEST(Scaler, CheckedUnscaleAnswersWhetherEveryGradIsFinite) {
  auto p = torch::ones({3}, torch::requires_grad());
  torch::optim::SGD opt({p}, 1.0);
  amp::GradScaler s(amp::GradScalerOptions().init_scale(4.0));
  s.scale(torch::tensor(1.0));
  std::vector<Tensor> good{torch::full({3}, 8.0)};
  EXPECT_TRUE(s.unscale_and_check(opt, good));
  EXPECT_TRUE(torch::equal(good[0], torch::full({3}, 2.0))); // unscaled in place, as unscale_
  EXPECT_EQ(message_of([&] { s.unscale_and_check(opt, good); }),
            "unscale_() has already been called on this optimizer since the last update().");
  s.step(opt, good); // already unscaled: steps on the unscaled grads
  EXPECT_TRUE(torch::allclose(p.detach(), torch::full({3}, -1.0)));
  s.update();
  std::vector<Tensor> bad{torch::tensor({1.0f, NAN, 2.0f})};
  EXPECT_FALSE(s.unscale_and_check(opt, bad));
  s.step(opt, bad); // skipped, as the answer said
  EXPECT_TRUE(torch::allclose(p.detach(), torch::full({3}, -1.0)));
  s.update();
  EXPECT_EQ(s.get_scale(), 2.0); // backed off
  // Pointer-like optimizers, as unscale_.
  auto shared = std::make_shared<torch::optim::SGD>(std::vector<Tensor>{p}, 1.0);
  std::vector<Tensor> inf{torch::tensor({INFINITY, 0.0f, 0.0f})};
  EXPECT_FALSE(s.unscale_and_check(shared, inf));
}

TEST(Scaler, CheckedUnscaleDisabledChecksTheGrads) {
  auto p = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD opt({p}, 1.0);
  amp::GradScaler s(amp::GradScalerOptions().enabled(false));
  std::vector<Tensor> grads{torch::full({2}, 3.0)};
  EXPECT_TRUE(s.unscale_and_check(opt, grads));
  EXPECT_TRUE(torch::equal(grads[0], torch::full({2}, 3.0))); // nothing unscaled
  std::vector<Tensor> bad{torch::tensor({-INFINITY, 1.0f})};
  EXPECT_FALSE(s.unscale_and_check(opt, bad));
}

TEST(Scaler, AllFinite) {
  EXPECT_TRUE(amp::all_finite({}));
  EXPECT_TRUE(amp::all_finite({Tensor(), torch::ones({4}), torch::arange(3)}));
  EXPECT_TRUE(amp::all_finite({torch::full({2}, 65504.0, torch::kHalf), torch::ones({3}, torch::kBFloat16)}));
  EXPECT_FALSE(amp::all_finite({torch::ones({4}), torch::tensor({1.0, std::numeric_limits<double>::quiet_NaN()})}));
  EXPECT_FALSE(amp::all_finite({torch::full({2, 2}, INFINITY).t()}));
  EXPECT_FALSE(amp::all_finite({torch::tensor({1.0f, 2.0f}).to(torch::kHalf) * 65504}));
}

TEST(Scaler, UpdateWithNewScale) {
  amp::GradScaler s;
  s.scale(torch::tensor(1.0));
  s.update(128.0);
  EXPECT_EQ(s.get_scale(), 128.0);
  s.update(torch::tensor(64.0));
  EXPECT_EQ(s.get_scale(), 64.0);
}

// A resumed run restores its scale with update(new_scale) before its first step: the scale the
// first scale() starts from (a project scaler allowed it; the migrated program threw).
TEST(Scaler, UpdateWithNewScaleBeforeTheFirstScale) {
  amp::GradScaler s(amp::GradScalerOptions().init_scale(1024.0));
  s.update(256.0);
  EXPECT_EQ(s.get_scale(), 256.0);
  EXPECT_TRUE(s.scale(torch::tensor(2.0)).equal(torch::tensor(512.0)));
  amp::GradScaler t;
  t.update(torch::tensor(32.0));
  EXPECT_TRUE(t.scale(torch::tensor(1.0)).equal(torch::tensor(32.0)));
  EXPECT_NE(message_of([&] { amp::GradScaler().update(-1.0); }).find("finite and > 0"),
            std::string::npos);
}

TEST(Scaler, DisabledPassesThrough) {
  auto p = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD opt({p}, 1.0);
  amp::GradScaler s(amp::GradScalerOptions().enabled(false));
  auto loss = torch::tensor(3.0);
  EXPECT_TRUE(s.scale(loss).is_same(loss));
  std::vector<Tensor> grads{torch::ones({2})};
  s.unscale_(opt, grads);
  s.step(opt, grads);
  s.update();
  EXPECT_TRUE(torch::allclose(p.detach(), torch::zeros({2})));
  EXPECT_EQ(s.get_scale(), 1.0);
  EXPECT_TRUE(s.state_dict().empty());
}

TEST(Scaler, StateDictRoundTrip) {
  amp::GradScaler a(amp::GradScalerOptions().init_scale(32.0).growth_interval(7));
  a.scale(torch::tensor(1.0));
  auto state = a.state_dict();
  EXPECT_EQ(state.size(), 5u);
  EXPECT_EQ(state.at("scale"), 32.0);
  EXPECT_EQ(state.at("growth_interval"), 7.0);
  EXPECT_EQ(state.at("_growth_tracker"), 0.0);
  amp::GradScaler b;
  b.load_state_dict(state);
  EXPECT_EQ(b.get_scale(), 32.0);
  EXPECT_EQ(b.get_growth_interval(), 7);
  EXPECT_EQ(b.scale(torch::tensor(1.0)).item<double>(), 32.0);
  EXPECT_THROW(b.load_state_dict({}), std::runtime_error);
}

TEST(Scaler, PointerLikeOptimizers) {
  auto p = torch::ones({2}, torch::requires_grad());
  auto opt = std::make_shared<torch::optim::SGD>(std::vector<Tensor>{p}, 1.0);
  auto scaler = std::make_shared<amp::GradScaler>(amp::GradScalerOptions().init_scale(2.0));
  scaler->scale(torch::tensor(1.0));
  std::vector<Tensor> grads{torch::full({2}, 2.0)};
  scaler->unscale_(opt, grads);
  scaler->step(opt, grads);
  scaler->update();
  torch::optim::Optimizer *raw = opt.get();
  std::vector<Tensor> grads2{torch::full({2}, 2.0)};
  scaler->step(raw, grads2);
  scaler->update();
  EXPECT_TRUE(torch::allclose(p.detach(), torch::full({2}, -1.0)));
}

/// Without a scaler: amp::step does what optimizer.step() after backward() did, and leaves .grad.
TEST(Step, NoScalerStepMatchesBackwardAndStep) {
  auto run = [](bool explicit_grads) {
    torch::manual_seed(0);
    Mlp model;
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    auto x = torch::randn({5, 8});
    auto y = torch::randint(0, 4, {5}, torch::kLong);
    for (int i = 0; i < 3; ++i) {
      if (explicit_grads) {
        auto grad_fn = amp::value_and_grad(
            [&] { return torch::nll_loss(model->forward(x), y); }, amp::parameters_of(opt));
        auto [loss, grads] = grad_fn();
        amp::step(opt, grads);
      } else {
        opt.zero_grad();
        torch::nll_loss(model->forward(x), y).backward();
        opt.step();
      }
    }
    std::vector<Tensor> out;
    for (auto &p : model->parameters())
      out.push_back(p.detach().clone());
    if (explicit_grads) {
      for (auto &p : model->parameters())
        EXPECT_FALSE(p.grad().defined());
    }
    return out;
  };
  auto ref = run(false), got = run(true);
  ASSERT_EQ(ref.size(), got.size());
  for (std::size_t i = 0; i < ref.size(); ++i)
    EXPECT_TRUE(torch::allclose(ref[i], got[i], 1e-6, 1e-7)) << i;
}

TEST(Step, NoScalerStepPointerAndErrors) {
  auto p = torch::ones({2}, torch::requires_grad());
  auto opt = std::make_shared<torch::optim::SGD>(std::vector<Tensor>{p}, 1.0);
  amp::step(opt, {torch::full({2}, 2.0)});
  EXPECT_TRUE(torch::allclose(p.detach(), torch::full({2}, -1.0)));
  std::vector<Tensor> two{torch::ones({2}), torch::ones({2})};
  try {
    amp::step(*opt, two);
    ADD_FAILURE() << "no error";
  } catch (const amp::Error &e) {
    EXPECT_NE(std::string(e.what()).find("amp::step: 2 grads do not pair up"), std::string::npos)
        << e.what();
  }
}

/// The message of the amp::Error `f` throws ("" when it throws none).
template <class F> std::string message_of(F &&f) {
  try {
    f();
  } catch (const amp::Error &e) {
    return e.what();
  }
  return "";
}

// Issue 13 item 14: each invalid value is an amp::Error at the call that passes it.
TEST(Scaler, RejectsNonFiniteAndNonPositiveScales) {
  using O = amp::GradScalerOptions;
  for (double bad : {0.0, -1.0, double(INFINITY), double(NAN)})
    EXPECT_NE(message_of([&] { amp::GradScaler g(O().init_scale(bad)); })
                  .find("init_scale must be finite and > 0"),
              std::string::npos)
        << bad;
  EXPECT_NE(message_of([&] { amp::GradScaler g(O().growth_factor(INFINITY)); }).find("growth_factor"),
            std::string::npos);
  EXPECT_NE(message_of([&] { amp::GradScaler g(O().backoff_factor(0.0)); }).find("backoff_factor"),
            std::string::npos);
  amp::GradScaler s;
  s.scale(torch::tensor(1.0));
  for (double bad : {0.0, -2.0, double(INFINITY), double(NAN)})
    EXPECT_NE(message_of([&] { s.update(bad); }).find("the scale must be finite and > 0"),
              std::string::npos)
        << bad;
  EXPECT_NE(message_of([&] { s.update(torch::tensor(0.0)); }).find("the scale must be finite and > 0"),
            std::string::npos);
  EXPECT_EQ(s.get_scale(), 65536.0); // the bad updates changed nothing
}

TEST(Scaler, IntegerGradsAndOtherShapesAreErrors) {
  auto p = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD opt({p}, 1.0);
  amp::GradScaler s;
  s.scale(torch::tensor(1.0));
  std::vector<Tensor> ints{torch::ones({2}, torch::kInt)};
  EXPECT_NE(message_of([&] { s.unscale_(opt, ints); }).find("grad 0 has dtype Int"), std::string::npos);
  amp::GradScaler t;
  t.scale(torch::tensor(1.0));
  std::vector<Tensor> wide{torch::ones({1})}; // would broadcast over the parameter's 2 elements
  EXPECT_NE(message_of([&] { t.step(opt, wide); }).find("grad 0 has shape [1] but its parameter has shape [2]"),
            std::string::npos);
  EXPECT_TRUE(torch::equal(p.detach(), torch::ones({2}))); // not stepped
}

TEST(Levels, InvalidLevelValueIsAnError) {
  Mlp model;
  EXPECT_NE(message_of([&] { amp::auto_mixed_precision(model, static_cast<amp::Level>(9)); })
                .find("invalid Level value 9"),
            std::string::npos);
}

TEST(Scaler, GradCountMustMatch) {
  auto p = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD opt({p}, 1.0);
  amp::GradScaler s;
  s.scale(torch::tensor(1.0));
  std::vector<Tensor> grads{torch::ones({2}), torch::ones({2})};
  EXPECT_THROW(s.step(opt, grads), std::runtime_error);
}

// Issue 13 item 14: step() after unscale_() takes only the grads unscale_() unscaled (or clips of
// them made afterwards). fp32 runs in the core's CPU backend, fp64 through the torch fallback.
class UnscaledGradsTest : public ::testing::TestWithParam<torch::Dtype> {};

TEST_P(UnscaledGradsTest, StepRejectsGradsThatWereNotUnscaled) {
  const auto dtype = GetParam();
  auto p = torch::zeros({2}, torch::dtype(dtype).requires_grad(true));
  auto q = torch::zeros({3}, torch::dtype(dtype).requires_grad(true));
  torch::optim::SGD opt({p, q}, 1.0);
  amp::GradScaler s(amp::GradScalerOptions().init_scale(1024.0));
  s.scale(torch::tensor(1.0));
  auto scaled = [&] {
    return std::vector<Tensor>{torch::full({2}, 1024.0, dtype), torch::full({3}, 1024.0, dtype)};
  };
  std::vector<Tensor> grads = scaled();
  auto clipped_before = amp::clip_by_global_norm(grads, 1e9); // a copy of the still-scaled grads
  s.unscale_(opt, grads);
  EXPECT_TRUE(torch::equal(grads[0], torch::ones({2}, dtype)));
  const std::string not_unscaled = "is not the grad unscale_() unscaled for this optimizer";
  auto other = scaled(); // e.g. a second value_and_grad's grads
  EXPECT_NE(message_of([&] { s.step(opt, other); }).find("grad 0 " + not_unscaled),
            std::string::npos);
  EXPECT_NE(message_of([&] { s.step(opt, clipped_before); }).find("grad 0 " + not_unscaled),
            std::string::npos);
  std::vector<Tensor> mixed{grads[0], other[1]};
  EXPECT_NE(message_of([&] { s.step(opt, mixed); }).find("grad 1 " + not_unscaled),
            std::string::npos);
  std::vector<Tensor> swapped{grads[1], grads[0]};
  EXPECT_NE(message_of([&] { s.step(opt, swapped); }).find("grad 0 " + not_unscaled),
            std::string::npos);
  std::vector<Tensor> first_only{grads[0]};
  EXPECT_NE(message_of([&] { s.step(opt, first_only); })
                .find("1 grads, but unscale_() unscaled 2 for this optimizer"),
            std::string::npos);
  EXPECT_TRUE(torch::equal(p.detach(), torch::zeros({2}, dtype))); // nothing was applied
  EXPECT_TRUE(torch::equal(q.detach(), torch::zeros({3}, dtype)));
  s.step(opt, grads); // the right ones still step
  EXPECT_TRUE(torch::equal(p.detach(), torch::full({2}, -1.0, dtype)));
}

TEST_P(UnscaledGradsTest, StepTakesUnscaledGradsChangedInPlaceOrClipped) {
  const auto dtype = GetParam();
  auto p = torch::zeros({4}, torch::dtype(dtype).requires_grad(true));
  auto q = torch::zeros({3}, torch::dtype(dtype).requires_grad(true));
  torch::optim::SGD opt_p({p}, 1.0), opt_q({q}, 1.0);
  amp::GradScaler s(amp::GradScalerOptions().init_scale(64.0));
  s.scale(torch::tensor(1.0));
  for (int step = 0; step < 3; ++step) {
    // What amp-migrate --fix writes: unscale_, then the clip replaces the grads, then step.
    std::vector<Tensor> grads{torch::full({4}, 64.0 * 3.0, dtype)}; // unscaled norm 6
    s.unscale_(opt_p, grads);
    grads = amp::clip_by_global_norm(grads, 3.0);
    grads = amp::clip_by_global_norm(grads, 1.5); // a clip of a clip
    amp::clip_by_global_norm_(grads, 1.5);        // in place (the form the tool writes)
    s.step(opt_p, grads);
    // Changed in place after unscale_ (as all_reduce_grads does).
    std::vector<Tensor> grads_q{torch::full({3}, 64.0, dtype)};
    s.unscale_(opt_q, grads_q);
    grads_q[0].mul_(2.0);
    s.step(opt_q, grads_q);
    s.update();
  }
  EXPECT_TRUE(torch::allclose(p.detach(), torch::full({4}, -3 * 0.75, dtype)));
  EXPECT_TRUE(torch::allclose(q.detach(), torch::full({3}, -3 * 2.0, dtype)));
}

TEST_P(UnscaledGradsTest, EveryE2eFormOfTheStep) {
  // clip_between_steps (test/e2e/migrated): two optimizers, one stepped before the other's clip.
  const auto dtype = GetParam();
  auto a = torch::zeros({2}, torch::dtype(dtype).requires_grad(true));
  auto b = torch::zeros({2}, torch::dtype(dtype).requires_grad(true));
  torch::optim::SGD first({a}, 1.0), others({b}, 1.0);
  amp::GradScaler s(amp::GradScalerOptions().init_scale(8.0));
  s.scale(torch::tensor(1.0));
  std::vector<Tensor> grads{torch::full({2}, 8.0, dtype), torch::full({2}, 8.0, dtype)};
  auto [grads_first, grads_others] = amp::split_grads(grads, first, others);
  s.unscale_(first, grads_first);
  s.unscale_(others, grads_others);
  s.step(first, grads_first);
  grads_others = amp::clip_by_global_norm(grads_others, 0.5);
  s.step(others, grads_others);
  s.update();
  EXPECT_TRUE(torch::allclose(a.detach(), torch::full({2}, -1.0, dtype)));
  EXPECT_TRUE(torch::allclose(b.detach(), torch::full({2}, -0.5 / std::sqrt(2.0), dtype)));
  // One optimizer's unscaled grads are not another's.
  std::vector<Tensor> ga{torch::full({2}, 8.0, dtype)}, gb{torch::full({2}, 8.0, dtype)};
  s.unscale_(first, ga);
  s.unscale_(others, gb);
  EXPECT_NE(message_of([&] { s.step(first, gb); }).find("grad 0 is not the grad"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Scaler, UnscaledGradsTest, ::testing::Values(torch::kFloat, torch::kDouble),
                         [](const ::testing::TestParamInfo<torch::Dtype> &info) {
                           return std::string(info.param == torch::kFloat ? "core" : "fallback");
                         });

// Issue 13 item 14: a garbage state dict is an amp::Error naming the field, and changes nothing.
TEST(Scaler, LoadStateDictRejectsGarbage) {
  const std::map<std::string, double> good{{"scale", 256.0},
                                           {"growth_factor", 2.0},
                                           {"backoff_factor", 0.5},
                                           {"growth_interval", 100.0},
                                           {"_growth_tracker", 7.0}};
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<std::string, std::vector<double>>> bad{
      {"scale", {0.0, -1.0, inf, nan, 1e300, 1e-50}},          // 1e300 / 1e-50: inf / 0 in fp32
      {"growth_factor", {1.0, 0.5, inf, nan, 1e39}},
      {"backoff_factor", {0.0, 1.0, -0.5, nan, 1e-50}},
      {"growth_interval", {0.0, -3.0, 2.5, 2147483648.0, 1e300, nan, inf}},
      {"_growth_tracker", {-1.0, 2.5, 100.0, 4294967296.0, 1e300, nan}}}; // 100: == interval
  for (const auto &[key, values] : bad)
    for (double v : values) {
      auto state = good;
      state[key] = v;
      amp::GradScaler s(amp::GradScalerOptions().init_scale(16.0).growth_interval(10));
      s.scale(torch::tensor(1.0));
      const std::string msg = message_of([&] { s.load_state_dict(state); });
      EXPECT_NE(msg.find("amp::GradScaler::load_state_dict: '" + key + "' must be"),
                std::string::npos)
          << key << " = " << v << ": " << msg;
      EXPECT_EQ(s.get_scale(), 16.0) << key << " = " << v; // nothing changed
      EXPECT_EQ(s.get_growth_interval(), 10);
      EXPECT_EQ(s.get_growth_tracker(), 0);
    }
  amp::GradScaler s;
  s.load_state_dict(good);
  EXPECT_EQ(s.get_scale(), 256.0);
  EXPECT_EQ(s.get_growth_tracker(), 7);
  EXPECT_NE(message_of([&] { s.load_state_dict({{"scale", 1.0}}); }).find("missing key 'growth_factor'"),
            std::string::npos);
}

// The same through a checkpoint: a tracker past int32 (pickle LONG1) and a value of the wrong type.
TEST(Scaler, CheckpointWithGarbageNamesTheField) {
  auto pickle = [](const std::string &tracker_opcodes) {
    std::string p = "\x80\x02}(";
    auto key = [&p](const std::string &k) {
      p += 'X';
      for (int i = 0; i < 4; ++i)
        p += static_cast<char>((k.size() >> (8 * i)) & 0xff);
      p += k;
    };
    auto f64 = [&p](double v) {
      p += 'G';
      std::uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      for (int i = 7; i >= 0; --i)
        p += static_cast<char>((bits >> (8 * i)) & 0xff);
    };
    key("scale"), f64(256.0);
    key("growth_factor"), f64(2.0);
    key("backoff_factor"), f64(0.5);
    key("growth_interval"), p += std::string("J\x64\x00\x00\x00", 5); // BININT 100
    key("_growth_tracker"), p += tracker_opcodes;
    p += "u.";
    std::vector<char> bytes;
    caffe2::serialize::PyTorchStreamWriter writer([&bytes](const void *d, std::size_t n) {
      bytes.insert(bytes.end(), static_cast<const char *>(d), static_cast<const char *>(d) + n);
      return n;
    });
    writer.writeRecord("data.pkl", p.data(), p.size());
    writer.writeEndOfFile();
    return bytes;
  };
  amp::GradScaler s(amp::GradScalerOptions().init_scale(16.0));
  amp::load_scaler_state_bytes(s, pickle(std::string("J\x07\x00\x00\x00", 5)), "ok.pt");
  EXPECT_EQ(s.get_growth_tracker(), 7);
  // LONG1 with 8 bytes (what libtorch's unpickler reads): 2^40.
  const auto big = pickle(std::string("\x8a\x08\x00\x00\x00\x00\x00\x01\x00\x00", 10));
  const std::string msg = message_of([&] { amp::load_scaler_state_bytes(s, big, "big.pt"); });
  EXPECT_NE(msg.find("big.pt: amp::GradScaler::load_state_dict: '_growth_tracker' must be an "
                     "integer in [0, growth_interval = 100)"),
            std::string::npos)
      << msg;
  const auto text = pickle(std::string("X\x01\x00\x00\x00" "7", 6)); // the string "7"
  EXPECT_NE(message_of([&] { amp::load_scaler_state_bytes(s, text, "text.pt"); })
                .find("text.pt: key '_growth_tracker' holds a String, not a number"),
            std::string::npos);
  EXPECT_EQ(s.get_growth_tracker(), 7); // unchanged by the bad files
}

// ---- norms and clipping ---------------------------------------------------------------------
TEST(Clip, GlobalNormMatchesFloat64) {
  std::vector<Tensor> xs{torch::randn({300}), torch::randn({7, 9}).to(torch::kHalf),
                         torch::randn({5}).to(torch::kBFloat16)};
  double ref = 0;
  for (const auto &x : xs)
    ref += x.to(torch::kDouble).pow(2).sum().item<double>();
  auto n = amp::global_norm(xs);
  EXPECT_EQ(n.dim(), 0);
  EXPECT_EQ(n.scalar_type(), torch::kFloat);
  EXPECT_NEAR(n.item<double>(), std::sqrt(ref), 1e-5 * std::sqrt(ref));
  EXPECT_EQ(amp::global_norm({}).item<double>(), 0.0);
}

TEST(Clip, MindSporeRule) {
  std::vector<Tensor> xs{torch::full({4}, 3.0), torch::full({4}, 4.0)}; // norm 10
  auto clipped = amp::clip_by_global_norm(xs, 5.0);
  EXPECT_TRUE(torch::allclose(clipped[0], torch::full({4}, 1.5)));
  EXPECT_TRUE(torch::allclose(clipped[1], torch::full({4}, 2.0)));
  EXPECT_EQ(xs[0][0].item<double>(), 3.0); // out of place
  auto same = amp::clip_by_global_norm(xs, 20.0);
  EXPECT_TRUE(torch::equal(same[1], xs[1]));
  EXPECT_THROW(amp::clip_by_global_norm(xs, 0.0), std::runtime_error);
  auto half = amp::clip_by_global_norm({torch::full({4}, 3.0).to(torch::kHalf)}, 3.0);
  EXPECT_EQ(half[0].scalar_type(), torch::kHalf);
  EXPECT_NEAR(half[0][0].item<double>(), 1.5, 1e-3);
}

// The in-place form amp-migrate writes: the same values as the out-of-place one, where the
// tensors lie, and the norm before clipping returned (clip_grad_norm_'s total norm).
TEST(Clip, InPlaceMatchesOutOfPlace) {
  std::vector<Tensor> xs{torch::full({4}, 3.0), torch::full({4}, 4.0)}; // norm 10
  const void *at0 = xs[0].data_ptr();
  auto norm = amp::clip_by_global_norm_(xs, 5.0);
  EXPECT_EQ(norm.dim(), 0);
  EXPECT_EQ(norm.scalar_type(), torch::kFloat);
  EXPECT_NEAR(norm.item<double>(), 10.0, 1e-5);
  EXPECT_EQ(xs[0].data_ptr(), at0);
  EXPECT_TRUE(torch::allclose(xs[0], torch::full({4}, 1.5)));
  EXPECT_TRUE(torch::allclose(xs[1], torch::full({4}, 2.0)));
  // Every dtype and a non-contiguous tensor (written back into its base); fp32 in the core.
  torch::manual_seed(3);
  auto base = torch::randn({6, 5});
  std::vector<Tensor> ys{base.t(), torch::randn({7}).to(torch::kHalf),
                         torch::randn({9}).to(torch::kBFloat16), torch::randn({3}, torch::kDouble),
                         Tensor(), torch::randn({0})};
  auto expected = amp::clip_by_global_norm(ys, 0.5);
  auto expected_norm = amp::global_norm(ys).item<double>();
  EXPECT_NEAR(amp::clip_by_global_norm_(ys, 0.5).item<double>(), expected_norm, 1e-6);
  for (std::size_t i = 0; i < ys.size(); ++i) {
    ASSERT_EQ(ys[i].defined(), expected[i].defined()) << i;
    if (ys[i].defined()) {
      EXPECT_TRUE(torch::equal(ys[i], expected[i])) << i;
    }
  }
  EXPECT_TRUE(torch::equal(base.t(), ys[0]));
  // Below the limit nothing changes.
  std::vector<Tensor> small{torch::full({2}, 0.1)};
  amp::clip_by_global_norm_(small, 1.0);
  EXPECT_TRUE(torch::equal(small[0], torch::full({2}, 0.1)));
}

TEST(Clip, InPlaceRefusesSharedMemory) {
  EXPECT_NE(message_of([] { amp::clip_by_global_norm_({torch::ones({2})}, 0.0); })
                .find("clip_norm must be > 0"),
            std::string::npos);
  auto shared = torch::ones({8});
  EXPECT_NE(message_of([&] {
              amp::clip_by_global_norm_({torch::ones({2}), shared.narrow(0, 0, 5),
                                         shared.narrow(0, 4, 4)}, 1.0);
            }).find("tensors 1 and 2 share memory"),
            std::string::npos);
  EXPECT_NE(message_of([&] { amp::clip_by_global_norm_({shared, shared}, 1.0); })
                .find("tensors 0 and 1 share memory"),
            std::string::npos);
  EXPECT_NE(message_of([] { amp::clip_by_global_norm_({torch::ones({1}).expand({4})}, 1.0); })
                .find("tensor 0 has elements that share memory"),
            std::string::npos);
  // Disjoint parts of one storage are fine, and nothing was changed by the refused calls.
  EXPECT_TRUE(torch::equal(shared, torch::ones({8})));
  amp::clip_by_global_norm_({shared.narrow(0, 0, 4), shared.narrow(0, 4, 4)}, 1.0);
  EXPECT_TRUE(torch::allclose(shared, torch::full({8}, 1.0 / std::sqrt(8.0))));
}

// The clip after an explicit unscale_ takes the norm the unscale computed in its own pass over
// the grads (one pass fewer per step), and gets the same bits as computing it afresh.
std::vector<Tensor> scaled_grads(double scale) {
  torch::manual_seed(11);
  // Sizes that span several of the CPU backend's chunks, and a few small ones.
  std::vector<Tensor> grads;
  for (auto n : {300000, 17, 70000, 1, 4096})
    grads.push_back(torch::randn({n}) * scale);
  return grads;
}

TEST(Clip, NormFromTheUnscaleIsTheNormOfTheUnscaledGrads) {
  std::vector<Tensor> params;
  for (const auto &g : scaled_grads(1.0))
    params.push_back(torch::zeros_like(g).requires_grad_());
  torch::optim::SGD opt(params, 1.0);
  amp::GradScaler fused(amp::GradScalerOptions().init_scale(1024.0));
  amp::GradScaler plain(amp::GradScalerOptions().init_scale(1024.0));
  fused.scale(torch::tensor(1.0));
  plain.scale(torch::tensor(1.0));
  auto a = scaled_grads(1024.0), b = scaled_grads(1024.0);
  plain.unscale_(opt, b);
  amp::detail::forget_unscaled_norm(); // b's clip computes its norm from the grads
  ASSERT_FALSE(amp::detail::unscaled_norm_for(b).defined());
  fused.unscale_(opt, a); // the last unscale_ on this thread is the one remembered
  ASSERT_TRUE(amp::detail::unscaled_norm_for(a).defined());
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_TRUE(torch::equal(a[i], b[i])) << i;
  // Remembered for a, not for another list (b, a subset, a reordering).
  EXPECT_EQ(amp::global_norm(a).item<float>(), amp::global_norm(b).item<float>());
  std::vector<Tensor> a_first{a[0]}, a_swapped{a[1], a[0], a[2], a[3], a[4]};
  EXPECT_FALSE(amp::detail::unscaled_norm_for(a_first).defined());
  EXPECT_FALSE(amp::detail::unscaled_norm_for(a_swapped).defined());
  // global_norm hands out a copy: changing it does not change what the clip uses.
  amp::global_norm(a).fill_(1e-3);
  const auto norm_a = amp::clip_by_global_norm_(a, 0.5);
  const auto norm_b = amp::clip_by_global_norm_(b, 0.5);
  EXPECT_EQ(norm_a.item<float>(), norm_b.item<float>());
  EXPECT_GT(norm_a.item<float>(), 0.5f);
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  // The in-place clip changed the grads: the norm is forgotten.
  EXPECT_FALSE(amp::detail::unscaled_norm_for(a).defined());
  fused.step(opt, a);
  plain.step(opt, b);
}

TEST(Clip, NormFromTheUnscaleIsDroppedWhenTheGradsChange) {
  auto p = torch::zeros({6}, torch::requires_grad());
  auto q = torch::zeros({5}, torch::requires_grad());
  torch::optim::SGD opt({p, q}, 1.0);
  struct Change {
    const char *what;
    std::function<void(std::vector<Tensor> &)> apply;
  };
  const std::vector<Change> changes{
      {"in place", [](std::vector<Tensor> &g) { g[0].mul_(3.0); }},
      {"through a view", [](std::vector<Tensor> &g) { g[1].narrow(0, 1, 2).fill_(10.0); }},
      {"replaced", [](std::vector<Tensor> &g) { g[0] = g[0] * 3.0; }},
      {"in place by a clip", [](std::vector<Tensor> &g) { amp::clip_by_global_norm_(g, 0.1); }},
  };
  for (const auto &change : changes) {
    amp::GradScaler s(amp::GradScalerOptions().init_scale(8.0));
    s.scale(torch::tensor(1.0));
    std::vector<Tensor> grads{torch::full({6}, 8.0), torch::full({5}, 16.0)};
    s.unscale_(opt, grads);
    ASSERT_TRUE(amp::detail::unscaled_norm_for(grads).defined()) << change.what;
    change.apply(grads);
    EXPECT_FALSE(amp::detail::unscaled_norm_for(grads).defined()) << change.what;
    // The clip's norm is that of the grads as they are now.
    double sum = 0;
    for (const auto &g : grads)
      sum += g.to(torch::kDouble).pow(2).sum().item<double>();
    EXPECT_NEAR(amp::clip_by_global_norm_(grads, 1e9).item<double>(), std::sqrt(sum), 1e-4)
        << change.what;
  }
  // A non-contiguous grad is unscaled through a copy: no fused norm, the clip computes it.
  amp::GradScaler s(amp::GradScalerOptions().init_scale(2.0));
  s.scale(torch::tensor(1.0));
  auto base = torch::full({5, 2}, 2.0);
  std::vector<Tensor> strided{torch::full({6}, 2.0), base.t()[0]};
  s.unscale_(opt, strided);
  EXPECT_FALSE(amp::detail::unscaled_norm_for(strided).defined());
  EXPECT_NEAR(amp::clip_by_global_norm_(strided, 1e9).item<double>(), std::sqrt(11.0), 1e-5);
}

// clip_grad_value_ on explicit grads: the same values as libtorch's on .grad, in place.
TEST(Clip, ByValueMatchesClipGradValue) {
  torch::manual_seed(5);
  std::vector<Tensor> params{torch::randn({5, 3}, torch::requires_grad()),
                             torch::randn({7}, torch::requires_grad()),
                             torch::randn({2}, torch::requires_grad())};
  (params[0].pow(3).sum() * 4 + params[1].exp().sum()).backward(); // params[2] gets no grad
  std::vector<Tensor> grads;
  for (const auto &p : params)
    grads.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
  torch::nn::utils::clip_grad_value_(params, 0.75);
  const void *at0 = grads[0].data_ptr();
  amp::clip_by_value_(grads, 0.75);
  EXPECT_EQ(grads[0].data_ptr(), at0);
  EXPECT_FALSE(grads[2].defined());
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(torch::equal(grads[i], params[i].grad())) << i;
    EXPECT_LE(grads[i].abs().max().item<double>(), 0.75) << i;
  }
  EXPECT_GT((params[0].grad().abs() == 0.75).sum().item<int64_t>(), 0); // something was clamped
}

TEST(Clip, RunsInTheCore) {
  std::vector<at::Tensor> cpu{torch::ones({3}), torch::ones({2}, torch::kHalf)};
  EXPECT_TRUE(amp::detail::core_takes(cpu));
  EXPECT_FALSE(amp::detail::core_takes({torch::ones({3}, torch::kDouble)}));
}

// One NaN rule on both paths (docs/runtime-core.md): a NaN norm clips every value to NaN, an inf
// norm to 0 (times the value), for the core's fp32 lists and the torch fallback's fp64 ones alike.
TEST(Clip, NonFiniteNormSameRuleOnCoreAndFallback) {
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    std::vector<Tensor> xs{torch::full({4}, 3.0, dtype), torch::full({3}, 4.0, dtype)};
    xs[1][2] = std::nan("");
    EXPECT_EQ(amp::detail::core_takes(xs), dtype == torch::kFloat);
    auto clipped = amp::clip_by_global_norm(xs, 5.0);
    for (const auto &c : clipped)
      EXPECT_TRUE(torch::isnan(c).all().item<bool>()) << c;
  }
  // The two implementations of the same call, side by side, on NaN, inf and finite norms.
  for (double norm : {std::nan(""), std::numeric_limits<double>::infinity(), 10.0, 1.0}) {
    std::vector<Tensor> in{torch::tensor({3.0f, -4.0f})};
    std::vector<Tensor> core_out{torch::empty({2})}, fallback_out{torch::empty({2})};
    auto n = torch::full({}, norm, torch::kFloat);
    amp::detail::clip_by_global_norm(in, core_out, 5.0, n);
    amp::detail::torch_fallback::clip_by_global_norm(in, fallback_out, 5.0, n);
    EXPECT_TRUE(torch::equal(torch::isnan(core_out[0]), torch::isnan(fallback_out[0]))) << norm;
    EXPECT_TRUE(torch::allclose(core_out[0], fallback_out[0], 0, 0, /*equal_nan=*/true)) << norm;
  }
}

TEST(Scaler, UpdateScaleSameRuleOnCoreAndFallback) {
  // found_inf: clean, set, NaN (counts as set, as PyTorch's `if (*found_inf)`), a sum of two
  // devices' flags; trackers: fresh, one before growth, past the interval (a loaded state).
  for (float found : {0.0f, 1.0f, NAN, 2.0f})
    for (int tracker : {0, 2, 9}) {
      auto run = [&](bool core) {
        auto scale = torch::full({}, 1024.0f);
        auto t = torch::full({}, tracker, torch::kInt);
        auto f = torch::full({}, found);
        if (core)
          amp::detail::update_scale(scale, t, f, 2.0, 0.5, 3);
        else
          amp::detail::torch_fallback::update_scale(scale, t, f, 2.0, 0.5, 3);
        return std::make_pair(scale.item<float>(), t.item<int>());
      };
      const auto core = run(true), fallback = run(false);
      EXPECT_EQ(core, fallback) << "found_inf " << found << " tracker " << tracker;
      if (found != 0.0f) {
        EXPECT_EQ(core.first, 512.0f);
      }
      if (found == 0.0f && tracker == 2) {
        EXPECT_EQ(core, std::make_pair(2048.0f, 0));
      }
    }
}

// ---- checkpoints shared with Python ------------------------------------------------------------
// test/torch/data/scaler_state.pt is torch.save(GradScaler(...).state_dict()) as made by
// data/make_scaler_state.py; AMP_SCALER_STATE_FROM_TORCH may name a file saved by real PyTorch.
std::string python_scaler_state() {
  if (const char *p = std::getenv("AMP_SCALER_STATE_FROM_TORCH"))
    return p;
  return std::string(AMP_TORCH_TEST_DATA) + "/scaler_state.pt";
}

TEST(Scaler, LoadsAStateSavedByPython) {
  amp::GradScaler s;
  amp::load_scaler_state(s, python_scaler_state());
  EXPECT_EQ(s.get_scale(), 4096.0);
  EXPECT_EQ(s.get_growth_factor(), 3.0);
  EXPECT_EQ(s.get_backoff_factor(), 0.25);
  EXPECT_EQ(s.get_growth_interval(), 1000);
  EXPECT_EQ(s.get_growth_tracker(), 17);
  // The run resumes: the first scale() uses the loaded scale.
  EXPECT_EQ(s.scale(torch::tensor(1.0)).item<double>(), 4096.0);
}

TEST(Scaler, CheckpointRoundTripInPythonsFormat) {
  amp::GradScaler a(amp::GradScalerOptions().init_scale(8.0).growth_interval(3));
  a.scale(torch::tensor(1.0));
  auto p = torch::zeros({1}, torch::requires_grad());
  torch::optim::SGD opt({p}, 0.1);
  for (int i = 0; i < 2; ++i) { // two clean steps: tracker 2
    std::vector<Tensor> grads{torch::ones({1})};
    a.step(opt, grads);
    a.update();
  }
  const auto bytes = amp::scaler_state_bytes(a);
  // What Python's torch.load sees: a plain dict, ints where PyTorch's state_dict has ints.
  auto dict = torch::pickle_load(bytes).toGenericDict();
  EXPECT_EQ(dict.size(), 5u);
  EXPECT_TRUE(dict.at("growth_interval").isInt());
  EXPECT_TRUE(dict.at("_growth_tracker").isInt());
  EXPECT_TRUE(dict.at("scale").isDouble());
  EXPECT_EQ(dict.at("_growth_tracker").toInt(), 2);
  amp::GradScaler b;
  amp::load_scaler_state_bytes(b, bytes);
  EXPECT_EQ(b.state_dict(), a.state_dict());
  const std::string path = ::testing::TempDir() + "amp_scaler_state_test.pt";
  amp::save_scaler_state(a, path);
  amp::GradScaler c;
  amp::load_scaler_state(c, path);
  EXPECT_EQ(c.state_dict(), a.state_dict());
  std::remove(path.c_str());
}

TEST(Scaler, CheckpointErrorsNameTheFile) {
  amp::GradScaler s;
  auto message = [&](const std::function<void()> &f) {
    try {
      f();
    } catch (const std::runtime_error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { amp::load_scaler_state(s, "/nonexistent/x.pt"); })
                .find("cannot open /nonexistent/x.pt"),
            std::string::npos);
  const std::vector<char> junk{'n', 'o', 't', ' ', 'a', ' ', 'z', 'i', 'p'};
  EXPECT_NE(message([&] { amp::load_scaler_state_bytes(s, junk, "junk.pt"); })
                .find("junk.pt: not a file written by torch.save"),
            std::string::npos);
  amp::GradScaler disabled(amp::GradScalerOptions().enabled(false));
  const auto empty = amp::scaler_state_bytes(disabled);
  EXPECT_NE(message([&] { amp::load_scaler_state_bytes(s, empty, "empty.pt"); })
                .find("empty.pt: amp::GradScaler::load_state_dict: the source state dict is empty"),
            std::string::npos);
  EXPECT_EQ(s.get_scale(), 65536.0); // nothing loaded
}

// ---- value_and_grad ---------------------------------------------------------------------------
TEST(ValueAndGrad, MatchesBackwardAndLeavesGradAlone) {
  torch::manual_seed(0);
  Mlp model;
  auto x = torch::randn({5, 8});
  auto y = torch::randint(0, 4, {5}, torch::kLong);
  auto ref = backward_grads(model, x, y);
  for (auto &p : model->parameters())
    p.mutable_grad() = Tensor();
  auto grad_fn = amp::value_and_grad(
      [&](const Tensor &in) { return torch::nll_loss(model->forward(in), y); },
      model->parameters());
  auto [value, grads] = grad_fn(x);
  EXPECT_FALSE(value.requires_grad());
  ASSERT_EQ(grads.size(), ref.size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    EXPECT_TRUE(torch::allclose(grads[i], ref[i], 1e-5, 1e-6)) << i;
    EXPECT_FALSE(model->parameters()[i].grad().defined());
  }
}

// Autograd hands one tensor to several inputs: `(a + b).sum()` gives a and b the same expanded
// ones. value_and_grad's grads, like `.grad`, are each dense memory of their own, so unscale_
// (in place) divides each once and the in-place clip accepts them.
TEST(ValueAndGrad, GradsHaveMemoryOfTheirOwn) {
  auto a = torch::full({4}, 1.0).requires_grad_();
  auto b = torch::full({4}, 2.0).requires_grad_();
  auto c = torch::ones({2, 3}).requires_grad_();
  torch::optim::SGD opt({a, b, c}, 1.0);
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(4.0));
  auto grad_fn = amp::value_and_grad(
      [&] { return scaler.scale((a + b).sum() * 8 + c.sum()); }, {a, b, c});
  auto [value, grads] = grad_fn();
  ASSERT_EQ(grads.size(), 3u);
  EXPECT_NE(grads[0].data_ptr(), grads[1].data_ptr());
  for (const auto &g : grads)
    EXPECT_TRUE(g.is_non_overlapping_and_dense());
  scaler.unscale_(opt, grads);
  EXPECT_TRUE(torch::equal(grads[0], torch::full({4}, 8.0)));
  EXPECT_TRUE(torch::equal(grads[1], torch::full({4}, 8.0)));
  EXPECT_TRUE(torch::equal(grads[2], torch::ones({2, 3})));
  amp::clip_by_global_norm_(grads, 1.0);
  scaler.step(opt, grads);
  scaler.update();
  EXPECT_NEAR(a.detach()[0].item<double>(), 1.0 - 8.0 / std::sqrt(2 * 4 * 64.0 + 6), 1e-5);
}

// A fresh dense grad from autograd is the grad itself: no copy per parameter per step (the
// memory the backward produced is the memory the list holds).
struct Doubling : torch::autograd::Function<Doubling> {
  static const void *produced;
  static Tensor forward(torch::autograd::AutogradContext *, const Tensor &x) { return x * 2; }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *,
                                                 torch::autograd::variable_list out) {
    auto g = out[0] * 2;
    produced = g.data_ptr();
    return {g};
  }
};
const void *Doubling::produced = nullptr;

TEST(ValueAndGrad, FreshDenseGradsAreNotCopied) {
  auto w = torch::randn({16, 8}).requires_grad_();
  auto grad_fn = amp::value_and_grad([&] { return Doubling::apply(w).sum(); }, {w});
  auto [value, grads] = grad_fn();
  ASSERT_NE(Doubling::produced, nullptr);
  EXPECT_EQ(grads[0].data_ptr(), Doubling::produced);
  EXPECT_TRUE(torch::equal(grads[0], torch::full({16, 8}, 2.0)));
}

// A frozen parameter (requires_grad_(false)) left in an optimizer with weight decay: backward()
// gave it no .grad and AdamW skipped it; its zero grad from value_and_grad must not move it.
TEST(Step, FrozenParametersStayWhereTheyAre) {
  auto frozen = torch::ones({3});
  auto trained = torch::ones({3}, torch::requires_grad());
  torch::optim::AdamW opt({frozen, trained}, torch::optim::AdamWOptions(0.1).weight_decay(0.5));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(2.0));
  for (int i = 0; i < 3; ++i) {
    auto grad_fn = amp::value_and_grad([&] { return scaler.scale((trained * trained).sum()); },
                                       amp::parameters_of(opt));
    auto [loss, grads] = grad_fn();
    ASSERT_EQ(grads.size(), 2u);
    scaler.unscale_(opt, grads);
    scaler.step(opt, grads);
    scaler.update();
    auto plain = amp::value_and_grad([&] { return (trained * trained).sum(); },
                                     amp::parameters_of(opt))();
    amp::step(opt, plain.second);
  }
  EXPECT_TRUE(frozen.equal(torch::ones({3})));
  EXPECT_FALSE(frozen.grad().defined());
  EXPECT_LT(trained[0].item<double>(), 1.0);
}

TEST(ValueAndGrad, UnusedParametersGetZeros) {
  Probe model;
  auto grad_fn = amp::value_and_grad(
      [&] { return std::get<0>(model->forward(torch::randn({4, 6}))).sum(); },
      model->parameters());
  auto [value, grads] = grad_fn();
  auto names = model->named_parameters();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i].key() == "unused") {
      EXPECT_TRUE(torch::equal(grads[i], torch::zeros({3})));
    }
}

// A GAN's generator output made in the discriminator's value_and_grad and differentiated in the
// generator's: at O1 the generator gets its grads; at O2 the graph ran on weight copies swapped
// out when the first call returned, so the second call throws rather than training on zeros.
TEST(ValueAndGrad, GraphFromAnEarlierCallAtO2IsAnError) {
  for (auto level : {amp::Level::O1, amp::Level::O2, amp::Level::O3}) {
    torch::manual_seed(0);
    torch::nn::Linear gen(8, 8), disc(8, 1);
    auto amp_gen = amp::auto_mixed_precision(gen, level);
    auto amp_disc = amp::auto_mixed_precision(disc, level);
    auto noise = torch::randn({4, 8});
    Tensor fake;
    auto d_step = amp::value_and_grad([&] {
      fake = amp::cast_to_adapter_tensor(amp_gen(noise));
      return amp::cast_to_adapter_tensor(amp_disc(fake.detach())).sum();
    }, disc->parameters());
    auto d = d_step();
    EXPECT_GT(d.second[0].abs().sum().item<double>(), 0.0);
    auto g_step = amp::value_and_grad(
        [&] { return amp::cast_to_adapter_tensor(amp_disc(fake)).sum(); }, gen->parameters());
    if (level == amp::Level::O1) {
      auto g = g_step();
      EXPECT_GT(g.second[0].abs().sum().item<double>(), 0.0);
      continue;
    }
    std::string msg;
    try {
      g_step();
    } catch (const amp::Error &e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find("differentiated through the output of an O2/O3 model's forward that ran "
                       "outside this call"), std::string::npos) << msg;
    EXPECT_EQ(gen->weight.scalar_type(), torch::kFloat); // the masters are back
    // A parameter the loss does not use still gets zeros (no graph reaches a stale accumulator).
    auto unused = amp::value_and_grad(
        [&] { return amp::cast_to_adapter_tensor(amp_disc(noise)).sum(); }, gen->parameters());
    EXPECT_TRUE(torch::equal(unused().second[0], torch::zeros_like(gen->weight)));
  }
}

TEST(ValueAndGrad, AccumulateGrads) {
  std::vector<Tensor> acc;
  amp::accumulate_grads(acc, {torch::ones({2})});
  amp::accumulate_grads(acc, {torch::full({2}, 2.0)});
  EXPECT_TRUE(torch::allclose(acc[0], torch::full({2}, 3.0)));
  EXPECT_THROW(amp::accumulate_grads(acc, {}), std::runtime_error);
}

// ---- several optimizers, one loss (the form amp-migrate emits for them) ----------------------
/// One SGD step of an Mlp, fc1 with learning rate 0.1 and fc2 with 0.2, however the optimizers
/// are split: the expected parameters after it, from fp32 .backward() grads.
struct TwoRateStep {
  Mlp model;
  Tensor x, y;
  std::vector<Tensor> expected;
  TwoRateStep() {
    torch::manual_seed(0);
    x = torch::randn({5, 8});
    y = torch::randint(0, 4, {5}, torch::kLong);
    auto ref = backward_grads(model, x, y);
    auto params = model->parameters();
    for (std::size_t i = 0; i < params.size(); ++i)
      expected.push_back(params[i].detach().clone() - (i < 2 ? 0.1 : 0.2) * ref[i]);
  }
  Tensor scaled_loss(amp::GradScaler &scaler) { return scaler.scale(torch::nll_loss(model->forward(x), y)); }
  void expect_stepped() {
    auto after = model->parameters();
    for (std::size_t i = 0; i < after.size(); ++i)
      EXPECT_TRUE(torch::allclose(after[i].detach(), expected[i], 1e-5, 1e-6)) << i;
  }
};

TEST(MultiOptimizer, ParametersOfAndSplitGradsStepEachOptimizer) {
  TwoRateStep t;
  torch::optim::SGD opt_a(t.model->fc1->parameters(), 0.1);
  auto opt_b = std::make_shared<torch::optim::SGD>(t.model->fc2->parameters(), 0.2);
  auto params = amp::parameters_of(opt_a, opt_b);
  ASSERT_EQ(params.size(), 4u);
  EXPECT_TRUE(params[0].is_same(t.model->fc1->weight));
  EXPECT_TRUE(params[3].is_same(t.model->fc2->bias));

  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(8.0));
  auto grad_fn = amp::value_and_grad([&] { return t.scaled_loss(scaler); }, amp::parameters_of(opt_a, opt_b));
  auto [scaled_loss, grads] = grad_fn();
  auto [grads_a, grads_b] = amp::split_grads(grads, opt_a, opt_b);
  ASSERT_EQ(grads_a.size(), 2u);
  ASSERT_EQ(grads_b.size(), 2u);
  scaler.unscale_(opt_a, grads_a);
  scaler.step(opt_a, grads_a);
  scaler.step(opt_b, grads_b); // unscales itself
  scaler.update();
  t.expect_stepped();
  auto msg = message_of([&] { amp::split_grads(grads_a, opt_a, opt_b); });
  EXPECT_NE(msg.find("amp::split_grads: 2 grads do not pair up with the optimizers' 4 parameters"),
            std::string::npos)
      << msg;
}

// value_and_grad over amp::parameters_of(opt) covers every param group of one optimizer (what the
// tool emits; Optimizer::parameters() would be the first group only).
TEST(MultiOptimizer, EveryParamGroupOfOneOptimizer) {
  TwoRateStep t;
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(t.model->fc1->parameters(), std::make_unique<torch::optim::SGDOptions>(0.1));
  groups.emplace_back(t.model->fc2->parameters(), std::make_unique<torch::optim::SGDOptions>(0.2));
  torch::optim::SGD optimizer(groups, torch::optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(4.0));
  auto grad_fn = amp::value_and_grad([&] { return t.scaled_loss(scaler); }, amp::parameters_of(optimizer));
  auto [scaled_loss, grads] = grad_fn();
  ASSERT_EQ(grads.size(), 4u);
  scaler.step(optimizer, grads);
  scaler.update();
  t.expect_stepped();
}

// ---- levels -----------------------------------------------------------------------------------
// The loss function converts the model itself, on every call (the tool's form when the scope was
// in the function the step calls): its handle dies before value_and_grad's backward, and the
// masters must still come back, every step.
TEST(Levels, ConversionInsideTheLossFunctionKeepsFp32Masters) {
  torch::manual_seed(0);
  Mlp model;
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto x = torch::randn({16, 8});
  auto y = torch::randint(0, 4, {16}, torch::kLong);
  auto loss_of = [&](Mlp &m) {
    auto amp_model = amp::auto_mixed_precision(m, amp::Level::O2);
    return torch::nll_loss(amp::cast_to_adapter_tensor(amp_model->forward(x)), y);
  };
  amp::GradScaler scaler;
  double first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      loss = loss_of(model);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    scaler.step(optimizer, grads);
    scaler.update();
    for (const auto &p : model->parameters())
      ASSERT_EQ(p.scalar_type(), torch::kFloat) << "step " << step;
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first);
}

TEST(Levels, ParseAndErrors) {
  EXPECT_EQ(amp::parse_level("O2"), amp::Level::O2);
  EXPECT_EQ(amp::parse_level("o3"), amp::Level::O3);
  auto msg = message_of([] { amp::parse_level("O4"); });
  EXPECT_NE(msg.find("O0, O1, O2, O3"), std::string::npos) << msg;
  Mlp model;
  EXPECT_THROW(amp::auto_mixed_precision(model, "fast"), std::runtime_error);
}

TEST(Levels, DtypesSeenInForward) {
  auto x = torch::randn({4, 6});
  struct Expect {
    const char *level;
    torch::Dtype input, weight, linear;
  } cases[] = {{"O0", torch::kFloat, torch::kFloat, torch::kFloat},
               {"O1", torch::kFloat, torch::kFloat, torch::kBFloat16},
               {"O2", torch::kBFloat16, torch::kBFloat16, torch::kBFloat16},
               {"O3", torch::kBFloat16, torch::kBFloat16, torch::kBFloat16}};
  for (const auto &c : cases) {
    Probe model;
    auto amp_model = amp::auto_mixed_precision(model, c.level);
    auto [y, h] = amp_model->forward(x);
    EXPECT_EQ(model->input_dtype, c.input) << c.level;
    EXPECT_EQ(model->weight_dtype, c.weight) << c.level;
    EXPECT_EQ(model->linear_dtype, c.linear) << c.level;
    EXPECT_EQ(y.scalar_type(), torch::kFloat) << c.level; // outputs fp32 at every level
    EXPECT_EQ(h.scalar_type(), torch::kFloat) << c.level;
    if (std::string(c.level) == "O2") {
      EXPECT_EQ(model->bn_weight_dtype, torch::kFloat); // norm layers stay fp32
    }
    for (const auto &p : model->parameters())             // masters back after forward
      EXPECT_EQ(p.scalar_type(), torch::kFloat) << c.level;
  }
}

// An autocast scope of one device type (CUDA's `set_enabled(true)`) did nothing for a model left
// on the CPU: converted for CUDA only, a CPU model trains in fp32 as it did.
TEST(Levels, DeviceTypeLimitsTheLevel) {
  auto x = torch::randn({4, 6});
  for (const char *level : {"O1", "O2", "O3"}) {
    Probe model;
    auto amp_model = amp::auto_mixed_precision(model, level, torch::kCUDA);
    EXPECT_EQ(amp_model.level(), amp::Level::O0) << level;
    amp_model->forward(x);
    EXPECT_EQ(model->input_dtype, torch::kFloat) << level;
    EXPECT_EQ(model->weight_dtype, torch::kFloat) << level;
    EXPECT_EQ(model->linear_dtype, torch::kFloat) << level;
    // The same request again is the same conversion; another device type is not.
    EXPECT_NO_THROW(amp::auto_mixed_precision(model, level, torch::kCUDA));
    EXPECT_THROW(amp::auto_mixed_precision(model, level), std::runtime_error);
  }
  Probe cpu;
  auto on_cpu = amp::auto_mixed_precision(cpu, amp::Level::O1, torch::kBFloat16, torch::kCPU);
  EXPECT_EQ(on_cpu.level(), amp::Level::O1);
  on_cpu->forward(x);
  EXPECT_EQ(cpu->linear_dtype, torch::kBFloat16);
}

TEST(Levels, LayerNormAtO2DoesNotHitTheAutocastTrap) {
  for (const char *level : {"O2", "O3"}) {
    auto m = torch::nn::Sequential(torch::nn::Linear(8, 8),
                                   torch::nn::LayerNorm(torch::nn::LayerNormOptions({8})),
                                   torch::nn::GroupNorm(2, 8), torch::nn::Linear(8, 2));
    auto amp_model = amp::auto_mixed_precision(m, level);
    Tensor out;
    EXPECT_NO_THROW(out = amp_model(torch::randn({3, 8}))) << level;
    EXPECT_EQ(out.scalar_type(), torch::kFloat);
  }
}

TEST(Levels, ConversionIsIdempotentPerModule) {
  Mlp model;
  auto a = amp::auto_mixed_precision(model, amp::Level::O2);
  auto b = amp::auto_mixed_precision(model, amp::Level::O2);
  auto c = amp::auto_mixed_precision(*model, amp::Level::O2); // Module&: non-owning
  EXPECT_EQ(&c.module(), model.get());
  EXPECT_THROW(amp::auto_mixed_precision(model, amp::Level::O3), std::runtime_error);
  auto x = torch::randn({2, 8});
  EXPECT_TRUE(torch::equal(a(x), b.forward(x)));
  EXPECT_TRUE(torch::equal(a(x), c->forward(x)));
  EXPECT_EQ(a.level(), amp::Level::O2);
}

TEST(Levels, NoGradForwardAndSharedPtr) {
  auto model = std::make_shared<MlpImpl>();
  auto amp_model = amp::auto_mixed_precision(model, amp::Level::O3);
  torch::NoGradGuard no_grad;
  auto out = amp_model->forward(torch::randn({2, 8}));
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  EXPECT_EQ(amp_model.module().get(), model.get());
}

/// Trains with the exact code the migration tool emits; checks fp32 masters, fp32 grads, that
/// the momentum state stays attached to the parameters, and that the loss falls.
void train_emitted_form(amp::Level level, bool optimizer_first) {
  torch::manual_seed(1);
  Mlp model;
  auto data = torch::randn({64, 8});
  auto target = (data.narrow(1, 0, 4).argmax(1)).to(torch::kLong);
  model->train();
  std::unique_ptr<torch::optim::SGD> early;
  if (optimizer_first)
    early = std::make_unique<torch::optim::SGD>(model->parameters(),
                                                torch::optim::SGDOptions(0.1).momentum(0.9));
  auto amp_model = amp::auto_mixed_precision(model, level);
  torch::optim::SGD late(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::SGD &optimizer = optimizer_first ? *early : late;
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024.0).growth_interval(100));
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    torch::Tensor loss;
    auto grad_fn = amp::value_and_grad([&] {
      auto output = amp::cast_to_adapter_tensor(amp_model->forward(data));
      loss = torch::nll_loss(output, target);
      return scaler.scale(loss);
    }, amp::parameters_of(optimizer));
    auto [scaled_loss, grads] = grad_fn();
    for (const auto &g : grads)
      ASSERT_EQ(g.scalar_type(), torch::kFloat);
    scaler.unscale_(optimizer, grads);
    auto norm = amp::global_norm(grads).item<double>();
    EXPECT_TRUE(std::isfinite(norm));
    grads = amp::clip_by_global_norm(grads, 5.0);
    scaler.step(optimizer, grads);
    scaler.update();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.7 * first) << amp::level_name(level);
  for (const auto &p : optimizer.parameters()) {
    EXPECT_EQ(p.scalar_type(), torch::kFloat);
    EXPECT_FALSE(p.grad().defined());
  }
  EXPECT_EQ(optimizer.state().size(), optimizer.parameters().size()); // momentum per param
}

TEST(Levels, TrainsWithFp32MastersAtEveryLevel) {
  for (auto level : {amp::Level::O0, amp::Level::O1, amp::Level::O2, amp::Level::O3}) {
    train_emitted_form(level, true);
    train_emitted_form(level, false);
  }
}

TEST(Levels, O2GradsCloseToFp32Grads) {
  torch::manual_seed(2);
  Mlp model;
  auto x = torch::randn({32, 8});
  auto y = torch::randint(0, 4, {32}, torch::kLong);
  auto ref = backward_grads(model, x, y);
  auto amp_model = amp::auto_mixed_precision(model, "O2");
  auto [value, grads] = amp::value_and_grad(
      [&] { return torch::nll_loss(amp::cast_to_adapter_tensor(amp_model(x)), y); },
      model->parameters())();
  for (std::size_t i = 0; i < grads.size(); ++i) {
    EXPECT_EQ(grads[i].scalar_type(), torch::kFloat);
    EXPECT_LT(max_rel_diff(grads[i], ref[i]), 5e-2) << i;
  }
}

TEST(Adapter, CastsContainers) {
  auto t = torch::ones({2}, torch::kBFloat16);
  EXPECT_EQ(amp::cast_to_adapter_tensor(t).scalar_type(), torch::kFloat);
  auto tup = amp::cast_to_adapter_tensor(std::make_tuple(t, torch::ones({1}, torch::kLong)));
  EXPECT_EQ(std::get<0>(tup).scalar_type(), torch::kFloat);
  EXPECT_EQ(std::get<1>(tup).scalar_type(), torch::kLong);
  auto vec = amp::cast_to_adapter_tensor(std::vector<Tensor>{t, t.to(torch::kHalf)});
  EXPECT_EQ(vec[1].scalar_type(), torch::kFloat);
}

// A forward's aggregate result: every tensor field cast, scalars and fp32/integer tensors kept.
struct HeadsOutput {
  Tensor logits;
  std::vector<Tensor> aux;
  std::tuple<Tensor, Tensor> pair;
  Tensor mask;
  double weight;
};
struct OneField {
  Tensor x;
};

TEST(Adapter, CastsAggregateFields) {
  static_assert(amp::detail::aggregate_fields<HeadsOutput>() == 5);
  static_assert(amp::detail::aggregate_fields<OneField>() == 1);
  auto t = torch::ones({2}, torch::kBFloat16) * 1.5;
  HeadsOutput in{t, {t.to(torch::kHalf)}, {t, t}, torch::zeros({2}, torch::kBool), 0.25};
  HeadsOutput out = amp::cast_to_adapter_tensor(in);
  EXPECT_EQ(out.logits.scalar_type(), torch::kFloat);
  EXPECT_TRUE(out.logits.equal(torch::full({2}, 1.5)));
  ASSERT_EQ(out.aux.size(), 1u);
  EXPECT_EQ(out.aux[0].scalar_type(), torch::kFloat);
  EXPECT_EQ(std::get<0>(out.pair).scalar_type(), torch::kFloat);
  EXPECT_EQ(std::get<1>(out.pair).scalar_type(), torch::kFloat);
  EXPECT_EQ(out.mask.scalar_type(), torch::kBool);
  EXPECT_EQ(out.weight, 0.25);
  EXPECT_EQ(in.logits.scalar_type(), torch::kBFloat16); // the argument is left as it was
  EXPECT_EQ(amp::cast_to_adapter_tensor(OneField{t}).x.scalar_type(), torch::kFloat);
  // The gradient flows through the cast, as for a tensor result.
  auto w = torch::ones({2}, torch::requires_grad());
  auto y = amp::cast_to_adapter_tensor(OneField{(w * 2).to(torch::kBFloat16)}).x.sum();
  y.backward();
  EXPECT_TRUE(w.grad().equal(torch::full({2}, 2.0)));
}

} // namespace

// ---- the CPU step cache ---------------------------------------------------------------------------
namespace {
/// One step of a 300 -> 700 linear layer: its weight's grad (840,000 bytes) is the only block of
/// that size the step allocates.
std::pair<torch::Tensor, std::vector<torch::Tensor>> linear_step(torch::nn::Linear &layer,
                                                                 const torch::Tensor &x) {
  auto grad_fn = amp::value_and_grad([&] { return layer->forward(x).pow(2).mean(); },
                                     layer->parameters());
  return grad_fn();
}
} // namespace

TEST(StepCache, LargeBlocksOfTheStepAreReusedAndGradsStayExact) {
  torch::manual_seed(3);
  torch::nn::Linear layer(300, 700);
  auto x = torch::randn({64, 300});
  auto reference = [&] {
    layer->zero_grad();
    layer->forward(x).pow(2).mean().backward();
    auto g = layer->weight.grad().clone();
    layer->zero_grad();
    return g;
  }();
  auto before = amp::cpu_step_cache_stats();
  void *first = nullptr, *third = nullptr;
  {
    auto [loss, grads] = linear_step(layer, x);
    first = grads[0].data_ptr();
    EXPECT_TRUE(torch::allclose(grads[0], reference));
  } // the grads go back to the cache here
  auto after_first = amp::cpu_step_cache_stats();
  EXPECT_GT(after_first.misses, before.misses);
  EXPECT_GT(after_first.cached_bytes, 0u);
  { auto step = linear_step(layer, x); }
  auto after_second = amp::cpu_step_cache_stats();
  {
    auto [loss, grads] = linear_step(layer, x);
    third = grads[0].data_ptr();
    EXPECT_TRUE(torch::allclose(grads[0], reference));
  }
  auto after_third = amp::cpu_step_cache_stats();
  EXPECT_EQ(third, first); // the same block served the same grad
  EXPECT_EQ(after_third.misses, after_second.misses); // a steady step allocates no large block
  EXPECT_GT(after_third.hits, after_second.hits);
  EXPECT_LE(after_third.cached_bytes + after_third.live_bytes, 2 * after_third.peak_live_bytes);
}

// A batch size that changes leaves blocks of the old sizes: they go when two steps pass without
// asking for them, and meanwhile cached plus in use stays within twice the peak in use.


TEST(StepCache, AllocationsOutsideValueAndGradAreNotCached) {
  auto before = amp::cpu_step_cache_stats();
  {
    auto big = torch::empty({1 << 20}); // 4 MiB, outside any step
    big.fill_(1.0f);
  }
  auto after = amp::cpu_step_cache_stats();
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
}

TEST(StepCache, BoundedWhenSizesChange) {
  torch::nn::Linear layer(256, 512);
  amp::empty_cpu_step_cache();
  for (int batch : {200, 64, 96, 128, 160, 32, 200, 64}) {
    auto [loss, grads] = linear_step(layer, torch::randn({batch, 256}));
    auto s = amp::cpu_step_cache_stats();
    EXPECT_LE(s.cached_bytes + s.live_bytes, 2 * s.peak_live_bytes);
  }
  auto steady = amp::cpu_step_cache_stats();
  for (int i = 0; i < 3; ++i) {
    auto step = linear_step(layer, torch::randn({64, 256}));
  }
  auto s = amp::cpu_step_cache_stats();
  // Only the batch-64 step's blocks are left (the 200-row ones were not asked for again).
  EXPECT_LT(s.cached_bytes, steady.cached_bytes);
  EXPECT_EQ(s.misses, steady.misses);
}

TEST(StepCache, RawAllocationsInsideAStepGoBackWhereTheyCameFrom) {
  torch::nn::Linear layer(300, 700);
  auto x = torch::randn({8, 300});
  auto grad_fn = amp::value_and_grad(
      [&] {
        c10::Allocator *a = c10::GetCPUAllocator();
        void *big = a->raw_allocate(1 << 20);
        void *small = a->raw_allocate(64);
        std::memset(big, 0, 1 << 20);
        a->raw_deallocate(big);
        a->raw_deallocate(small);
        return layer->forward(x).sum();
      },
      layer->parameters());
  auto [loss, grads] = grad_fn();
  EXPECT_EQ(grads.size(), 2u);
  void *outside = c10::GetCPUAllocator()->raw_allocate(1 << 20);
  c10::GetCPUAllocator()->raw_deallocate(outside);
}

TEST(StepCache, EmptyAndDisabled) {
  torch::nn::Linear layer(300, 700);
  auto x = torch::randn({64, 300});
  { auto step = linear_step(layer, x); }
  EXPECT_GT(amp::cpu_step_cache_stats().cached_bytes, 0u);
  amp::empty_cpu_step_cache();
  EXPECT_EQ(amp::cpu_step_cache_stats().cached_bytes, 0u);
  amp::set_cpu_step_cache_enabled(false);
  auto off = amp::cpu_step_cache_stats();
  { auto step = linear_step(layer, x); }
  auto after = amp::cpu_step_cache_stats();
  EXPECT_EQ(after.cached_bytes, 0u);
  EXPECT_EQ(after.hits + after.misses, off.hits + off.misses);
  amp::set_cpu_step_cache_enabled(true);
}

// Every micro-batch of an accumulation window skipped (a non-finite loss each time): nothing was
// accumulated and the migrated step hands an empty grads list to the scaler. The original stepped
// with every .grad unset after zero_grad(): no parameter moves, and training goes on.
TEST(Step, EmptyGradsMoveNothing) {
  auto w = torch::ones({4}, torch::requires_grad());
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(8.0));
  std::vector<torch::Tensor> none;
  scaler.scale(torch::ones({})); // the window's skipped micro-batches scaled their losses
  scaler.unscale_(opt, none);
  scaler.step(opt, none);
  scaler.update();
  EXPECT_TRUE(w.equal(torch::ones({4})));
  amp::step(opt, none);
  EXPECT_TRUE(w.equal(torch::ones({4})));
  EXPECT_FALSE(w.grad().defined());
  // The next window has grads again.
  auto grad_fn = amp::value_and_grad([&] { return scaler.scale((w * w).sum()); }, amp::parameters_of(opt));
  auto [loss, grads] = grad_fn();
  scaler.step(opt, grads);
  EXPECT_LT(w[0].item<double>(), 1.0);
}
