// Conversions, chunk planning (64-bit indexing), error messages, the >2^31-element case and the
// GEMM.
#include "test_support.h"

#include "backend.h"
#include "launch_plan.h"
#include "numeric.h"

#include <cmath>
#include <cstdlib>
#include <memory>

#include <sys/mman.h>

namespace amp::test {
namespace {

const ExecContext kCpu{};

TEST(Conversions, EveryHalfAndBFloat16WidensExactly) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float h = detail::half_to_float(bits), rh = ref_half_to_float(bits);
    ASSERT_TRUE((std::isnan(h) && std::isnan(rh)) || h == rh) << std::hex << b;
    const float f = detail::bfloat16_to_float(bits), rf = ref_bf16_to_float(bits);
    ASSERT_TRUE((std::isnan(f) && std::isnan(rf)) || std::memcmp(&f, &rf, 4) == 0) << std::hex << b;
  }
}

TEST(Conversions, NarrowingRoundsToNearestEven) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::uint32_t> any;
  std::vector<float> samples = {0.0f,
                                -0.0f,
                                65504.0f,
                                65519.99f,
                                65520.0f,
                                1e-8f,
                                5.96e-8f,
                                2.98e-8f,
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN(),
                                3.4e38f,
                                1.00048828125f};
  for (int i = 0; i < 1000000; ++i) {
    std::uint32_t u = any(rng);
    float f;
    std::memcpy(&f, &u, 4);
    samples.push_back(f);
  }
  for (float f : samples) {
    const std::uint16_t h = detail::float_to_half(f), rh = ref_float_to_half(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(ref_half_to_float(h)));
    } else {
      ASSERT_EQ(h, rh) << f;
    }
    const std::uint16_t b = detail::float_to_bfloat16(f), rb = ref_float_to_bf16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(ref_bf16_to_float(b)));
    } else {
      ASSERT_EQ(b, rb) << f;
    }
  }
}

TEST(ChunkPlan, SixtyFourBitIndexing) {
  // A tensor of 2^40 elements: chunk counts and offsets stay exact without allocating it.
  const std::int64_t huge = std::int64_t{1} << 40;
  EXPECT_EQ(detail::chunk_count(huge), std::int64_t{1} << 24);
  EXPECT_EQ(detail::chunk_count(huge + 1), (std::int64_t{1} << 24) + 1);
  EXPECT_EQ(detail::chunk_count((std::int64_t{1} << 31) + 5), 32769);
  EXPECT_EQ(detail::chunk_count(0), 0);
  std::vector<TensorView> tensors = {
      {nullptr, DType::F16, 0, {}},
      {reinterpret_cast<void *>(64), DType::F16, (std::int64_t{1} << 31) + 5, {}}};
  const auto chunks = detail::plan_chunks(tensors);
  ASSERT_EQ(chunks.size(), 32769u);
  EXPECT_EQ(chunks.back().tensor, 1);
  EXPECT_EQ(chunks.back().begin, std::int64_t{1} << 31);
  EXPECT_EQ(chunks.back().size, 5);
  EXPECT_EQ(chunks[32767].begin + chunks[32767].size, std::int64_t{1} << 31);
}

