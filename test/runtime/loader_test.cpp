// The CUDA backend is loaded on demand: CPU calls map no CUDA library, and the first CUDA call (or
// amp::cuda::available()) loads libamp_runtime_cuda, or fails with an error naming what is missing.
// Its own process: every other runtime test may load the backend before this one looks.
#include "amp/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string mapped_files() {
  std::ifstream in("/proc/self/maps");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

bool mapped(const std::string &maps, const char *name) {
  return maps.find(name) != std::string::npos;
}

/// Set by cuda_hidden.sh, which runs this test with the CUDA libraries hidden from the loader.
bool cuda_hidden() {
  const char *v = std::getenv("AMP_TEST_CUDA_HIDDEN");
  return v && std::string(v) == "1";
}

std::string cuda_call_error() {
  float x = 1.0f, norm = 0.0f;
  amp::ExecContext gpu;
  gpu.device = amp::Device{amp::DeviceKind::CUDA, 0};
  std::vector<amp::TensorView> xs(1);
  xs[0].data = &x;
  xs[0].numel = 1;
  xs[0].device = gpu.device;
  try {
    amp::global_norm(xs, &norm, gpu);
  } catch (const amp::Error &e) {
    return e.what();
  }
  return "";
}

// One test, in this order: what is mapped before the first CUDA use is the point.
TEST(CudaOnDemand, NoCudaLibraryUntilTheFirstCudaUse) {
  std::vector<float> data(1000, 0.5f);
  std::vector<amp::TensorView> xs(1);
  xs[0].data = data.data();
  xs[0].numel = static_cast<std::int64_t>(data.size());
  float norm = 0.0f;
  amp::global_norm(xs, &norm, amp::ExecContext{});
  EXPECT_FLOAT_EQ(norm, std::sqrt(1000.0f * 0.25f));

  const std::string before = mapped_files();
  EXPECT_FALSE(mapped(before, "libcudart")) << before;
  EXPECT_FALSE(mapped(before, "libcublas")) << before;
  EXPECT_FALSE(mapped(before, "libamp_runtime_cuda")) << before;

  const bool available = amp::cuda::available(); // loads the backend; never throws
  const std::string after = mapped_files();
#if defined(AMP_WITH_CUDA)
  if (cuda_hidden()) {
    EXPECT_FALSE(available);
    const std::string err = cuda_call_error();
    std::printf("the CUDA call's error: %s\n", err.c_str());
    EXPECT_NE(err.find("amp::global_norm: the CUDA backend libamp_runtime_cuda.so."),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("could not be loaded (libcudart.so"), std::string::npos) << err;
    EXPECT_NE(err.find(", cannot run on cuda:0"), std::string::npos) << err;
    EXPECT_THROW(amp::cuda::load(), amp::Error);
    EXPECT_FALSE(mapped(after, "libcudart")) << after;
  } else {
    // Built with the backend and the CUDA libraries are on the loader's path: it is loaded now,
    // whether or not a device is present.
    EXPECT_TRUE(mapped(after, "libamp_runtime_cuda")) << after;
    EXPECT_TRUE(mapped(after, "libcudart")) << after;
    EXPECT_NO_THROW(amp::cuda::load());
    if (!available) {
      EXPECT_EQ(cuda_call_error(),
                "amp::global_norm: no CUDA device or driver is available for cuda:0");
    }
  }
#else
  EXPECT_FALSE(available);
  EXPECT_EQ(cuda_call_error(),
            "amp::global_norm: the runtime was built without CUDA, cannot run on cuda:0");
  EXPECT_FALSE(mapped(after, "libcudart")) << after;
#endif
}

} // namespace
