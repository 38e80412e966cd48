// The differential check's harness (test/differential/run.py): runs a function of a lit input and
// the same function as the tool migrated it, each on the same freshly built arguments, and records
// what the program computes: after each call, every model's parameters and the call's result.
//
// Arguments are made from the parameter types alone: a module holder (`Net`) gets a new module
// whose forward is the harness's (a Linear 4 -> 4 registered on first use); an optimizer is built
// over the parameters of the model of the same position (the first model if there are fewer);
// a scaler is default-constructed; tensors are a batch and targets of the forward's shape;
// numbers are small constants, a non-const number reference is a fresh variable. A function with
// any other parameter type is not run (the run says so).
#pragma once

#include "scaler.h"

#include <amp/torch.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace amp_diff {

constexpr int64_t kWidth = 4;
constexpr int64_t kBatch = 8;
constexpr int kCalls = 4;

/// The harness's model body: what a lit input's declared-only `NetImpl::forward` runs.
inline torch::Tensor forward(torch::nn::Module &m, const torch::Tensor &x) {
  if (!m.named_children().contains("amp_diff_linear"))
    m.register_module("amp_diff_linear", torch::nn::Linear(kWidth, kWidth));
  return m.named_children()["amp_diff_linear"]->as<torch::nn::Linear>()->forward(x);
}

/// What one run computed, in order: parameter sums after each call, then each result.
struct Trace {
  std::vector<double> values;
  std::string skipped; // why the function was not run (a parameter type the harness cannot make)
  std::string error;   // what it threw
};

struct Fixture {
  std::vector<std::vector<torch::Tensor>> models; // each model's parameters, in argument order
  int optimizers = 0;
  int tensors = 0;
  bool classTargets = false; // tensors after the first are class indices (nll_loss, cross_entropy)
  std::vector<std::shared_ptr<void>> keep;

  torch::Tensor tensor() {
    int i = tensors++;
    if (i == 0)
      return torch::randn({kBatch, kWidth});
    return classTargets ? torch::randint(kWidth, {kBatch}, torch::kLong) : torch::randn({kBatch, kWidth}) * (0.5 + i);
  }
  int optimizerCount = 0; // in the signature
  /// The i-th optimizer's parameters: the i-th model's, or, with fewer models than optimizers
  /// (an encoder/decoder split of one model), every optimizerCount-th parameter of the first.
  std::vector<torch::Tensor> paramsForOptimizer() {
    int i = optimizers++;
    if (models.size() >= static_cast<size_t>(optimizerCount))
      return models.at(i);
    std::vector<torch::Tensor> part;
    for (size_t k = i; k < models.at(0).size(); k += optimizerCount)
      part.push_back(models[0][k]);
    return part;
  }
};

template <class T> using Bare = std::remove_cv_t<std::remove_reference_t<T>>;

template <class T, class = void> struct IsHolder : std::false_type {};
template <class T>
struct IsHolder<T, std::void_t<typename T::ContainedType>>
    : std::is_base_of<torch::nn::ModuleHolder<typename T::ContainedType>, T> {};

/// Makes one argument of type P (a parameter type, reference or not); `ok` says whether it can.
template <class P, class = void> struct Maker {
  static constexpr bool ok = false;
};

// Models are made first (phase 0), so that optimizers find their parameters whatever the order.
template <class P> struct Maker<P, std::enable_if_t<IsHolder<Bare<P>>::value>> {
  static constexpr bool ok = true;
  static constexpr int phase = 0;
  static Bare<P> &make(Fixture &fx) {
    auto h = std::make_shared<Bare<P>>();
    {
      torch::NoGradGuard no_grad;
      (*h)->forward(torch::zeros({1, kWidth})); // registers the harness's layer
    }
    fx.models.push_back((*h)->parameters());
    fx.keep.push_back(h);
    return *h;
  }
};