// Over 2^31 elements, read path, cheaply: 2^31 + 9 fp16 elements of untouched anonymous memory
// (reads map the kernel's zero page, so 4 GiB of address space costs a few pages) with non-zero
// values at the first element, element 2^31 and the last one. The chunk offsets past the int32
// range must land on them.
TEST(LargeTensor, ReadsPastTwoToTheThirtyOneElements) {
  const std::int64_t n = (std::int64_t{1} << 31) + 9;
  const std::size_t bytes = static_cast<std::size_t>(n) * 2;
  void *mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED)
    GTEST_SKIP() << "cannot map 4 GiB of address space";
  auto *data = static_cast<std::uint16_t *>(mem);
  data[0] = ref_float_to_half(2.0f);
  data[std::size_t{1} << 31] = ref_float_to_half(3.0f);
  data[static_cast<std::size_t>(n - 1)] = ref_float_to_half(4.0f);
  std::vector<TensorView> list = {{data, DType::F16, n, {}}};
  float found = 0.0f, norm = 0.0f;
  const float half = 0.5f;
  check_and_norm(list, &half, &found, &norm, kCpu);
  EXPECT_EQ(found, 0.0f);
  EXPECT_EQ(norm, std::sqrt(29.0f) * 0.5f);
  data[static_cast<std::size_t>(n - 1)] = 0x7e00; // NaN in the very last element
  check_and_norm(list, nullptr, &found, &norm, kCpu);
  EXPECT_EQ(found, 1.0f);
  munmap(mem, bytes);
}

// The same over real memory, with writes: 2^31 + 9 fp16 elements (4 GiB, ~6 s on 2 idle cores),
// so opt-in: AMP_RUN_HUGE_TESTS=1.
TEST(LargeTensor, OverTwoToTheThirtyOneElements) {
  if (!std::getenv("AMP_RUN_HUGE_TESTS"))
    GTEST_SKIP() << "4 GiB test: set AMP_RUN_HUGE_TESTS=1 to run it";
  const std::int64_t n = (std::int64_t{1} << 31) + 9;
  std::vector<std::uint16_t> data;
  try {
    data.assign(static_cast<std::size_t>(n), ref_float_to_half(2.0f));
  } catch (const std::bad_alloc &) {
    GTEST_SKIP() << "cannot allocate 4 GiB for the >2^31-element test";
  }
  data[static_cast<std::size_t>(n - 1)] = ref_float_to_half(4.0f); // past the int32 range
  std::vector<TensorView> list = {{data.data(), DType::F16, n, {}}};
  const float inv_scale = 0.5f;
  float found = 0.0f, norm = 0.0f;
  unscale_check_and_norm(list, &inv_scale, &found, &norm, kCpu);
  EXPECT_EQ(found, 0.0f);
  EXPECT_EQ(ref_half_to_float(data[0]), 1.0f);
  EXPECT_EQ(ref_half_to_float(data[static_cast<std::size_t>(n - 2)]), 1.0f);
  EXPECT_EQ(ref_half_to_float(data[static_cast<std::size_t>(n - 1)]), 2.0f);
  EXPECT_TRUE(close(norm, std::sqrt(double(n - 1) + 4.0), 1e-6));
  data[static_cast<std::size_t>(n - 1)] = 0x7c00;     // +inf in the last element
  check_and_norm(list, nullptr, &found, &norm, kCpu); // read-only: the cheapest pass that checks
  EXPECT_EQ(found, 1.0f);
}

// ---- errors: the op, the tensor index and the problem ----------------------------------------

