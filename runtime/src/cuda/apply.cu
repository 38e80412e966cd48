// CUDA multi-tensor apply: one launch runs a functor from functors.h over many tensors, chunked.
//
// Design (as Apex/PyTorch multi_tensor_apply, with 32 KB kernel parameters, CUDA >= 12.1, sm >=
// 70): the host packs up to Limits<L>::tensors tensors (a pointer and dtype per list, numel, a
// vector flag) and up to 2048 (tensor, chunk) block assignments into the kernel argument, so a
// launch needs no device-side metadata buffer and no host-to-device copy. Each block walks one
// 2^16-element chunk with 512 threads; when every list of a tensor is aligned, each thread moves 4
// elements per list per load (16 bytes of fp32, 8 bytes of fp16/bf16), two such groups in flight
// per iteration; misaligned tensors take element loads, four per list in flight. Every load of an
// iteration is issued before any is converted (see load4_raw).
//
// Norms: each block writes its sum of squares to its own slot of a stream-ordered scratch buffer
// (scratch.h: the runtime's own pool, kept across synchronisations; no atomics); one cleanup block
// adds the slots in a fixed order in fp64 and takes the sqrt. The same list therefore gives the
// same bits on every run. inf/NaN: a block that saw one stores 1.0f into found_inf (racing stores
// of the same value are benign); nothing ever stores 0 there.
//
// Bytes moved per element = sum over lists read of their element size + over lists written. The
// floor of a launch is that total / the device's copy bandwidth (H200: ~4.3 TB/s).
#include "../backend.h"
#include "../functors.h"
#include "../op_table.h"
#include "../launch_plan.h"
#include "scratch.h"

#include <cuda_runtime.h>

#include <string>

