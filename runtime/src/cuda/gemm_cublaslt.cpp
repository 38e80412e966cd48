// Mixed-precision GEMM on CUDA through cuBLASLt: fp16/bf16 (or fp32) inputs, fp32 accumulation,
// output dtype of choice, optional bias and ReLU fused into the epilogue.
//
// The API is row-major; cuBLASLt is column-major. A row-major C[m,n] is a column-major C^T[n,m],
// and C^T = op(B)^T op(A)^T, so B goes in cuBLASLt's A slot and A in its B slot; the per-row bias
// of the column-major result is then the per-column bias[n] of the row-major one.
//
// Alignment: cuBLASLt assumes 256-byte aligned operands unless told otherwise, and an offset view
// (a row slice, a tensor that starts mid-storage) then fails or runs a kernel that may not read it.
// Each operand's actual alignment goes into the preference and into the plan cache's key.
//
// Without cuBLASLt at configure time (AMP_WITH_CUBLASLT unset) the CUDA GEMM is a clear error.
#include "../backend.h"

#include <string>

#if defined(AMP_WITH_CUBLASLT)

#include "scratch.h"

#include <fmt/format.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace amp::detail::cuda {
namespace {

[[noreturn]] void gemm_fail(const std::string &what) {
  throw Error(fmt::format("amp::gemm: {}", what));
}

void check_lt(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    gemm_fail(fmt::format("{} failed: cuBLASLt status {}", what, static_cast<int>(s)));
}

void check_rt(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    gemm_fail(fmt::format("{}: {}", what, cudaGetErrorString(e)));
  }
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
  case DType::F32:
    return CUDA_R_32F;
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

/// One cuBLASLt handle per device, created on first use and kept for the process.
cublasLtHandle_t handle_for(int device) {
  static std::mutex mutex;
  static std::unordered_map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end())
    return it->second;
  cublasLtHandle_t h = nullptr;
  check_lt(cublasLtCreate(&h), "cublasLtCreate");
  handles.emplace(device, h);
  return h;
}

/// Everything about a matmul but its pointers: descriptors and the algorithm cuBLASLt chose. Built
/// once per shape (the heuristic query and descriptor setup cost tens of microseconds, as much as a
/// small GEMM) and kept for the process.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;
};

/// The largest power of two up to 256 that divides the address (cuBLASLt's alignment unit).
std::uint32_t alignment_of(const void *p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t align = 256;
  while (align > 1 && address % align != 0)
    align >>= 1;
  return align;
}

/// Operand alignments in bytes, in our naming (a, b, c; d is c).
struct Alignment {
  std::uint32_t a, b, c;
};

struct PlanKey {
  int device;
  std::int64_t m, n, k;
  int a_type, c_type;
  bool trans_a, trans_b, bias, relu;
  Alignment align;
  bool operator==(const PlanKey &o) const {
    return device == o.device && m == o.m && n == o.n && k == o.k && a_type == o.a_type &&
           c_type == o.c_type && trans_a == o.trans_a && trans_b == o.trans_b && bias == o.bias &&
           relu == o.relu && align.a == o.align.a && align.b == o.align.b && align.c == o.align.c;
  }
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey &k) const {
    std::size_t h = std::hash<std::int64_t>()(k.m);
    auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix(std::hash<std::int64_t>()(k.n));
    mix(std::hash<std::int64_t>()(k.k));
    mix(static_cast<std::size_t>(k.device) << 8 | static_cast<std::size_t>(k.a_type) << 4 |
        static_cast<std::size_t>(k.c_type));
    mix(static_cast<std::size_t>(k.trans_a) | static_cast<std::size_t>(k.trans_b) << 1 |
        static_cast<std::size_t>(k.bias) << 2 | static_cast<std::size_t>(k.relu) << 3);
    mix(static_cast<std::size_t>(k.align.a) << 18 | static_cast<std::size_t>(k.align.b) << 9 |
        static_cast<std::size_t>(k.align.c));
    return h;
  }
};

constexpr std::size_t kWorkspaceBytes = 32u << 20;

/// Destroys a half-built plan's descriptors unless released (make_plan throws on any failure).
struct PlanGuard {
  Plan *plan;
  ~PlanGuard() {
    if (!plan)
      return;
    if (plan->c)
      cublasLtMatrixLayoutDestroy(plan->c);
    if (plan->b)
      cublasLtMatrixLayoutDestroy(plan->b);
    if (plan->a)
      cublasLtMatrixLayoutDestroy(plan->a);
    if (plan->desc)
      cublasLtMatmulDescDestroy(plan->desc);
  }
};

struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using Preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PreferenceDeleter>;

void set_pref(const Preference &pref, cublasLtMatmulPreferenceAttributes_t attr, const void *value,
              std::size_t size, const char *what) {
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref.get(), attr, value, size), what);
}