template <class F> std::string error_of(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Errors, NameTheOpTheTensorAndTheProblem) {
  HostList g = random_list(DType::F32, {4, 4, 4}, 1);
  auto v = views(g);
  const float inv = 1.0f;
  float found = 0.0f, norm = 0.0f;

  auto mixed = v;
  mixed[2].device = Device{DeviceKind::CUDA, 0};
  EXPECT_EQ(error_of([&] { unscale_and_check(mixed, &inv, &found, kCpu); }),
            "amp::unscale_and_check: tensor 2: grads is on cuda:0 but the call runs on cpu:0 (all "
            "tensors of a call must be on one device)");

  auto bad_dtype = v;
  bad_dtype[1].dtype = static_cast<DType>(9);
  EXPECT_NE(error_of([&] {
              global_norm(bad_dtype, &norm, kCpu);
            }).find("amp::global_norm: tensor 1: xs has an unknown dtype"),
            std::string::npos);

  auto unaligned = v;
  unaligned[0].data = static_cast<char *>(unaligned[0].data) + 1;
  EXPECT_EQ(
      error_of([&] { global_norm(unaligned, &norm, kCpu); }),
      "amp::global_norm: tensor 0: xs data pointer is not aligned to its 4-byte element size");

  auto null_data = v;
  null_data[1].data = nullptr;
  EXPECT_NE(error_of([&] {
              global_norm(null_data, &norm, kCpu);
            }).find("tensor 1: xs has a null data pointer"),
            std::string::npos);

  HostList half = random_list(DType::F16, {4, 4, 4}, 2);
  AdamOptions o;
  EXPECT_EQ(error_of([&] {
              fused_adam_step(v, v, views(half), v, {}, o, nullptr, nullptr, nullptr, kCpu);
            }),
            "amp::fused_adam_step: tensor 0: exp_avg must be f32, got f16");

  HostList short_list = random_list(DType::F32, {4, 5, 4}, 3);
  EXPECT_EQ(error_of([&] { cast_copy(v, views(short_list), kCpu); }),
            "amp::cast_copy: tensor 1: src has 4 elements but dst has 5");
  EXPECT_EQ(error_of([&] { cast_copy(v, {}, kCpu); }),
            "amp::cast_copy: src has 3 tensors but dst has 0");

  EXPECT_EQ(error_of([&] { unscale_and_check(v, nullptr, &found, kCpu); }),
            "amp::unscale_and_check: inv_scale must not be null");
  EXPECT_NE(error_of([&] {
              clip_by_global_norm(v, v, 0.0f, &norm, ClipRule::MindSpore, nullptr, kCpu);
            }).find("clip_norm must be positive"),
            std::string::npos);
  float scale = 1.0f;
  std::int32_t tracker = 0;
  EXPECT_NE(error_of([&] {
              update_scale(&scale, &tracker, &found, 1.0f, 0.5f, 10, kCpu);
            }).find("growth_factor must be > 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              update_scale(&scale, &tracker, &found, 2.0f, 1.0f, 10, kCpu);
            }).find("backoff_factor"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              update_scale(&scale, &tracker, &found, 2.0f, 0.5f, 0, kCpu);
            }).find("growth_interval"),
            std::string::npos);
  // Issue 13 item 14: an infinite growth factor, and a ClipRule cast from an out-of-range integer.
  EXPECT_NE(error_of([&] {
              update_scale(&scale, &tracker, &found, INFINITY, 0.5f, 10, kCpu);
            }).find("growth_factor must be > 1 and finite"),
            std::string::npos);
  float coef = 0.0f;
  EXPECT_EQ(error_of([&] { clip_coefficient(1.0f, &norm, static_cast<ClipRule>(7), &coef, kCpu); }),
            "amp::clip_coefficient: invalid ClipRule value 7 (MindSpore or PyTorch)");
  EXPECT_NE(error_of([&] {
              clip_by_global_norm(v, v, 1.0f, &norm, static_cast<ClipRule>(2), nullptr, kCpu);
            }).find("invalid ClipRule value 2"),
            std::string::npos);
  SgdOptions nesterov;
  nesterov.nesterov = true;
  EXPECT_NE(error_of([&] {
              fused_sgd_step(v, v, {}, {}, nesterov, nullptr, nullptr, nullptr, kCpu);
            }).find("nesterov"),
            std::string::npos);
}

TEST(Errors, AreRuntimeErrors) {
  const float inv = 1.0f;
  EXPECT_THROW(unscale_and_check({}, &inv, nullptr, kCpu), std::runtime_error);
}

