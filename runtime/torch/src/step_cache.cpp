// The CPU step cache (step_cache.h; docs/runtime.md, "The CPU step cache").
//
// libtorch allocates CPU tensors through c10's CPU allocator, which calls malloc. A training step
// allocates and frees the same large blocks every step (activations, the gradients autograd
// returns, O1's bf16 weight copies); glibc returns the top of its heap to the kernel when enough
// is free there (its dynamic trim threshold) and the next step faults the pages in again, which
// can cost a third of a small model's step. Whether that happens depends on where the blocks land,
// not on the step's work. The cache keeps the large blocks that value_and_grad's forward and
// backward allocated when they are freed and hands them out again for the same sizes, so a steady
// training loop allocates no large block after its first steps.
//
// The wrapper is installed once, around the CPU allocator found at the first value_and_grad (when
// that allocator has a raw deleter, as c10's default has). Outside value_and_grad, on other
// threads, and for blocks under kMinCached bytes it hands the allocation to that allocator
// unchanged (same DataPtr, same deleter). The blocks it keeps are bounded: a block no step asked
// for in the last two steps is freed when the next step begins, cached plus in use stays within
// twice the most the steps have had in use at once, and amp::empty_cpu_step_cache() gives them
// all back.
#include "step_cache.h"

#include <amp/torch.h>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace amp {
namespace detail {
namespace {

constexpr std::size_t kMinCached = 128 * 1024; // glibc's initial mmap threshold
constexpr std::size_t kRound = 4096;

thread_local int scope_depth = 0;

std::atomic<bool> enabled{true};

class StepCache final : public c10::Allocator {
public:
  explicit StepCache(c10::Allocator *inner) : inner_(inner), inner_raw_(inner->raw_deleter()) {}

#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(std::size_t n) override {
#else
  c10::DataPtr allocate(std::size_t n) const override {
#endif
    if (scope_depth == 0 || n < kMinCached || !enabled.load(std::memory_order_relaxed))
      return inner_->allocate(n);
    return const_cast<StepCache *>(this)->take(n);
  }

  // raw_allocate/raw_deallocate: a block of ours goes back to the cache, any other to the
  // wrapped allocator's deleter.
  c10::DeleterFnPtr raw_deleter() const override { return &release_any; }

#if TORCH_VERSION_MAJOR >= 2
  void copy_data(void *dest, const void *src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
#endif

  CpuStepCacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {free_bytes_, live_bytes_, peak_live_, hits_, misses_};
  }

  void empty() {
    std::vector<Block> dropped; // freed outside the lock
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto &[bytes, list] : free_)
        for (Block &b : list)
          dropped.push_back(std::move(b));
      free_.clear();
      free_bytes_ = 0;
    }
  }

  static StepCache *instance;

private:
  struct Block {
    c10::DataPtr inner;
    std::size_t bytes = 0;
    std::size_t stamp = 0; ///< the step it was last given back in
  };

  void evict_largest(std::vector<Block> &out) {
    auto largest = free_.end();
    for (auto f = free_.begin(); f != free_.end(); ++f)
      if (!f->second.empty() && (largest == free_.end() || f->first > largest->first))
        largest = f;
    out.push_back(std::move(largest->second.back()));
    largest->second.pop_back();
    free_bytes_ -= largest->first;
  }

public:
  /// The outermost value_and_grad of a step begins: blocks no step has asked for in the last two
  /// steps (a batch size that changed, a layer no longer run) are freed.
  void new_step() {
    std::vector<Block> evicted; // freed outside the lock
    std::lock_guard<std::mutex> lock(mutex_);
    ++epoch_;
    for (auto &[bytes, list] : free_) {
      auto keep = std::partition(list.begin(), list.end(),
                                 [&](const Block &b) { return b.stamp + 2 >= epoch_; });
      for (auto it = keep; it != list.end(); ++it) {
        free_bytes_ -= it->bytes;
        evicted.push_back(std::move(*it));
      }
      list.erase(keep, list.end());
    }
  }

private:

