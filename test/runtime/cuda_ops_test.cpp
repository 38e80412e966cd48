// CUDA backend against the CPU backend on the same inputs: every list op, all dtypes and list
// shapes. Skips (with the reason) where no GPU or driver is present.
#include "test_support.h"

#include <cuda_runtime.h>

#include <tuple>

namespace amp::test {
namespace {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

const ExecContext kCpu{};

/// Device mirror of a HostList; copies back into a HostList for comparison.
struct DeviceList {
  std::vector<void *> ptrs;
  std::vector<TensorView> views;
  explicit DeviceList(const HostList &host) {
    for (const HostTensor &t : host) {
      void *p = nullptr;
      if (t.numel > 0) {
        EXPECT_EQ(cudaMalloc(&p, t.bytes()), cudaSuccess);
        HostTensor copy = t;
        EXPECT_EQ(cudaMemcpy(p, copy.data(), t.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      }
      ptrs.push_back(p);
      views.push_back(TensorView{p, t.dtype, t.numel, Device{DeviceKind::CUDA, 0}});
    }
  }
  HostList to_host() const {
    HostList out;
    for (const TensorView &v : views) {
      HostTensor t(v.dtype, v.numel);
      if (v.numel > 0) {
        EXPECT_EQ(cudaMemcpy(t.data(), v.data, t.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
      }
      out.push_back(std::move(t));
    }
    return out;
  }
  ~DeviceList() {
    for (void *p : ptrs)
      if (p)
        cudaFree(p);
  }
  DeviceList(const DeviceList &) = delete;
  DeviceList &operator=(const DeviceList &) = delete;
};

/// A few device floats for the scalars (inv_scale, found_inf, norm, coef...).
struct DeviceScalars {
  float *d = nullptr;
  static constexpr int kCount = 8;
  DeviceScalars() {
    EXPECT_EQ(cudaMalloc(&d, kCount * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemset(d, 0, kCount * sizeof(float)), cudaSuccess);
  }
  ~DeviceScalars() { cudaFree(d); }
  float *at(int i) { return d + i; }
  void set(int i, float v) {
    EXPECT_EQ(cudaMemcpy(d + i, &v, 4, cudaMemcpyHostToDevice), cudaSuccess);
  }
  float get(int i) {
    float v = 0;
    EXPECT_EQ(cudaMemcpy(&v, d + i, 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
  DeviceScalars(const DeviceScalars &) = delete;
  DeviceScalars &operator=(const DeviceScalars &) = delete;
};

ExecContext gpu_context(cudaStream_t stream = nullptr) {
  ExecContext c;
  c.device = Device{DeviceKind::CUDA, 0};
  c.stream = stream;
  return c;
}

class CudaOps : public ::testing::TestWithParam<std::tuple<DType, Shape>> {
protected:
  void SetUp() override {
    if (!cuda_available())
      GTEST_SKIP() << "no CUDA device or driver on this machine (cuda_available() is false)";
  }
  DType dtype() const { return std::get<0>(GetParam()); }
  std::vector<std::int64_t> sizes() const { return list_sizes(std::get<1>(GetParam())); }
  double rtol() const { return dtype_rtol(dtype()); }
};

TEST_P(CudaOps, UnscaleCheckAndNormMatchCpu) {
  HostList cpu = random_list(dtype(), sizes(), 1);
  DeviceList gpu(cpu);
  DeviceScalars s;
  s.set(0, 0.125f);
  const float inv = 0.125f;
  float found = 0.0f, norm = 0.0f;
  unscale_check_and_norm(views(cpu), &inv, &found, &norm, kCpu);
  unscale_check_and_norm(gpu.views, s.at(0), s.at(1), s.at(2), gpu_context());
  EXPECT_EQ(s.get(1), 0.0f);
  EXPECT_TRUE(close(s.get(2), norm, 1e-5));
  EXPECT_TRUE(lists_equal_bits(gpu.to_host(), cpu)); // one multiply, one rounding: bit-identical
  // Deterministic: the same list gives the same bits again.
  float again = 0;
  global_norm(gpu.views, s.at(3), gpu_context());
  global_norm(gpu.views, s.at(4), gpu_context());
  again = s.get(3);
  EXPECT_EQ(again, s.get(4));
}

TEST_P(CudaOps, InfAndNaNAreFoundEverywhere) {
  const HostList clean = random_list(dtype(), sizes(), 2);
  for (auto [t, i] : poison_positions(clean)) {
    HostList g = clean;
    g[t].set(i, (i % 2) ? std::nan("") : -std::numeric_limits<double>::infinity());
    DeviceList gpu(g);
    DeviceScalars s;
    s.set(0, 0.5f);
    unscale_and_check(gpu.views, s.at(0), s.at(1), gpu_context());
    EXPECT_EQ(s.get(1), 1.0f) << "tensor " << t << " element " << i;
    check_and_norm(gpu.views, s.at(0), s.at(2), s.at(3), gpu_context());
    EXPECT_EQ(s.get(2), 1.0f);
    unscale_check_and_norm(gpu.views, s.at(0), s.at(4), s.at(5), gpu_context());
    EXPECT_EQ(s.get(4), 1.0f);
  }
}

TEST_P(CudaOps, ClipAndCastMatchCpu) {
  for (ClipRule rule : {ClipRule::MindSpore, ClipRule::PyTorch}) {
    HostList cpu = random_list(dtype(), sizes(), 3);
    HostList out = poisoned_list(DType::F32, sizes());
    DeviceList gpu(cpu), gpu_out(out);
    DeviceScalars s;
    float norm = 0, coef = 0;
    global_norm(views(cpu), &norm, kCpu);
    s.set(0, norm);
    clip_by_global_norm(views(cpu), views(cpu), norm * 0.5f, &norm, rule, &coef, kCpu);
    clip_by_global_norm(gpu.views, gpu.views, norm * 0.5f, s.at(0), rule, s.at(1), gpu_context());
    EXPECT_EQ(s.get(1), coef);
    EXPECT_TRUE(lists_equal_bits(gpu.to_host(), cpu));
    cast_copy(gpu.views, gpu_out.views, gpu_context());
    HostList want = poisoned_list(DType::F32, sizes());
    cast_copy(views(cpu), views(want), kCpu);
    EXPECT_TRUE(lists_equal_bits(gpu_out.to_host(), want));
  }
}

TEST_P(CudaOps, FusedStepsMatchCpuAndSkipOnInf) {
  HostList p = random_list(DType::F32, sizes(), 10);
  HostList g = random_list(dtype(), sizes(), 11, 1.0, 300.0);
  HostList m = random_list(DType::F32, sizes(), 12, 0.001, 0.1);
  HostList v = random_list(DType::F32, sizes(), 13, 0.001, 0.1);
  for (HostTensor &t : v)
    for (std::int64_t i = 0; i < t.numel; ++i)
      t.set(i, std::fabs(t.get(i)));
  HostList copy = poisoned_list(DType::BF16, sizes());
  DeviceList dp(p), dg(g), dm(m), dv(v), dcopy(copy);
  DeviceScalars s;
  s.set(0, 1.0f / 512), s.set(1, 0.5f), s.set(2, 0.0f);
  const float inv = 1.0f / 512, coef = 0.5f, found = 0.0f;
  AdamOptions o;
  o.adamw = true;
  o.weight_decay = 0.01f;
  o.step = 5;
  fused_adam_step(views(p), views(g), views(m), views(v), views(copy), o, &inv, &coef, &found,
                  kCpu);
  fused_adam_step(dp.views, dg.views, dm.views, dv.views, dcopy.views, o, s.at(0), s.at(1), s.at(2),
                  gpu_context());
  EXPECT_TRUE(lists_close(dp.to_host(), as_doubles(p), 1e-6, 1e-7));
  EXPECT_TRUE(lists_close(dm.to_host(), as_doubles(m), 1e-6, 1e-8));
  EXPECT_TRUE(lists_close(dv.to_host(), as_doubles(v), 1e-6, 1e-10));
  EXPECT_TRUE(lists_close(dcopy.to_host(), as_doubles(copy), 1.0 / 128, 1e-6));

  SgdOptions so;
  so.momentum = 0.9f;
  so.nesterov = true;
  so.weight_decay = 1e-3f;
  fused_sgd_step(views(p), views(g), views(m), {}, so, &inv, &coef, &found, kCpu);
  fused_sgd_step(dp.views, dg.views, dm.views, {}, so, s.at(0), s.at(1), s.at(2), gpu_context());
  EXPECT_TRUE(lists_close(dp.to_host(), as_doubles(p), 1e-6, 1e-7));
  EXPECT_TRUE(lists_close(dm.to_host(), as_doubles(m), 1e-6, 1e-8));

  // found_inf on the device: nothing moves.
  s.set(2, 1.0f);
  const HostList before = dp.to_host();
  fused_adam_step(dp.views, dg.views, dm.views, dv.views, dcopy.views, o, s.at(0), s.at(1), s.at(2),
                  gpu_context());
  EXPECT_TRUE(lists_equal_bits(dp.to_host(), before));
}

INSTANTIATE_TEST_SUITE_P(AllDTypesAndShapes, CudaOps,
                         ::testing::Combine(::testing::ValuesIn(kAllDTypes),
                                            ::testing::ValuesIn(kAllShapes)),
                         [](const auto &info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  shape_name(std::get<1>(info.param));
                         });

class CudaScalars : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cuda_available())
      GTEST_SKIP() << "no CUDA device or driver on this machine (cuda_available() is false)";
  }
};

TEST_F(CudaScalars, UpdateScaleOnDeviceOnAStream) {
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreate(&stream));
  DeviceScalars s;
  std::int32_t *tracker = nullptr;
  CUDA_OK(cudaMalloc(&tracker, 4));
  CUDA_OK(cudaMemset(tracker, 0, 4));
  s.set(0, 1024.0f), s.set(1, 0.0f), s.set(2, 1.0f);
  update_scale(s.at(0), tracker, s.at(2), 2.0f, 0.5f, 2, gpu_context(stream)); // inf: back off
  update_scale(s.at(0), tracker, s.at(1), 2.0f, 0.5f, 2, gpu_context(stream));
  update_scale(s.at(0), tracker, s.at(1), 2.0f, 0.5f, 2, gpu_context(stream)); // grows
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_EQ(s.get(0), 1024.0f);
  std::int32_t t = -1;
  CUDA_OK(cudaMemcpy(&t, tracker, 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(t, 0);
  cudaFree(tracker);
  cudaStreamDestroy(stream);
}

TEST_F(CudaScalars, HostScalarsAndMixedDevicesAreErrors) {
  HostList cpu = random_list(DType::F32, {10, 10}, 1);
  DeviceList gpu(cpu);
  const float host_inv = 1.0f;
  DeviceScalars s;
  try {
    unscale_and_check(gpu.views, &host_inv, s.at(0), gpu_context());
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("inv_scale must point to memory on cuda:0"),
              std::string::npos);
  }
  auto mixed = gpu.views;
  mixed[1] = views(cpu)[1];
  EXPECT_THROW(unscale_and_check(mixed, s.at(0), s.at(1), gpu_context()), Error);
}

TEST_F(CudaScalars, InverseScaleMatchesCpu) {
  DeviceScalars s;
  for (float scale : {65536.0f, 3.0f, 1e-30f}) {
    s.set(0, scale);
    inverse_scale(s.at(0), s.at(1), gpu_context());
    float inv = 0.0f;
    inverse_scale(&scale, &inv, kCpu);
    EXPECT_EQ(s.get(1), inv) << scale;
  }
}

TEST_F(CudaScalars, EmptyListNormIsZero) {
  DeviceScalars s;
  s.set(0, -1.0f);
  global_norm({}, s.at(0), gpu_context());
  EXPECT_EQ(s.get(0), 0.0f);
}

TEST_F(CudaScalars, GemmMatchesCpuReference) {
  const std::int64_t m = 128, n = 96, k = 64;
  for (DType in : {DType::F16, DType::BF16})
    for (DType out : {in, DType::F32})
      for (int layout = 0; layout < 4; ++layout) {
        HostTensor a = random_list(in, {m * k}, 1)[0], b = random_list(in, {k * n}, 2)[0];
        HostTensor c = poisoned_list(out, {m * n})[0], bias = random_list(out, {n}, 3)[0];
        DeviceList da({a}), db({b}), dc({c}), dbias({bias});
        GemmArgs g;
        g.m = m, g.n = n, g.k = k, g.trans_a = layout & 1, g.trans_b = layout & 2, g.relu = true;
        g.a = a.view(), g.b = b.view(), g.c = c.view(), g.bias = bias.view();
        gemm(g, kCpu);
        g.a = da.views[0], g.b = db.views[0], g.c = dc.views[0], g.bias = dbias.views[0];
        gemm(g, gpu_context());
        EXPECT_TRUE(lists_close(dc.to_host(), as_doubles({c}), dtype_rtol(out) + 1e-4, 1e-2))
            << dtype_name(in) << "->" << dtype_name(out) << " layout " << layout;
      }
}

} // namespace
} // namespace amp::test