// Issue 39 item 4: ExecContext::threads = 2^30 made libgomp allocate its per-thread state for 2^30
// threads (about 240 GB) and end the process. A cap above what OpenMP uses by itself is lowered to
// that (the results never depend on the thread count); a negative one is an error.
TEST(Errors, ThreadCountsAreCheckedAndCapped) {
  HostList x = random_list(DType::F32, {5 * 65536 + 3, 17}, 4); // enough chunks to fork
  float want = -1.0f, huge = -1.0f, norm = -1.0f;
  global_norm(views(x), &want, ExecContext{{}, nullptr, 1});
  global_norm(views(x), &huge, ExecContext{{}, nullptr, 1 << 30});
  EXPECT_EQ(huge, want);
  EXPECT_EQ(error_of([&] { global_norm(views(x), &norm, ExecContext{{}, nullptr, -1}); }),
            "amp::global_norm: threads must be >= 0 (0: the runtime decides), got -1");
  HostTensor a(DType::F32, 65 * 65), b(DType::F32, 65 * 65), c(DType::F32, 65 * 65);
  GemmArgs g; // 65^3 multiply-adds: over the size the CPU GEMM forks for
  g.a = a.view(), g.b = b.view(), g.c = c.view();
  g.m = 65, g.n = 65, g.k = 65;
  EXPECT_NO_THROW(gemm(g, ExecContext{{}, nullptr, 1 << 30}));
  EXPECT_EQ(error_of([&] { gemm(g, ExecContext{{}, nullptr, -3}); }),
            "amp::gemm: threads must be >= 0 (0: the runtime decides), got -3");
}

TEST(CudaAvailability, CudaCallsWithoutADeviceAreErrors) {
  if (cuda_available())
    GTEST_SKIP() << "a CUDA device is present";
  ExecContext gpu;
  gpu.device = Device{DeviceKind::CUDA, 0};
  HostList g = random_list(DType::F32, {4}, 1);
  auto v = views(g);
  v[0].device = gpu.device;
  float s = 1.0f, found = 0.0f;
#if defined(AMP_WITH_CUDA)
  const std::string want =
      "amp::unscale_and_check: no CUDA device or driver is available for cuda:0";
#else
  const std::string want =
      "amp::unscale_and_check: the runtime was built without CUDA, cannot run on cuda:0";
#endif
  EXPECT_EQ(error_of([&] { unscale_and_check(v, &s, &found, gpu); }), want);
}

TEST(CudaAvailability, AnswersWithoutThrowing) {
  EXPECT_NO_THROW((void)cuda_available());
#if !defined(AMP_WITH_CUDA)
  EXPECT_FALSE(cuda_available());
#endif
}

// ---- GEMM reference ---------------------------------------------------------------------------

void ref_gemm(const GemmArgs &g, const HostTensor &a, const HostTensor &b, const HostTensor &c0,
              const HostTensor *bias, std::vector<double> &out) {
  out.assign(static_cast<std::size_t>(g.m * g.n), 0.0);
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < g.k; ++p)
        s += a.get(g.trans_a ? p * g.m + i : i * g.k + p) *
             b.get(g.trans_b ? j * g.k + p : p * g.n + j);
      double v = g.alpha * s + g.beta * c0.get(i * g.n + j);
      if (bias)
        v += bias->get(j);
      if (g.relu)
        v = std::max(v, 0.0);
      out[static_cast<std::size_t>(i * g.n + j)] = c0.round(v);
    }
}

TEST(Gemm, CpuReferenceAllLayoutsAndEpilogues) {
  const std::int64_t m = 37, n = 29, k = 53;
  for (DType in : kAllDTypes)
    for (DType out : kAllDTypes)
      for (int layout = 0; layout < 4; ++layout)
        for (bool with_bias : {false, true}) {
          HostTensor a = random_list(in, {m * k}, 1)[0];
          HostTensor b = random_list(in, {k * n}, 2)[0];
          HostTensor c = random_list(out, {m * n}, 3)[0];
          HostTensor bias = random_list(out, {n}, 4)[0];
          const HostTensor c0 = c;
          GemmArgs g;
          g.a = a.view();
          g.b = b.view();
          g.c = c.view();
          if (with_bias)
            g.bias = bias.view();
          g.m = m, g.n = n, g.k = k;
          g.trans_a = layout & 1;
          g.trans_b = layout & 2;
          g.alpha = 0.5f;
          g.beta = with_bias ? 0.25f : 0.0f;
          g.relu = with_bias;
          gemm(g, kCpu);
          std::vector<double> want;
          ref_gemm(g, a, b, c0, with_bias ? &bias : nullptr, want);
          EXPECT_TRUE(lists_close({c}, {want}, dtype_rtol(out) + 1e-5, 1e-3))
              << dtype_name(in) << "->" << dtype_name(out) << " layout " << layout;
        }
}