template <class O, class Options> struct OptimizerMaker {
  static constexpr bool ok = true;
  static constexpr bool optimizer = true;
  static constexpr int phase = 1;
  static O &make(Fixture &fx, double lr) {
    auto o = std::make_shared<O>(fx.paramsForOptimizer(), Options(lr));
    fx.keep.push_back(o);
    return *o;
  }
};
template <class P>
struct Maker<P, std::enable_if_t<std::is_same_v<Bare<P>, torch::optim::SGD>>>
    : OptimizerMaker<torch::optim::SGD, torch::optim::SGDOptions> {
  static torch::optim::SGD &make(Fixture &fx) { return OptimizerMaker::make(fx, 0.05); }
};
template <class P>
struct Maker<P, std::enable_if_t<std::is_same_v<Bare<P>, torch::optim::Adam>>>
    : OptimizerMaker<torch::optim::Adam, torch::optim::AdamOptions> {
  static torch::optim::Adam &make(Fixture &fx) { return OptimizerMaker::make(fx, 0.01); }
};
template <class P>
struct Maker<P, std::enable_if_t<std::is_same_v<Bare<P>, torch::optim::AdamW>>>
    : OptimizerMaker<torch::optim::AdamW, torch::optim::AdamWOptions> {
  static torch::optim::AdamW &make(Fixture &fx) { return OptimizerMaker::make(fx, 0.01); }
};

template <class S> struct IsScaler : std::false_type {};
template <> struct IsScaler<::amp::GradScaler> : std::true_type {};
template <> struct IsScaler<torch::amp::GradScaler> : std::true_type {};

template <class P> struct Maker<P, std::enable_if_t<IsScaler<Bare<P>>::value>> {
  static constexpr bool ok = true;
  static constexpr int phase = 1;
  static Bare<P> &make(Fixture &fx) {
    auto s = std::make_shared<Bare<P>>();
    fx.keep.push_back(s);
    return *s;
  }
};
// A scaler passed by pointer.
template <class P>
struct Maker<P, std::enable_if_t<std::is_pointer_v<Bare<P>> &&
                                 IsScaler<std::remove_cv_t<std::remove_pointer_t<Bare<P>>>>::value>> {
  static constexpr bool ok = true;
  static constexpr int phase = 1;
  using S = std::remove_cv_t<std::remove_pointer_t<Bare<P>>>;
  static S *make(Fixture &fx) { return &Maker<S &>::make(fx); }
};

template <class P> struct Maker<P, std::enable_if_t<std::is_same_v<Bare<P>, torch::Tensor>>> {
  static constexpr bool ok = true;
  static constexpr int phase = 1;
  static torch::Tensor &make(Fixture &fx) {
    auto t = std::make_shared<torch::Tensor>(fx.tensor());
    fx.keep.push_back(t);
    return *t;
  }
};
template <class P>
struct Maker<P, std::enable_if_t<std::is_same_v<Bare<P>, std::vector<torch::Tensor>>>> {
  static constexpr bool ok = true;
  static constexpr int phase = 1;
  static std::vector<torch::Tensor> &make(Fixture &fx) {
    auto v = std::make_shared<std::vector<torch::Tensor>>();
    torch::Tensor all = fx.tensor();
    v->push_back(all.slice(0, 0, kBatch / 2));
    v->push_back(all.slice(0, kBatch / 2, kBatch));
    fx.keep.push_back(v);
    return *v;
  }
};
// Numbers: by value a small constant (true for a flag); a non-const reference a fresh 0.
template <class P> struct Maker<P, std::enable_if_t<std::is_arithmetic_v<Bare<P>>>> {
  static constexpr bool ok = true;
  static constexpr int phase = 1;
  static Bare<P> &make(Fixture &fx) {
    constexpr bool out = std::is_lvalue_reference_v<P> && !std::is_const_v<std::remove_reference_t<P>>;
    auto v = std::make_shared<Bare<P>>(out ? Bare<P>(0) : std::is_same_v<Bare<P>, bool> ? Bare<P>(1) : Bare<P>(2));
    fx.keep.push_back(v);
    return *v;
  }
};

inline double sumOf(const std::vector<torch::Tensor> &ps) {
  double s = 0;
  for (const auto &p : ps)
    s += p.detach().to(torch::kDouble).abs().sum().item<double>() + p.detach().to(torch::kDouble).sum().item<double>();
  return s;
}

template <class R> void record(Trace &t, const R &r) {
  if constexpr (std::is_arithmetic_v<R>)
    t.values.push_back(static_cast<double>(r));
  else if constexpr (std::is_same_v<R, torch::Tensor>)
    t.values.push_back(r.defined() ? r.detach().to(torch::kDouble).sum().template item<double>() : 0.0);
}

template <class P, class = void> struct IsOptimizerArg : std::false_type {};
template <class P> struct IsOptimizerArg<P, std::void_t<decltype(Maker<P>::optimizer)>> : std::true_type {};