Plan make_plan(const GemmArgs &g, const Alignment &align, cublasLtHandle_t handle) {
  Plan p;
  PlanGuard guard{&p};
  check_lt(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
  // Swapped operands (see the file comment): cuBLASLt's A is our B, its B is our A.
  const cublasOperation_t op_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
           "TRANSA");
  check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
           "TRANSB");
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.bias.data)
    epilogue = g.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  else if (g.relu)
    epilogue = CUBLASLT_EPILOGUE_RELU;
  check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                          sizeof epilogue),
           "EPILOGUE");
  if (g.bias.data) {
    const void *bias = g.bias.data; // the heuristic may look at it; every call sets its own
    check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof bias),
             "BIAS_POINTER");
  }
  const auto n = static_cast<std::uint64_t>(g.n), m = static_cast<std::uint64_t>(g.m),
             k = static_cast<std::uint64_t>(g.k);
  // Our B: row-major [k,n] is column-major n x k (ld n); transposed, row-major [n,k] is k x n (ld
  // k).
  check_lt(cublasLtMatrixLayoutCreate(&p.a, cuda_type(g.b.dtype), g.trans_b ? k : n,
                                      g.trans_b ? n : k,
                                      static_cast<std::int64_t>(g.trans_b ? k : n)),
           "layout B");
  // Our A: row-major [m,k] is column-major k x m (ld k); transposed, [k,m] is m x k (ld m).
  check_lt(cublasLtMatrixLayoutCreate(&p.b, cuda_type(g.a.dtype), g.trans_a ? m : k,
                                      g.trans_a ? k : m,
                                      static_cast<std::int64_t>(g.trans_a ? m : k)),
           "layout A");
  check_lt(
      cublasLtMatrixLayoutCreate(&p.c, cuda_type(g.c.dtype), n, m, static_cast<std::int64_t>(n)),
      "layout C");

  cublasLtMatmulPreference_t raw_pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&raw_pref), "PreferenceCreate");
  const Preference pref(raw_pref);
  const std::size_t workspace_bytes = kWorkspaceBytes;
  set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
           sizeof workspace_bytes, "MAX_WORKSPACE_BYTES");
  // Swapped again: cuBLASLt's A is our b, its B our a; its C and D are both our c.
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align.b, sizeof align.b,
           "MIN_ALIGNMENT_A_BYTES");
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align.a, sizeof align.a,
           "MIN_ALIGNMENT_B_BYTES");
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align.c, sizeof align.c,
           "MIN_ALIGNMENT_C_BYTES");
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align.c, sizeof align.c,
           "MIN_ALIGNMENT_D_BYTES");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.a, p.b, p.c, p.c,
                                                          pref.get(), 1, &heuristic, &found);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0)
    gemm_fail(fmt::format("no cuBLASLt algorithm for inputs {} and output {} (status {})",
                          dtype_name(g.a.dtype), dtype_name(g.c.dtype), static_cast<int>(s)));
  p.algo = heuristic.algo;
  p.workspace = heuristic.workspaceSize;
  guard.plan = nullptr; // complete: the cache owns the descriptors from here on
  return p;
}

} // namespace

void gemm(const GemmArgs &g, const ExecContext &ctx) {
  if (g.k == 0)
    gemm_fail("k == 0 is not supported on CUDA (C = beta * C + bias): use the CPU reference");
  int previous = 0;
  check_rt(cudaGetDevice(&previous), "cudaGetDevice");
  if (previous != ctx.device.index)
    check_rt(cudaSetDevice(ctx.device.index), "cudaSetDevice");
  struct Restore {
    int device;
    ~Restore() { cudaSetDevice(device); }
  } restore{previous};

  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  cublasLtHandle_t handle = handle_for(ctx.device.index);
  const Alignment align{alignment_of(g.a.data), alignment_of(g.b.data), alignment_of(g.c.data)};
  const PlanKey key{ctx.device.index,
                    g.m,
                    g.n,
                    g.k,
                    static_cast<int>(g.a.dtype),
                    static_cast<int>(g.c.dtype),
                    g.trans_a,
                    g.trans_b,
                    g.bias.data != nullptr,
                    g.relu,
                    align};

  static std::mutex mutex;
  static std::unordered_map<PlanKey, Plan, PlanKeyHash> plans;
  // Held through the enqueue: the bias pointer is an attribute of the shared descriptor.
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(key);
  if (it == plans.end())
    it = plans.emplace(key, make_plan(g, align, handle)).first;
  const Plan &plan = it->second;
  if (g.bias.data) {
    const void *bias = g.bias.data;
    check_lt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof bias),
             "BIAS_POINTER");
  }
  // Freed in stream order after the matmul, also when cublasLtMatmul fails.
  ScratchBuffer workspace;
  if (plan.workspace > 0)
    check_rt(workspace.allocate(ctx.device.index, plan.workspace, stream), "workspace allocation");
  const float alpha = g.alpha, beta = g.beta;
  check_lt(cublasLtMatmul(handle, plan.desc, &alpha, g.b.data, plan.a, g.a.data, plan.b, &beta,
                          g.c.data, plan.c, g.c.data, plan.c, &plan.algo, workspace.get(),
                          plan.workspace, stream),
           "cublasLtMatmul");
}

} // namespace amp::detail::cuda

#else // !AMP_WITH_CUBLASLT

namespace amp::detail::cuda {

void gemm(const GemmArgs &, const ExecContext &) {
  throw Error("amp::gemm: this runtime was built without cuBLASLt (cublasLt.h or libcublasLt was "
              "not found when it was configured), so there is no CUDA GEMM; use the CPU one");
}

} // namespace amp::detail::cuda

#endif // AMP_WITH_CUBLASLT