TEST(Gemm, ShapeErrors) {
  HostTensor a(DType::F16, 6), b(DType::F16, 6), c(DType::F32, 4);
  GemmArgs g;
  g.a = a.view(), g.b = b.view(), g.c = c.view();
  g.m = 2, g.n = 2, g.k = 3;
  EXPECT_NO_THROW(gemm(g, kCpu));
  g.k = 4;
  EXPECT_EQ(error_of([&] { gemm(g, kCpu); }), "amp::gemm: a has 6 elements, expected 8");
}

// Issue 13 item 10: sizes whose products overflow int64 (and could wrap to a small buffer's size)
// are an error before any kernel runs.
TEST(Gemm, SizeProductsThatOverflowAreErrors) {
  HostTensor a(DType::F16, 6), b(DType::F16, 6), c(DType::F32, 4);
  GemmArgs g;
  g.a = a.view(), g.b = b.view(), g.c = c.view();
  g.m = std::int64_t(1) << 40, g.k = std::int64_t(1) << 40, g.n = 2;
  EXPECT_EQ(error_of([&] { gemm(g, kCpu); }),
            "amp::gemm: m*k = 1099511627776 * 1099511627776 overflows a 64-bit element count");
  // 2^62 * 4 wraps to 0 in two's complement: an empty a would have "matched".
  g.m = std::int64_t(1) << 62, g.k = 4, g.n = 0;
  EXPECT_NE(error_of([&] { gemm(g, kCpu); }).find("overflows"), std::string::npos);
}

} // namespace
} // namespace amp::test

namespace amp::test {
namespace {

// The CPU backend converts blocks with F16C where the CPU has it: every fp16/bf16 bit pattern
// through cast_copy (the block path) must widen exactly, and narrowing must round as the reference
// does.
TEST(Conversions, BlockPathsMatchTheReference) {
  for (DType t : {DType::F16, DType::BF16}) {
    HostTensor all(t, 65536);
    for (std::uint32_t b = 0; b < 65536; ++b)
      all.b16[b] = static_cast<std::uint16_t>(b);
    HostList src = {all}, wide = {HostTensor(DType::F32, 65536)}, back = {HostTensor(t, 65536)};
    cast_copy(views(src), views(wide), ExecContext{});
    for (std::int64_t i = 0; i < 65536; ++i)
      ASSERT_TRUE(close(wide[0].get(i), all.get(i), 0.0)) << dtype_name(t) << " " << i;
    cast_copy(views(wide), views(back), ExecContext{});
    for (std::int64_t i = 0; i < 65536; ++i)
      ASSERT_TRUE(close(back[0].get(i), all.get(i), 0.0)) << dtype_name(t) << " " << i;
  }
  // Narrowing random fp32 (including subnormal and overflowing results) through the block path.
  std::mt19937 rng(3);
  std::uniform_int_distribution<std::uint32_t> any;
  HostTensor f(DType::F32, 100000);
  for (float &x : f.f32) {
    std::uint32_t u = any(rng);
    u = (u & 0x807fffffu) | ((100u + (u >> 24) % 60u) << 23); // exponents around fp16's range
    std::memcpy(&x, &u, 4);
  }
  for (DType t : {DType::F16, DType::BF16}) {
    HostList src = {f}, dst = {HostTensor(t, 100000)};
    cast_copy(views(src), views(dst), ExecContext{});
    for (std::int64_t i = 0; i < 100000; ++i)
      ASSERT_EQ(dst[0].get(i), dst[0].round(f.get(i))) << dtype_name(t) << " " << f.get(i);
  }
}

} // namespace
} // namespace amp::test

