// Runs the NCCL world-size-1 checks (nccl_world1_checks.cpp) when a CUDA device is there; exits 77
// (skipped) when not. The checks live in a module loaded only after the CUDA driver has reported a
// device: libtorch_cuda's own dependencies (NCCL, cuSPARSELt, cuFile, ...) are often missing on
// machines without a GPU, and a program linked to it would not start there to say so.
#include <dlfcn.h>

#include <cstdio>

#ifndef AMP_NCCL_CHECKS_MODULE
#error "AMP_NCCL_CHECKS_MODULE (the path of the checks module) is set by test/torch/CMakeLists.txt"
#endif

namespace {

/// The number of CUDA devices the driver reports; 0 with the reason when there is no usable one.
int cuda_devices(const char **why) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    *why = "no CUDA driver (libcuda.so.1 cannot be loaded)";
    return 0;
  }
  // The driver API's signatures (cuda.h), without needing its header here.
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  auto init = reinterpret_cast<InitFn>(dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  if (!init || !count) {
    *why = "libcuda.so.1 lacks cuInit or cuDeviceGetCount";
  } else if (int rc = init(0); rc != 0) {
    *why = rc == 100 ? "the CUDA driver reports no device" : "cuInit failed";
  } else if (count(&devices) != 0 || devices == 0) {
    *why = "the CUDA driver reports no device";
    devices = 0;
  }
  return devices;
}

} // namespace

int main() {
  const char *why = "";
  if (cuda_devices(&why) == 0) {
    std::printf("SKIP: %s; the NCCL world-size-1 check needs one GPU\n", why);
    return 77;
  }
  void *checks = dlopen(AMP_NCCL_CHECKS_MODULE, RTLD_NOW | RTLD_GLOBAL);
  if (!checks) {
    std::printf("FAIL: a GPU is there but the checks module does not load: %s\n", dlerror());
    return 1;
  }
  using RunFn = int (*)();
  auto run = reinterpret_cast<RunFn>(dlsym(checks, "amp_nccl_world1_run"));
  if (!run) {
    std::printf("FAIL: %s has no amp_nccl_world1_run\n", AMP_NCCL_CHECKS_MODULE);
    return 1;
  }
  return run();
}
