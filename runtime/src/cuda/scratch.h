// Stream-ordered scratch memory for the CUDA backend (norm partials, cuBLASLt workspace), RAII.
//
// Why not plain cudaMallocAsync: it allocates from the device's default pool, whose release
// threshold is 0, so every synchronisation hands the memory back to the driver and the next call
// maps it again. The runtime keeps one pool per device of its own with a release threshold instead,
// so steady-state training steps reuse the same pages; and it leaves the default pool's settings
// (shared with the rest of the process) alone.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace amp::detail::cuda {

/// Bytes the runtime's pool keeps mapped across synchronisations: room for the norm partials of
/// any realistic list (4 bytes per 65536 elements) and one 32 MB GEMM workspace.
constexpr std::uint64_t kScratchKeepBytes = 64ull << 20;

/// The runtime's pool for `device`, created on first use; null where the device or driver has no
/// stream-ordered allocator (the caller then uses cudaMallocAsync's default pool).
inline cudaError_t scratch_pool(int device, cudaMemPool_t *out) {
  static std::mutex mutex;
  static std::unordered_map<int, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pools.find(device);
  if (it != pools.end()) {
    *out = it->second;
    return cudaSuccess;
  }
  int supported = 0;
  cudaError_t e = cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device);
  if (e != cudaSuccess)
    return e;
  cudaMemPool_t pool = nullptr;
  if (supported) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    if ((e = cudaMemPoolCreate(&pool, &props)) != cudaSuccess)
      return e;
    std::uint64_t keep = kScratchKeepBytes;
    if ((e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep)) !=
        cudaSuccess) {
      cudaMemPoolDestroy(pool);
      return e;
    }
  }
  pools.emplace(device, pool);
  *out = pool;
  return cudaSuccess;
}

/// A stream-ordered allocation freed (in stream order, after the work queued with it) when the
/// object goes out of scope, on the normal path and on every error path alike.
class ScratchBuffer {
public:
  ScratchBuffer() = default;
  ~ScratchBuffer() {
    if (ptr_)
      cudaFreeAsync(ptr_, stream_); // nothing to report from a destructor; the stream keeps order
  }
  ScratchBuffer(const ScratchBuffer &) = delete;
  ScratchBuffer &operator=(const ScratchBuffer &) = delete;

  /// Allocates `bytes` on `stream` from the runtime's pool of `device` (the current device).
  cudaError_t allocate(int device, std::size_t bytes, cudaStream_t stream) {
    cudaMemPool_t pool = nullptr;
    cudaError_t e = scratch_pool(device, &pool);
    if (e != cudaSuccess)
      return e;
    void *p = nullptr;
    e = pool ? cudaMallocFromPoolAsync(&p, bytes, pool, stream) : cudaMallocAsync(&p, bytes, stream);
    if (e != cudaSuccess)
      return e;
    ptr_ = p;
    stream_ = stream;
    return cudaSuccess;
  }
  void *get() const { return ptr_; }

private:
  void *ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

} // namespace amp::detail::cuda
