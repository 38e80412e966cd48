// Mixed-precision GEMM on CUDA through cuBLASLt: fp16/bf16 (or fp32) inputs, fp32 accumulation,
// output dtype of choice, optional bias and ReLU fused into the epilogue.
//
// The API is row-major; cuBLASLt is column-major. A row-major C[m,n] is a column-major C^T[n,m], and
// C^T = op(B)^T op(A)^T, so B goes in cuBLASLt's A slot and A in its B slot; the per-row bias of
// the column-major result is then the per-column bias[n] of the row-major one.
#include "../backend.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace amp::detail::cuda {
namespace {

[[noreturn]] void gemm_fail(const std::string &what) { throw Error("amp::gemm: " + what); }

void check_lt(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    gemm_fail(std::string(what) + " failed: cuBLASLt status " + std::to_string(static_cast<int>(s)));
}

void check_rt(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    gemm_fail(std::string(what) + ": " + cudaGetErrorString(e));
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

template <class T, void (*Destroy)(T)> struct Owned {
  T value = nullptr;
  ~Owned() {
    if (value)
      Destroy(value);
  }
};
void destroy_desc(cublasLtMatmulDesc_t d) { cublasLtMatmulDescDestroy(d); }
void destroy_layout(cublasLtMatrixLayout_t l) { cublasLtMatrixLayoutDestroy(l); }
void destroy_pref(cublasLtMatmulPreference_t p) { cublasLtMatmulPreferenceDestroy(p); }

constexpr std::size_t kWorkspaceBytes = 32u << 20;

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

  Owned<cublasLtMatmulDesc_t, destroy_desc> desc;
  check_lt(cublasLtMatmulDescCreate(&desc.value, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
  // Swapped operands (see the file comment): cuBLASLt's A is our B, its B is our A.
  const cublasOperation_t op_a = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "TRANSA");
  check_lt(cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "TRANSB");
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.bias.data)
    epilogue = g.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  else if (g.relu)
    epilogue = CUBLASLT_EPILOGUE_RELU;
  check_lt(cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), "EPILOGUE");
  if (g.bias.data) {
    const void *bias = g.bias.data;
    check_lt(cublasLtMatmulDescSetAttribute(desc.value, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "BIAS_POINTER");
  }

  const auto n = static_cast<std::uint64_t>(g.n), m = static_cast<std::uint64_t>(g.m),
             k = static_cast<std::uint64_t>(g.k);
  Owned<cublasLtMatrixLayout_t, destroy_layout> la, lb, lc;
  // Our B: row-major [k,n] is column-major n x k (ld n); transposed, row-major [n,k] is k x n (ld k).
  check_lt(cublasLtMatrixLayoutCreate(&la.value, cuda_type(g.b.dtype), g.trans_b ? k : n, g.trans_b ? n : k,
                                      static_cast<std::int64_t>(g.trans_b ? k : n)), "layout B");
  // Our A: row-major [m,k] is column-major k x m (ld k); transposed, [k,m] is m x k (ld m).
  check_lt(cublasLtMatrixLayoutCreate(&lb.value, cuda_type(g.a.dtype), g.trans_a ? m : k, g.trans_a ? k : m,
                                      static_cast<std::int64_t>(g.trans_a ? m : k)), "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&lc.value, cuda_type(g.c.dtype), n, m, static_cast<std::int64_t>(n)), "layout C");

  Owned<cublasLtMatmulPreference_t, destroy_pref> pref;
  check_lt(cublasLtMatmulPreferenceCreate(&pref.value), "PreferenceCreate");
  const std::size_t workspace_bytes = kWorkspaceBytes;
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &workspace_bytes, sizeof workspace_bytes), "workspace pref");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  check_lt(cublasLtMatmulAlgoGetHeuristic(handle, desc.value, la.value, lb.value, lc.value, lc.value,
                                          pref.value, 1, &heuristic, &found), "AlgoGetHeuristic");
  if (found == 0)
    gemm_fail(std::string("no cuBLASLt algorithm for inputs ") + dtype_name(g.a.dtype) + " and output " +
              dtype_name(g.c.dtype));

  void *workspace = nullptr;
  if (heuristic.workspaceSize > 0)
    check_rt(cudaMallocAsync(&workspace, heuristic.workspaceSize, stream), "workspace allocation");
  const float alpha = g.alpha, beta = g.beta;
  const cublasStatus_t status =
      cublasLtMatmul(handle, desc.value, &alpha, g.b.data, la.value, g.a.data, lb.value, &beta, g.c.data,
                     lc.value, g.c.data, lc.value, &heuristic.algo, workspace, heuristic.workspaceSize, stream);
  if (workspace)
    cudaFreeAsync(workspace, stream);
  check_lt(status, "cublasLtMatmul");
}

} // namespace amp::detail::cuda
