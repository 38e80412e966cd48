// CUDA backend against the CPU backend on the same inputs: every list op, all dtypes and list
// shapes. Skips (with the reason) where no GPU or driver is present.
#include "test_support.h"

#include <cuda_runtime.h>

#include <tuple>

namespace amp::test {
namespace {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

const ExecContext kCpu{};

/// Device mirror of a HostList; copies back into a HostList for comparison. With `offset` > 0 each
/// tensor starts that many elements into its allocation (an offset view: misaligned for vector
/// loads), as a slice of a larger tensor does.
struct DeviceList {
  std::vector<void *> ptrs;
  std::vector<TensorView> views;
  explicit DeviceList(const HostList &host, int offset = 0) {
    for (const HostTensor &t : host) {
      void *p = nullptr, *data = nullptr;
      if (t.numel > 0) {
        const std::size_t skip = static_cast<std::size_t>(offset) * dtype_size(t.dtype);
        EXPECT_EQ(cudaMalloc(&p, t.bytes() + skip), cudaSuccess);
        data = static_cast<char *>(p) + skip;
        HostTensor copy = t;
        EXPECT_EQ(cudaMemcpy(data, copy.data(), t.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      }
      ptrs.push_back(p);
      views.push_back(TensorView{data, t.dtype, t.numel, Device{DeviceKind::CUDA, 0}});
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
  // Bit for bit: the element-wise code is compiled without multiply-add contraction on both
  // backends (-fmad=false, -ffp-contract=off), and sqrt and division are IEEE on both; the same
  // operations in the same order then round alike. (With nvcc's default contraction 7 of these 9
  // cases would miss even an absolute 1e-8 on the momentum buffer.)
  EXPECT_TRUE(lists_equal_bits(dp.to_host(), p));
  EXPECT_TRUE(lists_equal_bits(dm.to_host(), m));
  EXPECT_TRUE(lists_equal_bits(dv.to_host(), v));
  EXPECT_TRUE(lists_equal_bits(dcopy.to_host(), copy));

  SgdOptions so;
  so.momentum = 0.9f;
  so.nesterov = true;
  so.weight_decay = 1e-3f;
  fused_sgd_step(views(p), views(g), views(m), {}, so, &inv, &coef, &found, kCpu);
  fused_sgd_step(dp.views, dg.views, dm.views, {}, so, s.at(0), s.at(1), s.at(2), gpu_context());
  EXPECT_TRUE(lists_equal_bits(dp.to_host(), p));
  EXPECT_TRUE(lists_equal_bits(dm.to_host(), m));

  // found_inf on the device: nothing moves.
  s.set(2, 1.0f);
  const HostList before = dp.to_host();
  fused_adam_step(dp.views, dg.views, dm.views, dv.views, dcopy.views, o, s.at(0), s.at(1), s.at(2),
                  gpu_context());
  EXPECT_TRUE(lists_equal_bits(dp.to_host(), before));
}

// Offset views (one element into the allocation): every tensor takes the element-load path.
TEST_P(CudaOps, MisalignedTensorsMatchCpu) {
  HostList g = random_list(dtype(), sizes(), 21, 1.0, 300.0);
  DeviceList dg(g, 1);
  DeviceScalars s;
  s.set(0, 1.0f / 512);
  const float inv = 1.0f / 512;
  float found = 0.0f, norm = 0.0f;
  unscale_check_and_norm(views(g), &inv, &found, &norm, kCpu);
  unscale_check_and_norm(dg.views, s.at(0), s.at(1), s.at(2), gpu_context());
  EXPECT_TRUE(lists_equal_bits(dg.to_host(), g));
  EXPECT_EQ(s.get(1), 0.0f);
  EXPECT_TRUE(close(s.get(2), norm, 1e-5));

  HostList p = random_list(DType::F32, sizes(), 22);
  HostList m = random_list(DType::F32, sizes(), 23, 0.001, 0.1);
  HostList v = random_list(DType::F32, sizes(), 24, 0.001, 0.1);
  for (HostTensor &t : v)
    for (std::int64_t i = 0; i < t.numel; ++i)
      t.set(i, std::fabs(t.get(i)));
  HostList copy = poisoned_list(dtype(), sizes());
  // Mixed: params and copies misaligned, moments aligned (the whole tensor falls back).
  DeviceList dp(p, 1), dm(m), dv(v), dcopy(copy, 3);
  AdamOptions o;
  o.step = 3;
  fused_adam_step(views(p), views(g), views(m), views(v), views(copy), o, nullptr, nullptr,
                  nullptr, kCpu);
  fused_adam_step(dp.views, dg.views, dm.views, dv.views, dcopy.views, o, nullptr, nullptr, nullptr,
                  gpu_context());
  EXPECT_TRUE(lists_equal_bits(dp.to_host(), p));
  EXPECT_TRUE(lists_equal_bits(dm.to_host(), m));
  EXPECT_TRUE(lists_equal_bits(dv.to_host(), v));
  EXPECT_TRUE(lists_equal_bits(dcopy.to_host(), copy));

  // inf/NaN at chunk boundaries is found on the element path too.
  for (auto [t, i] : poison_positions(g)) {
    HostList bad = g;
    bad[t].set(i, std::nan(""));
    DeviceList db(bad, 1);
    s.set(1, 0.0f);
    unscale_and_check(db.views, s.at(0), s.at(1), gpu_context());
    EXPECT_EQ(s.get(1), 1.0f) << "tensor " << t << " element " << i;
  }
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

// 64-bit offsets: one fp16 tensor of 2^31 + 4099 elements (4.3 GB), aligned and as an offset view.
TEST_F(CudaScalars, TensorsOver2To31Elements) {
  const std::int64_t n = (std::int64_t{1} << 31) + 4099;
  const std::size_t bytes = static_cast<std::size_t>(n) * 2;
  void *raw = nullptr;
  if (cudaMalloc(&raw, bytes + 2) != cudaSuccess) {
    cudaGetLastError();
    GTEST_SKIP() << "needs 4.3 GB of free device memory";
  }
  auto *h = static_cast<std::uint16_t *>(raw);
  CUDA_OK(cudaMemset(h, 0x3c, bytes + 2)); // every element 0x3c3c = 1.05859375 in fp16
  const double x = ref_half_to_float(0x3c3c);
  DeviceScalars s;
  s.set(0, 0.5f);
  const TensorView whole{h, DType::F16, n, Device{DeviceKind::CUDA, 0}};
  unscale_check_and_norm({whole}, s.at(0), s.at(1), s.at(2), gpu_context());
  EXPECT_EQ(s.get(1), 0.0f);
  EXPECT_TRUE(close(s.get(2), std::sqrt(static_cast<double>(n)) * x * 0.5, 1e-5));
  // Elements past 2^31 were written (halved) like the first ones.
  const std::uint16_t halved = ref_float_to_half(static_cast<float>(x * 0.5));
  for (std::int64_t i : {std::int64_t{0}, (std::int64_t{1} << 31) + 7, n - 1}) {
    std::uint16_t got = 0;
    CUDA_OK(cudaMemcpy(&got, h + i, 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(got, halved) << "element " << i;
  }
  // An inf past 2^31 is found, on the vector path and on the element path of an offset view.
  const std::uint16_t inf = 0x7c00;
  CUDA_OK(cudaMemcpy(h + n - 2, &inf, 2, cudaMemcpyHostToDevice));
  unscale_and_check({whole}, s.at(0), s.at(3), gpu_context());
  EXPECT_EQ(s.get(3), 1.0f);
  const TensorView offset{h + 1, DType::F16, n, Device{DeviceKind::CUDA, 0}};
  unscale_and_check({offset}, s.at(0), s.at(4), gpu_context());
  EXPECT_EQ(s.get(4), 1.0f);
  CUDA_OK(cudaFree(raw));
}

TEST_F(CudaScalars, GemmMatchesCpuReference) {
#if !defined(AMP_WITH_CUBLASLT)
  GTEST_SKIP() << "this runtime was built without cuBLASLt (not found at configure time)";
#endif
  const std::int64_t m = 128, n = 96, k = 64;
  for (DType in : {DType::F16, DType::BF16})
    for (DType out : {in, DType::F32})
      for (int layout = 0; layout < 5; ++layout) {
        // layout 4: row-major, a, b and c offset views (2-byte aligned for fp16/bf16)
        const int offset = layout == 4 ? 1 : 0;
        HostTensor a = random_list(in, {m * k}, 1)[0], b = random_list(in, {k * n}, 2)[0];
        HostTensor c = poisoned_list(out, {m * n})[0], bias = random_list(out, {n}, 3)[0];
        DeviceList da({a}, offset), db({b}, offset), dc({c}, offset), dbias({bias});
        GemmArgs g;
        g.m = m, g.n = n, g.k = k, g.trans_a = layout & 1, g.trans_b = (layout & 2) != 0;
        g.relu = true;
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