namespace amp::detail::cuda {
namespace {

constexpr int kThreads = 512;
using cuda_plan::kMaxBlocks;
using cuda_plan::Meta;

// Loads are split from conversions: a thread first issues every load of an iteration (all lists,
// all groups) as raw bits, then widens them. A conversion placed right after its load would make
// the next load wait behind it (one 8-byte fp16 load in flight per thread); issued together, the
// loads overlap and the memory system sees kGroups x lists requests per thread at once.

/// The bits of one element: fp32 in all 32 bits, fp16/bf16 in the low 16.
__device__ __forceinline__ std::uint32_t load1_raw(const void *base, std::uint8_t dt,
                                                   std::int64_t i) {
  if (static_cast<DType>(dt) == DType::F32)
    return static_cast<const std::uint32_t *>(base)[i];
  return static_cast<const std::uint16_t *>(base)[i];
}

__device__ __forceinline__ float widen1(std::uint32_t raw, std::uint8_t dt) {
  switch (static_cast<DType>(dt)) {
  case DType::F32:
    return __uint_as_float(raw);
  case DType::F16:
    return half_to_float(static_cast<std::uint16_t>(raw));
  case DType::BF16:
    return bfloat16_to_float(static_cast<std::uint16_t>(raw));
  }
  return 0.0f;
}

__device__ __forceinline__ void store1(void *base, std::uint8_t dt, std::int64_t i, float v) {
  switch (static_cast<DType>(dt)) {
  case DType::F32:
    static_cast<float *>(base)[i] = v;
    return;
  case DType::F16:
    static_cast<std::uint16_t *>(base)[i] = float_to_half(v);
    return;
  case DType::BF16:
    static_cast<std::uint16_t *>(base)[i] = float_to_bfloat16(v);
    return;
  }
}

/// The bits of four consecutive elements from an aligned address: one 16-byte load of fp32, or one
/// 8-byte load of fp16/bf16 (in x and y).
__device__ __forceinline__ uint4 load4_raw(const void *base, std::uint8_t dt, std::int64_t i) {
  if (static_cast<DType>(dt) == DType::F32)
    return *reinterpret_cast<const uint4 *>(static_cast<const float *>(base) + i);
  const uint2 x = *reinterpret_cast<const uint2 *>(static_cast<const std::uint16_t *>(base) + i);
  return make_uint4(x.x, x.y, 0u, 0u);
}

__device__ __forceinline__ void widen4(uint4 raw, std::uint8_t dt, float out[4]) {
  if (static_cast<DType>(dt) == DType::F32) {
    out[0] = __uint_as_float(raw.x), out[1] = __uint_as_float(raw.y);
    out[2] = __uint_as_float(raw.z), out[3] = __uint_as_float(raw.w);
    return;
  }
  const std::uint16_t h[4] = {
      static_cast<std::uint16_t>(raw.x & 0xffffu), static_cast<std::uint16_t>(raw.x >> 16),
      static_cast<std::uint16_t>(raw.y & 0xffffu), static_cast<std::uint16_t>(raw.y >> 16)};
  const bool half = static_cast<DType>(dt) == DType::F16;
#pragma unroll
  for (int e = 0; e < 4; ++e)
    out[e] = half ? half_to_float(h[e]) : bfloat16_to_float(h[e]);
}

__device__ __forceinline__ void store4(void *base, std::uint8_t dt, std::int64_t i,
                                       const float in[4]) {
  if (static_cast<DType>(dt) == DType::F32) {
    *reinterpret_cast<float4 *>(static_cast<float *>(base) + i) =
        make_float4(in[0], in[1], in[2], in[3]);
    return;
  }
  const bool half = static_cast<DType>(dt) == DType::F16;
  std::uint32_t h[4];
#pragma unroll
  for (int e = 0; e < 4; ++e)
    h[e] = half ? float_to_half(in[e]) : float_to_bfloat16(in[e]);
  *reinterpret_cast<uint2 *>(static_cast<std::uint16_t *>(base) + i) =
      make_uint2(h[0] | (h[1] << 16), h[2] | (h[3] << 16));
}

template <class Fn, int L = Fn::kLists>
__global__ void __launch_bounds__(kThreads)
    multi_tensor_kernel(const __grid_constant__ Meta<L> meta, Fn fn, float *partials,
                        float *found_inf) {
  // Uniform across the block: every thread reads the same device scalars.
  if (!fn.resolve())
    return;
  const int t = meta.block_tensor[blockIdx.x];
  const std::int64_t begin =
      static_cast<std::int64_t>(meta.block_chunk[blockIdx.x]) * kChunkElements;
  const std::int64_t remaining = meta.numel[t] - begin;
  const int n = static_cast<int>(remaining < kChunkElements ? remaining : kChunkElements);

  float square = 0.0f;
  unsigned nonfinite = 0;
  int scalar_from = 0;
  if (meta.vec_ok[t]) {
    constexpr int kGroups = 2; // vector groups in flight per thread
    const int n4 = n & ~3;
    for (int base = threadIdx.x * 4; base < n4; base += kThreads * 4 * kGroups) {
      uint4 raw[kGroups][L];
#pragma unroll
      for (int g = 0; g < kGroups; ++g) {
        const int i = base + g * kThreads * 4;
#pragma unroll
        for (int l = 0; l < L; ++l)
          raw[g][l] = i < n4 && fn.reads(l) ? load4_raw(meta.ptr[l][t], meta.dtype[l][t], begin + i)
                                            : make_uint4(0u, 0u, 0u, 0u);
      }
#pragma unroll
      for (int g = 0; g < kGroups; ++g) {
        const int i = base + g * kThreads * 4;
        if (i >= n4)
          break;
        float v[4][L];
#pragma unroll
        for (int l = 0; l < L; ++l) {
          float x[4];
          widen4(raw[g][l], meta.dtype[l][t], x);
#pragma unroll
          for (int e = 0; e < 4; ++e)
            v[e][l] = x[e];
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          ElementStat s;
          fn(v[e], s);
          square += s.square;
          nonfinite |= s.nonfinite;
        }
#pragma unroll
        for (int l = 0; l < L; ++l) {
          if (!fn.writes(l))
            continue;
          float x[4];
#pragma unroll
          for (int e = 0; e < 4; ++e)
            x[e] = v[e][l];
          store4(meta.ptr[l][t], meta.dtype[l][t], begin + i, x);
        }
      }
    }
    scalar_from = n4;
  }
  // Misaligned tensors (offset views) and the last < 4 elements: element loads, kScalarGroups
  // independent ones per list in flight per thread, same split of loads and conversions.
  constexpr int kScalarGroups = 4;
  for (int first = scalar_from + threadIdx.x; first < n; first += kThreads * kScalarGroups) {
    std::uint32_t raw[kScalarGroups][L];
#pragma unroll
    for (int g = 0; g < kScalarGroups; ++g) {
      const int i = first + g * kThreads;
#pragma unroll
      for (int l = 0; l < L; ++l)
        raw[g][l] =
            i < n && fn.reads(l) ? load1_raw(meta.ptr[l][t], meta.dtype[l][t], begin + i) : 0u;
    }
#pragma unroll
    for (int g = 0; g < kScalarGroups; ++g) {
      const int i = first + g * kThreads;
      if (i >= n)
        break;
      float v[L];
#pragma unroll
      for (int l = 0; l < L; ++l)
        v[l] = widen1(raw[g][l], meta.dtype[l][t]);
      ElementStat s;
      fn(v, s);
      square += s.square;
      nonfinite |= s.nonfinite;
#pragma unroll
      for (int l = 0; l < L; ++l)
        if (fn.writes(l))
          store1(meta.ptr[l][t], meta.dtype[l][t], begin + i, v[l]);
    }
  }

  if (found_inf) {
    if (__syncthreads_or(static_cast<int>(nonfinite)) && threadIdx.x == 0)
      *found_inf = 1.0f;
  }
  if (partials) {
    // Fixed-shape tree: warp shuffles, then the 16 warp sums by warp 0.
    __shared__ float warp_sums[kThreads / 32];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      square += __shfl_down_sync(0xffffffffu, square, offset);
    if ((threadIdx.x & 31) == 0)
      warp_sums[threadIdx.x >> 5] = square;
    __syncthreads();
    if (threadIdx.x < 32) {
      float w = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0f;
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1)
        w += __shfl_down_sync(0xffffffffu, w, offset);
      if (threadIdx.x == 0)
        partials[blockIdx.x] = w;
    }
  }
}

/// One block: sums the per-chunk partials in a fixed order in fp64, writes sqrt to *norm.
/// Reads 4 bytes per chunk of input (1/16384 of an fp32 pass): negligible next to the main kernel.
__global__ void __launch_bounds__(1024)
    finalize_norm_kernel(const float *partials, std::int64_t count, float *norm) {
  __shared__ double sums[1024];
  double s = 0.0;
  for (std::int64_t i = threadIdx.x; i < count; i += 1024)
    s += static_cast<double>(partials[i]);
  sums[threadIdx.x] = s;
  __syncthreads();
  for (int width = 512; width > 0; width >>= 1) {
    if (threadIdx.x < width)
      sums[threadIdx.x] += sums[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *norm = static_cast<float>(sqrt(sums[0]));
}

__global__ void clip_coefficient_kernel(const float *norm, float clip_norm, bool pytorch_rule,
                                        float *coef_out) {
  *coef_out = clip_coefficient_of(*norm, clip_norm, pytorch_rule);
}

/// 8 bytes read, 8 written: a single thread, as in PyTorch's _amp_update_scale_.
__global__ void update_scale_kernel(float *scale, std::int32_t *tracker, const float *found_inf,
                                    float growth, float backoff, std::int32_t interval) {
  update_scale_rule(scale, tracker, *found_inf, growth, backoff, interval);
}

__global__ void inverse_scale_kernel(const float *scale, float *inv_scale) {
  *inv_scale = inverse_scale_of(*scale);
}

void check(const char *op, cudaError_t e) {
  if (e != cudaSuccess) {
    cudaGetLastError(); // clear a non-sticky error so later calls are not blamed for it
    throw Error(std::string("amp::") + op + ": CUDA error: " + cudaGetErrorName(e) + ": " +
                cudaGetErrorString(e));
  }
}

/// Makes ctx.device current for the call and restores the caller's device afterwards.
class DeviceGuard {
public:
  DeviceGuard(const char *op, int device) {
    check(op, cudaGetDevice(&previous_));
    if (previous_ != device)
      check(op, cudaSetDevice(device));
  }
  ~DeviceGuard() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_)
      cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  int previous_ = 0;
};

} // namespace

template <class Fn> void apply(const Fn &fn, const ApplyArgs &args) {
  constexpr int L = Fn::kLists;
  using M = Meta<L>;
  DeviceGuard guard(args.op, args.ctx.device.index);
  const auto stream = static_cast<cudaStream_t>(args.ctx.stream);
  const std::vector<TensorView> &first = *args.lists[0];
  std::int64_t total_chunks = 0;
  for (const TensorView &t : first)
    total_chunks += chunk_count(t.numel);
  // Freed in stream order when this function returns or throws (after the kernels that use it).
  ScratchBuffer scratch;
  if (args.norm && total_chunks > 0)
    check(args.op, scratch.allocate(args.ctx.device.index,
                                    static_cast<std::size_t>(total_chunks) * sizeof(float), stream));
  float *partials = static_cast<float *>(scratch.get());

  M meta;
  std::int64_t partial_base = 0;
  cuda_plan::pack_launches<L>(args, meta, [&](int blocks) {
    multi_tensor_kernel<Fn><<<blocks, kThreads, 0, stream>>>(
        meta, fn, partials ? partials + partial_base : nullptr, args.found_inf);
    check(args.op, cudaGetLastError());
    partial_base += blocks;
  });

  if (args.norm) {
    finalize_norm_kernel<<<1, 1024, 0, stream>>>(partials, total_chunks, args.norm);
    check(args.op, cudaGetLastError());
  }
}

// Every list operation of op_table.h.
#define AMP_INSTANTIATE_APPLY(Functor, entry) template void apply(const Functor &, const ApplyArgs &);
AMP_LIST_OPS(AMP_INSTANTIATE_APPLY)
#undef AMP_INSTANTIATE_APPLY

void clip_coefficient(const float *norm, float clip_norm, ClipRule rule, float *coef_out,
                      const ExecContext &ctx) {
  DeviceGuard guard("clip_coefficient", ctx.device.index);
  clip_coefficient_kernel<<<1, 1, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
      norm, clip_norm, rule == ClipRule::PyTorch, coef_out);
  check("clip_coefficient", cudaGetLastError());
}

void update_scale(float *scale, std::int32_t *growth_tracker, const float *found_inf,
                  float growth_factor, float backoff_factor, std::int32_t growth_interval,
                  const ExecContext &ctx) {
  DeviceGuard guard("update_scale", ctx.device.index);
  update_scale_kernel<<<1, 1, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
      scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval);
  check("update_scale", cudaGetLastError());
}

void inverse_scale(const float *scale, float *inv_scale, const ExecContext &ctx) {
  DeviceGuard guard("inverse_scale", ctx.device.index);
  inverse_scale_kernel<<<1, 1, 0, static_cast<cudaStream_t>(ctx.stream)>>>(scale, inv_scale);
  check("inverse_scale", cudaGetLastError());
}

bool available() {
  static const bool present = [] {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return count > 0;
  }();
  return present;
}

bool is_device_pointer(const void *p, int device) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (attr.type == cudaMemoryTypeManaged)
    return true;
  return attr.type == cudaMemoryTypeDevice && attr.device == device;
}

} // namespace amp::detail::cuda