  c10::DataPtr take(std::size_t n) {
    std::size_t bytes = (n + kRound - 1) / kRound * kRound;
    std::vector<Block> evicted; // freed outside the lock
    std::unique_lock<std::mutex> lock(mutex_);
    Block b;
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      b = std::move(it->second.back());
      it->second.pop_back();
      free_bytes_ -= bytes;
      ++hits_;
    } else {
      ++misses_;
      // A safety bound for sizes that change within a step: cached plus in use stays within
      // twice the most the steps have had in use at once.
      while (free_bytes_ > 0 && live_bytes_ + bytes + free_bytes_ > 2 * std::max(peak_live_, bytes))
        evict_largest(evicted);
      lock.unlock();
      evicted.clear();
      b.inner = inner_->allocate(bytes); // may throw (out of memory): nothing is counted yet
      b.bytes = bytes;
      lock.lock();
    }
    void *ptr = b.inner.get();
    live_bytes_ += bytes;
    peak_live_ = std::max(peak_live_, live_bytes_);
    live_.emplace(ptr, std::move(b));
    return {ptr, ptr, &release_cached, c10::Device(c10::DeviceType::CPU)};
  }

  /// Returns a block of ours to the free lists; false when `ptr` is not one.
  bool give_back(void *ptr) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end())
      return false;
    Block b = std::move(it->second);
    live_.erase(it);
    live_bytes_ -= b.bytes;
    if (!enabled.load(std::memory_order_relaxed)) {
      lock.unlock();
      return true; // b's DataPtr frees the block
    }
    free_bytes_ += b.bytes;
    b.stamp = epoch_;
    free_[b.bytes].push_back(std::move(b));
    return true;
  }

  static void release_cached(void *ptr) { instance->give_back(ptr); }
  static void release_any(void *ptr) {
    if (!instance->give_back(ptr))
      instance->inner_raw_(ptr);
  }

  c10::Allocator *inner_;
  c10::DeleterFnPtr inner_raw_;
  std::mutex mutex_;
  std::unordered_map<void *, Block> live_;
  std::unordered_map<std::size_t, std::vector<Block>> free_;
  std::size_t live_bytes_ = 0, free_bytes_ = 0, peak_live_ = 0;
  std::size_t hits_ = 0, misses_ = 0;
  std::size_t epoch_ = 0;
};

StepCache *StepCache::instance = nullptr;

/// Installs the wrapper once. Never destroyed: tensors may be freed during static destruction.
bool installed() {
  static const bool ok = [] {
    if (const char *env = std::getenv("AMP_CPU_STEP_CACHE"); env && std::strcmp(env, "0") == 0)
      return false;
    c10::Allocator *inner = c10::GetCPUAllocator();
    if (!inner || !inner->raw_deleter())
      return false; // an allocator of the program's own: left alone
    StepCache::instance = new StepCache(inner);
    c10::SetCPUAllocator(StepCache::instance, /*priority=*/0);
    return c10::GetCPUAllocator() == StepCache::instance;
  }();
  return ok;
}

} // namespace

void step_cache_enter() {
  if (!installed())
    return;
  if (scope_depth++ == 0)
    StepCache::instance->new_step();
}

void step_cache_leave() {
  if (installed())
    --scope_depth;
}

} // namespace detail

CpuStepCacheStats cpu_step_cache_stats() {
  if (!detail::StepCache::instance)
    return {};
  return detail::StepCache::instance->stats();
}

void empty_cpu_step_cache() {
  if (detail::StepCache::instance)
    detail::StepCache::instance->empty();
}

void set_cpu_step_cache_enabled(bool on) {
  detail::enabled.store(on, std::memory_order_relaxed);
  if (!on)
    empty_cpu_step_cache();
}

} // namespace amp