namespace amp::test {
namespace {

// The CUDA launch packing, checked on the host: every (tensor, chunk) lands in exactly one block,
// in list order, with the right pointers, numel and vector flag, within the tables' limits.
template <int L> void check_packing(const std::vector<std::int64_t> &sizes, bool misalign_one) {
  std::vector<TensorView> lists[L];
  for (int l = 0; l < L; ++l)
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      // Fake, never dereferenced addresses that encode (list, tensor).
      auto addr =
          (static_cast<std::uintptr_t>(l + 1) << 40) + (static_cast<std::uintptr_t>(i) << 8);
      if (misalign_one && l == L - 1 && i == 3)
        addr += 4; // fp32 but not 16-byte aligned: scalar path
      lists[l].push_back({reinterpret_cast<void *>(addr), DType::F32, sizes[i], {}});
    }
  detail::ApplyArgs args;
  for (int l = 0; l < L; ++l)
    args.lists[static_cast<std::size_t>(l)] = &lists[l];
  const std::vector<detail::Chunk> expected = detail::plan_chunks(lists[0]);

  auto meta = std::make_unique<detail::cuda_plan::Meta<L>>();
  std::size_t next = 0;
  int launches = 0;
  detail::cuda_plan::pack_launches<L>(args, *meta, [&](int blocks) {
    ++launches;
    ASSERT_GT(blocks, 0);
    ASSERT_LE(blocks, detail::cuda_plan::kMaxBlocks);
    for (int b = 0; b < blocks; ++b, ++next) {
      ASSERT_LT(next, expected.size());
      const detail::Chunk &want = expected[next];
      const int slot = meta->block_tensor[b];
      ASSERT_LT(slot, (detail::cuda_plan::Meta<L>::kTensors));
      ASSERT_EQ(meta->block_chunk[b] * detail::kChunkElements, want.begin);
      ASSERT_EQ(meta->numel[slot], sizes[static_cast<std::size_t>(want.tensor)]);
      for (int l = 0; l < L; ++l)
        ASSERT_EQ(meta->ptr[l][slot], lists[l][static_cast<std::size_t>(want.tensor)].data);
      ASSERT_EQ(meta->vec_ok[slot], misalign_one && want.tensor == 3 ? 0 : 1);
    }
  });
  EXPECT_EQ(next, expected.size());
  if (expected.empty()) {
    EXPECT_EQ(launches, 0);
  }
}

TEST(CudaLaunchPacking, CoversEveryChunkOnce) {
  // Many small tensors (more than one tensor table), with empty ones in between.
  std::vector<std::int64_t> many;
  for (int i = 0; i < 1300; ++i)
    many.push_back(i % 10 == 9 ? 0 : 100 + i);
  check_packing<1>(many, true);
  check_packing<5>(many, true);
  // Exactly a full tensor table, and one more.
  check_packing<2>(std::vector<std::int64_t>(512, 70000), false);
  check_packing<4>(std::vector<std::int64_t>(321, 5), true);
  // Tensors cut by a full block table (2048 chunks), several times over.
  check_packing<1>({5, 3000 * detail::kChunkElements + 7, 1, 2047 * detail::kChunkElements, 9},
                   true);
  check_packing<5>({2049 * detail::kChunkElements, 2048 * detail::kChunkElements, 1}, false);
  // A tensor over 2^31 elements and an empty list.
  check_packing<1>({(std::int64_t{1} << 31) + 3}, false);
  check_packing<2>({}, false);
}

} // namespace
} // namespace amp::test