template <class P> struct Slot {
  using M = Maker<P>;
  std::add_pointer_t<decltype(M::make(std::declval<Fixture &>()))> value = nullptr;
  void fill(Fixture &fx, int phase) {
    if (phase == M::phase)
      value = &M::make(fx);
  }
  decltype(auto) get() { return *value; }
};
template <class P> struct Slot<P *> { // pointers are made as values
  using M = Maker<P *>;
  P *value = nullptr;
  void fill(Fixture &fx, int phase) {
    if (phase == M::phase)
      value = M::make(fx);
  }
  P *get() { return value; }
};

template <class R, class... A> Trace run(R (*f)(A...), bool classTargets) {
  Trace t;
  if constexpr (!(Maker<A>::ok && ...)) {
    t.skipped = "a parameter type the harness cannot make";
    return t;
  } else {
    try {
      torch::manual_seed(0);
      Fixture fx;
      fx.classTargets = classTargets;
      fx.optimizerCount = (0 + ... + int(IsOptimizerArg<A>::value));
      std::tuple<Slot<A>...> slots;
      for (int phase = 0; phase < 2; ++phase)
        std::apply([&](auto &...s) { (s.fill(fx, phase), ...); }, slots);
      for (int call = 0; call < kCalls; ++call) {
        // The caller's loop clears .grad between steps, as training loops do (a function without
        // zero_grad() relies on it); the migrated side never reads .grad.
        for (const auto &m : fx.models)
          for (const auto &p : m)
            if (p.grad().defined())
              p.mutable_grad().zero_();
        if constexpr (std::is_void_v<R>)
          std::apply([&](auto &...s) { f(s.get()...); }, slots);
        else
          record(t, std::apply([&](auto &...s) -> R { return f(s.get()...); }, slots));
        for (const auto &m : fx.models)
          t.values.push_back(sumOf(m));
      }
    } catch (const std::exception &e) {
      t.error = e.what();
      if (auto nl = t.error.find('\n'); nl != std::string::npos)
        t.error.resize(nl);
    }
    return t;
  }
}

inline bool compare(const char *label, const Trace &a, const Trace &b);

/// Runs the original with float targets, or class-index targets if it throws with those, and the
/// migrated function with the same.
template <class F, class G> bool check(const char *label, F *original, G *migrated) {
  Trace a = run(original, false);
  bool classTargets = false;
  if (!a.error.empty()) {
    Trace c = run(original, true);
    if (c.error.empty()) {
      a = c;
      classTargets = true;
    } else if (c.error != a.error) {
      a.error = "with float targets: " + a.error + "; with class targets: " + c.error;
    }
  }
  return compare(label, a, run(migrated, classTargets));
}

/// Prints one line per function: `AMP_DIFF <label> same|differs|not-run|error ...` (run.py reads them).
inline bool compare(const char *label, const Trace &a, const Trace &b) {
  if (!a.skipped.empty() || !b.skipped.empty()) {
    std::printf("AMP_DIFF %s not-run %s\n", label, (a.skipped.empty() ? b.skipped : a.skipped).c_str());
    return true;
  }
  if (!a.error.empty()) {
    std::printf("AMP_DIFF %s not-run the original throws: %s\n", label, a.error.c_str());
    return true;
  }
  // The precondition amp-migrate writes where it cannot see the optimizer built (amp::check_holds):
  // a loud stop instead of a smaller clip norm, which run.py counts apart from a difference.
  if (b.error.rfind("amp::check_holds:", 0) == 0) {
    std::printf("AMP_DIFF %s stops %s\n", label, b.error.c_str());
    return true;
  }
  if (!b.error.empty()) {
    std::printf("AMP_DIFF %s differs the migrated function throws: %s\n", label, b.error.c_str());
    return false;
  }
  bool same = a.values.size() == b.values.size();
  size_t at = 0;
  for (; same && at < a.values.size(); ++at) {
    double x = a.values[at], y = b.values[at];
    same = std::abs(x - y) <= 1e-4 * std::max(1.0, std::abs(x));
  }
  if (same) {
    std::printf("AMP_DIFF %s same %zu values\n", label, a.values.size());
    return true;
  }
  if (a.values.size() != b.values.size())
    std::printf("AMP_DIFF %s differs %zu values vs %zu\n", label, a.values.size(), b.values.size());
  else
    std::printf("AMP_DIFF %s differs at value %zu: %.9g vs %.9g\n", label, at - 1, a.values[at - 1], b.values[at - 1]);
  return false;
}

} // namespace amp_diff
