// CPU backend against float64 references: every list op, all dtypes, lists of 1, 7 and 1,100
// tensors.
#include "test_support.h"

#include <algorithm>
#include <tuple>

namespace amp::test {
namespace {

const ExecContext kCpu{};

class CpuOps : public ::testing::TestWithParam<std::tuple<DType, Shape>> {
protected:
  DType dtype() const { return std::get<0>(GetParam()); }
  Shape shape() const { return std::get<1>(GetParam()); }
  std::vector<std::int64_t> sizes() const { return list_sizes(shape()); }
  double rtol() const { return dtype_rtol(dtype()); }
};

double sum_squares(const HostList &l, double scale = 1.0) {
  double s = 0;
  for (const HostTensor &t : l)
    for (std::int64_t i = 0; i < t.numel; ++i)
      s += (t.get(i) * scale) * (t.get(i) * scale);
  return s;
}

TEST_P(CpuOps, UnscaleAndCheckFinite) {
  HostList g = random_list(dtype(), sizes(), 1);
  const auto in = as_doubles(g);
  const float inv_scale = 1.0f / 1024.0f * 3.0f;
  float found_inf = 0.0f;
  unscale_and_check(views(g), &inv_scale, &found_inf, kCpu);
  EXPECT_EQ(found_inf, 0.0f);
  auto want = in;
  for (std::size_t t = 0; t < want.size(); ++t)
    for (double &x : want[t])
      x = g[t].round(x * static_cast<double>(inv_scale));
  EXPECT_TRUE(lists_close(g, want, rtol()));
}

TEST_P(CpuOps, UnscaleWithUnitScaleLeavesGradsUntouched) {
  HostList g = random_list(dtype(), sizes(), 2);
  const HostList before = g;
  const float one = 1.0f;
  float found_inf = 0.0f;
  unscale_and_check(views(g), &one, &found_inf, kCpu);
  EXPECT_EQ(found_inf, 0.0f);
  EXPECT_TRUE(lists_equal_bits(g, before));
}

TEST_P(CpuOps, UnscaleAndCheckFindsInfAndNaNEverywhere) {
  const HostList clean = random_list(dtype(), sizes(), 3);
  const double bad_values[] = {std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::quiet_NaN()};
  int k = 0;
  for (auto [t, i] : poison_positions(clean)) {
    HostList g = clean;
    g[t].set(i, bad_values[k++ % 3]);
    const float inv_scale = 0.5f;
    float found_inf = 0.0f;
    float read_only_found = 0.0f, fused_found = 0.0f, norm = 0.0f;
    check_and_norm(views(g), &inv_scale, &read_only_found, &norm, kCpu);
    EXPECT_EQ(read_only_found, 1.0f) << "check_and_norm, tensor " << t << " element " << i;
    EXPECT_FALSE(std::isfinite(norm));
    unscale_and_check(views(g), &inv_scale, &found_inf, kCpu);
    EXPECT_EQ(found_inf, 1.0f) << "tensor " << t << " element " << i;
    unscale_check_and_norm(views(g), &inv_scale, &fused_found, &norm, kCpu);
    EXPECT_EQ(fused_found, 1.0f) << "unscale_check_and_norm, tensor " << t << " element " << i;
  }
}

TEST_P(CpuOps, FoundInfIsSetNeverCleared) {
  HostList g = random_list(dtype(), sizes(), 4);
  const float inv_scale = 0.25f;
  float found_inf = 1.0f;
  unscale_and_check(views(g), &inv_scale, &found_inf, kCpu);
  EXPECT_EQ(found_inf, 1.0f);
}

TEST_P(CpuOps, GlobalNormMatchesFloat64) {
  HostList x = random_list(dtype(), sizes(), 5);
  float norm = -1.0f;
  global_norm(views(x), &norm, kCpu);
  EXPECT_TRUE(close(norm, std::sqrt(sum_squares(x)), 1e-6));
}

TEST_P(CpuOps, GlobalNormIsDeterministicAcrossThreadCounts) {
  HostList x = random_list(dtype(), sizes(), 6);
  float one = 0.0f, two = 0.0f, many = 0.0f;
  global_norm(views(x), &one, ExecContext{{}, nullptr, 1});
  global_norm(views(x), &two, ExecContext{{}, nullptr, 2});
  global_norm(views(x), &many, ExecContext{{}, nullptr, 7});
  EXPECT_EQ(one, two);
  EXPECT_EQ(one, many);
}

TEST_P(CpuOps, UnscaleCheckAndNormFused) {
  HostList g = random_list(dtype(), sizes(), 7);
  const auto in = as_doubles(g);
  const float inv_scale = 0.125f;
  float found_inf = 0.0f, norm = -1.0f;
  unscale_check_and_norm(views(g), &inv_scale, &found_inf, &norm, kCpu);
  EXPECT_EQ(found_inf, 0.0f);
  auto want = in;
  for (std::size_t t = 0; t < want.size(); ++t)
    for (double &x : want[t])
      x = g[t].round(x * inv_scale);
  EXPECT_TRUE(lists_close(g, want, rtol()));
  // The norm is of the unscaled values, before they are rounded back to the grads' dtype.
  HostList ref = random_list(dtype(), sizes(), 7);
  EXPECT_TRUE(close(norm, std::sqrt(sum_squares(ref, inv_scale)), 1e-6));
}

TEST_P(CpuOps, CheckAndNormIsReadOnly) {
  HostList g = random_list(dtype(), sizes(), 8);
  const HostList before = g;
  const float inv_scale = 0.5f;
  float found_inf = 0.0f, norm = -1.0f;
  check_and_norm(views(g), &inv_scale, &found_inf, &norm, kCpu);
  EXPECT_TRUE(lists_equal_bits(g, before));
  EXPECT_EQ(found_inf, 0.0f);
  EXPECT_TRUE(close(norm, std::sqrt(sum_squares(g, 0.5)), 1e-6));
  const auto positions = poison_positions(g);
  g[positions.back().first].set(positions.back().second, std::nan(""));
  check_and_norm(views(g), nullptr, &found_inf, &norm, kCpu);
  EXPECT_EQ(found_inf, 1.0f);
  EXPECT_TRUE(std::isnan(norm));
}

double ref_coef(double norm, double clip, ClipRule rule) {
  if (rule == ClipRule::PyTorch)
    return std::min(
        1.0, static_cast<double>(static_cast<float>(clip) / (static_cast<float>(norm) + 1e-6f)));
  return clip / std::max(norm, clip);
}

TEST_P(CpuOps, ClipByGlobalNormBothRulesInAndOutOfPlace) {
  for (ClipRule rule : {ClipRule::MindSpore, ClipRule::PyTorch})
    for (bool in_place : {true, false})
      for (double fraction : {0.3, 2.0}) { // clip below and above the norm
        HostList x = random_list(dtype(), sizes(), 9);
        const auto in = as_doubles(x);
        float norm = 0.0f;
        global_norm(views(x), &norm, kCpu);
        const auto clip = static_cast<float>(norm * fraction);
        HostList out = in_place ? HostList{} : poisoned_list(dtype(), sizes());
        float coef = -1.0f;
        if (in_place)
          clip_by_global_norm(views(x), views(x), clip, &norm, rule, &coef, kCpu);
        else
          clip_by_global_norm(views(x), views(out), clip, &norm, rule, &coef, kCpu);
        const double c = ref_coef(norm, clip, rule);
        EXPECT_TRUE(close(coef, c, 1e-6));
        auto want = in;
        for (std::size_t t = 0; t < want.size(); ++t)
          for (double &v : want[t])
            v = x[t].round(v * c);
        EXPECT_TRUE(lists_close(in_place ? x : out, want, rtol()))
            << "rule " << static_cast<int>(rule) << " in_place " << in_place << " fraction "
            << fraction;
        if (fraction > 1.0 && rule == ClipRule::MindSpore) {
          EXPECT_EQ(coef, 1.0f);
        }
      }
}

TEST_P(CpuOps, ClipIntoAnotherDtype) {
  HostList x = random_list(dtype(), sizes(), 10);
  HostList out = poisoned_list(DType::F32, sizes());
  const float norm = 10.0f;
  clip_by_global_norm(views(x), views(out), 1.0f, &norm, ClipRule::MindSpore, nullptr, kCpu);
  auto want = as_doubles(x);
  for (auto &t : want)
    for (double &v : t)
      v = v * 0.1;
  EXPECT_TRUE(lists_close(out, want, 1e-6));
}

TEST_P(CpuOps, CastCopyToEveryDtype) {
  HostList src = random_list(dtype(), sizes(), 11, 1e-3, 70000.0); // past fp16's max: inf
  for (DType to : kAllDTypes) {
    HostList dst = poisoned_list(to, sizes());
    cast_copy(views(src), views(dst), kCpu);
    auto want = as_doubles(src);
    for (std::size_t t = 0; t < want.size(); ++t)
      for (double &v : want[t])
        v = dst[t].round(v);
    EXPECT_TRUE(lists_close(dst, want, 0.0)) << "to " << dtype_name(to);
  }
}

// ---- fused optimizer steps -----------------------------------------------------------------

struct StepScalars {
  float inv_scale = 1.0f / 256.0f;
  float clip_coef = 0.75f;
  float found_inf = 0.0f;
};

void ref_sgd(std::vector<std::vector<double>> &p, const std::vector<std::vector<double>> &g,
             std::vector<std::vector<double>> &buf, const SgdOptions &o, double grad_scale) {
  for (std::size_t t = 0; t < p.size(); ++t)
    for (std::size_t i = 0; i < p[t].size(); ++i) {
      double d = g[t][i] * grad_scale;
      if (o.weight_decay != 0)
        d += o.weight_decay * p[t][i];
      if (o.momentum != 0) {
        buf[t][i] = o.first_step ? d : o.momentum * buf[t][i] + (1 - o.dampening) * d;
        d = o.nesterov ? d + o.momentum * buf[t][i] : buf[t][i];
      }
      p[t][i] -= o.lr * d;
    }
}

TEST_P(CpuOps, FusedSgdStepMatchesFloat64) {
  const SgdOptions variants[] = {{0.1f, 0.0f, 0.0f, 0.0f, false, false},
                                 {0.1f, 0.9f, 0.0f, 0.01f, false, true},
                                 {0.05f, 0.9f, 0.1f, 0.0f, false, false},
                                 {0.05f, 0.9f, 0.0f, 0.001f, true, false}};
  for (const SgdOptions &o : variants) {
    HostList p = random_list(DType::F32, sizes(), 20);
    HostList g = random_list(dtype(), sizes(), 21, 1.0, 300.0);
    HostList buf = random_list(DType::F32, sizes(), 22);
    HostList copy = poisoned_list(dtype() == DType::F32 ? DType::F16 : dtype(), sizes());
    auto rp = as_doubles(p), rbuf = as_doubles(buf);
    const StepScalars s;
    fused_sgd_step(views(p), views(g), views(buf), views(copy), o, &s.inv_scale, &s.clip_coef,
                   &s.found_inf, kCpu);
    ref_sgd(rp, as_doubles(g), rbuf, o, double(s.inv_scale) * s.clip_coef);
    EXPECT_TRUE(lists_close(p, rp, 1e-5, 1e-6)) << "momentum " << o.momentum;
    if (o.momentum != 0) {
      EXPECT_TRUE(lists_close(buf, rbuf, 1e-5, 1e-6));
    }
    auto want_copy = rp;
    for (std::size_t t = 0; t < want_copy.size(); ++t)
      for (double &v : want_copy[t])
        v = copy[t].round(v);
    EXPECT_TRUE(lists_close(copy, want_copy, dtype_rtol(copy[0].dtype), 1e-5));
  }
}

TEST_P(CpuOps, FusedStepsSkipWhenInfWasFound) {
  HostList p = random_list(DType::F32, sizes(), 30);
  HostList g = random_list(dtype(), sizes(), 31);
  HostList m = random_list(DType::F32, sizes(), 32);
  HostList v = random_list(DType::F32, sizes(), 33, 0.01, 1.0);
  HostList copy = poisoned_list(DType::BF16, sizes());
  const HostList p0 = p, m0 = m, v0 = v, copy0 = copy;
  StepScalars s;
  s.found_inf = 1.0f;
  SgdOptions sgd;
  sgd.momentum = 0.9f;
  fused_sgd_step(views(p), views(g), views(m), views(copy), sgd, &s.inv_scale, &s.clip_coef,
                 &s.found_inf, kCpu);
  AdamOptions adam;
  fused_adam_step(views(p), views(g), views(m), views(v), views(copy), adam, &s.inv_scale,
                  &s.clip_coef, &s.found_inf, kCpu);
  EXPECT_TRUE(lists_equal_bits(p, p0));
  EXPECT_TRUE(lists_equal_bits(m, m0));
  EXPECT_TRUE(lists_equal_bits(v, v0));
  EXPECT_TRUE(lists_equal_bits(copy, copy0));
}

void ref_adam(std::vector<std::vector<double>> &p, const std::vector<std::vector<double>> &g,
              std::vector<std::vector<double>> &m, std::vector<std::vector<double>> &v,
              const AdamOptions &o, double grad_scale) {
  const double bc1 = 1 - std::pow(double(o.beta1), double(o.step));
  const double bc2 = 1 - std::pow(double(o.beta2), double(o.step));
  for (std::size_t t = 0; t < p.size(); ++t)
    for (std::size_t i = 0; i < p[t].size(); ++i) {
      double d = g[t][i] * grad_scale;
      double w = p[t][i];
      if (o.adamw)
        w *= 1 - double(o.lr) * o.weight_decay;
      else if (o.weight_decay != 0)
        d += o.weight_decay * w;
      m[t][i] = o.beta1 * m[t][i] + (1 - double(o.beta1)) * d;
      v[t][i] = o.beta2 * v[t][i] + (1 - double(o.beta2)) * d * d;
      const double denom = std::sqrt(v[t][i]) / std::sqrt(bc2) + o.eps;
      p[t][i] = w - (o.lr / bc1) * m[t][i] / denom;
    }
}

TEST_P(CpuOps, FusedAdamAndAdamWMatchFloat64) {
  AdamOptions variants[3];
  variants[0].step = 1;
  variants[1].step = 10;
  variants[1].weight_decay = 0.01f;
  variants[2].step = 3;
  variants[2].adamw = true;
  variants[2].weight_decay = 0.1f;
  variants[2].lr = 0.01f;
  for (const AdamOptions &o : variants) {
    HostList p = random_list(DType::F32, sizes(), 40);
    HostList g = random_list(dtype(), sizes(), 41, 1.0, 300.0);
    HostList m = random_list(DType::F32, sizes(), 42, 0.001, 0.1);
    HostList v = random_list(DType::F32, sizes(), 43, 0.001, 0.1);
    for (HostTensor &t : v) // second moments are non-negative
      for (std::int64_t i = 0; i < t.numel; ++i)
        t.set(i, std::fabs(t.get(i)));
    HostList copy = poisoned_list(dtype() == DType::F32 ? DType::BF16 : dtype(), sizes());
    auto rp = as_doubles(p), rm = as_doubles(m), rv = as_doubles(v);
    const StepScalars s;
    fused_adam_step(views(p), views(g), views(m), views(v), views(copy), o, &s.inv_scale,
                    &s.clip_coef, nullptr, kCpu);
    ref_adam(rp, as_doubles(g), rm, rv, o, double(s.inv_scale) * s.clip_coef);
    EXPECT_TRUE(lists_close(p, rp, 1e-5, 1e-6)) << "step " << o.step;
    EXPECT_TRUE(lists_close(m, rm, 1e-5, 1e-7));
    EXPECT_TRUE(lists_close(v, rv, 1e-5, 1e-9));
    auto want_copy = rp;
    for (std::size_t t = 0; t < want_copy.size(); ++t)
      for (double &x : want_copy[t])
        x = copy[t].round(x);
    EXPECT_TRUE(lists_close(copy, want_copy, dtype_rtol(copy[0].dtype), 1e-5));
  }
}

TEST_P(CpuOps, FusedStepWithoutModelCopiesOrScalars) {
  HostList p = random_list(DType::F32, sizes(), 50);
  HostList g = random_list(dtype(), sizes(), 51);
  auto rp = as_doubles(p), rbuf = rp;
  SgdOptions o;
  o.lr = 0.5f;
  fused_sgd_step(views(p), views(g), {}, {}, o, nullptr, nullptr, nullptr, kCpu);
  ref_sgd(rp, as_doubles(g), rbuf, o, 1.0);
  EXPECT_TRUE(lists_close(p, rp, 1e-6, 1e-6));
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<DType, Shape>> &info) {
  return std::string(dtype_name(std::get<0>(info.param))) + "_" +
         shape_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllDTypesAndShapes, CpuOps,
                         ::testing::Combine(::testing::ValuesIn(kAllDTypes),
                                            ::testing::ValuesIn(kAllShapes)),
                         param_name);

// ---- scalars, empty inputs ------------------------------------------------------------------

TEST(CpuScalars, UpdateScaleFollowsPyTorchRule) {
  float scale = 65536.0f;
  std::int32_t tracker = 0;
  const float clean = 0.0f, inf = 1.0f;
  update_scale(&scale, &tracker, &inf, 2.0f, 0.5f, 3, kCpu);
  EXPECT_EQ(scale, 32768.0f);
  EXPECT_EQ(tracker, 0);
  update_scale(&scale, &tracker, &clean, 2.0f, 0.5f, 3, kCpu);
  update_scale(&scale, &tracker, &clean, 2.0f, 0.5f, 3, kCpu);
  EXPECT_EQ(tracker, 2);
  EXPECT_EQ(scale, 32768.0f);
  update_scale(&scale, &tracker, &clean, 2.0f, 0.5f, 3, kCpu);
  EXPECT_EQ(scale, 65536.0f);
  EXPECT_EQ(tracker, 0);
  // Growth that would overflow keeps the scale and still resets the tracker.
  float big = 3e38f;
  tracker = 0;
  update_scale(&big, &tracker, &clean, 2.0f, 0.5f, 1, kCpu);
  EXPECT_EQ(big, 3e38f);
  EXPECT_EQ(tracker, 0);
  // No lower bound (PyTorch's rule, not MindSpore's floor at 1).
  float tiny = 1.0f;
  update_scale(&tiny, &tracker, &inf, 2.0f, 0.5f, 3, kCpu);
  EXPECT_EQ(tiny, 0.5f);
}

TEST(CpuScalars, InverseScaleInDouble) {
  for (float scale : {65536.0f, 3.0f, 1e-30f, 7.5e37f}) {
    float inv = 0.0f;
    inverse_scale(&scale, &inv, kCpu);
    EXPECT_EQ(inv, static_cast<float>(1.0 / static_cast<double>(scale))) << scale;
  }
}

TEST(CpuScalars, ClipCoefficientOnly) {
  const float norm = 4.0f;
  float coef = 0.0f;
  clip_coefficient(2.0f, &norm, ClipRule::MindSpore, &coef, kCpu);
  EXPECT_EQ(coef, 0.5f);
  clip_coefficient(8.0f, &norm, ClipRule::PyTorch, &coef, kCpu);
  EXPECT_EQ(coef, 1.0f);
  clip_by_global_norm({}, {}, 1.0f, &norm, ClipRule::PyTorch, &coef, kCpu);
  EXPECT_FLOAT_EQ(coef, 1.0f / (4.0f + 1e-6f));
}

// One NaN rule for both clip rules (docs/runtime-core.md): a NaN norm gives a NaN coefficient
// (MindSpore's max(norm, clip) must not drop it), an inf norm gives 0.
TEST(CpuScalars, ClipCoefficientOfNonFiniteNorms) {
  for (ClipRule rule : {ClipRule::MindSpore, ClipRule::PyTorch}) {
    const float nan_norm = std::numeric_limits<float>::quiet_NaN();
    const float inf_norm = std::numeric_limits<float>::infinity();
    float coef = 0.0f;
    clip_coefficient(2.0f, &nan_norm, rule, &coef, kCpu);
    EXPECT_TRUE(std::isnan(coef)) << static_cast<int>(rule);
    clip_coefficient(2.0f, &inf_norm, rule, &coef, kCpu);
    EXPECT_EQ(coef, 0.0f) << static_cast<int>(rule);
    HostList x = random_list(DType::F32, {5, 70000}, 3);
    clip_by_global_norm(views(x), views(x), 2.0f, &nan_norm, rule, nullptr, kCpu);
    for (const HostTensor &t : x)
      for (std::int64_t i = 0; i < t.numel; ++i)
        ASSERT_TRUE(std::isnan(t.get(i))) << static_cast<int>(rule);
  }
}

TEST(CpuScalars, UpdateScaleTreatsNaNFoundInfAsSet) {
  float scale = 1024.0f;
  std::int32_t tracker = 1;
  const float nan_flag = std::numeric_limits<float>::quiet_NaN();
  update_scale(&scale, &tracker, &nan_flag, 2.0f, 0.5f, 2, kCpu);
  EXPECT_EQ(scale, 512.0f);
  EXPECT_EQ(tracker, 0);
}

TEST(CpuEmpty, EmptyListsAndZeroSizeTensors) {
  const float inv = 0.5f;
  float found = 0.0f, norm = -1.0f;
  unscale_and_check({}, &inv, &found, kCpu);
  global_norm({}, &norm, kCpu);
  EXPECT_EQ(norm, 0.0f);
  HostList zeros = {HostTensor(DType::F16, 0), HostTensor(DType::F32, 0)};
  norm = -1.0f;
  unscale_check_and_norm(views(zeros), &inv, &found, &norm, kCpu);
  EXPECT_EQ(norm, 0.0f);
  EXPECT_EQ(found, 0.0f);
  HostList out = {HostTensor(DType::BF16, 0), HostTensor(DType::F16, 0)};
  cast_copy(views(zeros), views(out), kCpu);
  AdamOptions o;
  fused_adam_step({}, {}, {}, {}, {}, o, &inv, nullptr, &found, kCpu);
}

TEST(CpuMixed, OneListMayMixDtypes) {
  HostList g = random_list(DType::F32, {100, 70000}, 60);
  HostList h = random_list(DType::F16, {5000}, 61);
  HostList b = random_list(DType::BF16, {300}, 62);
  HostList all;
  all.push_back(g[0]);
  all.push_back(h[0]);
  all.push_back(b[0]);
  all.push_back(g[1]);
  float norm = 0;
  global_norm(views(all), &norm, kCpu);
  EXPECT_TRUE(close(norm, std::sqrt(sum_squares(all)), 1e-6));
}

} // namespace
} // namespace amp::test
