// Loads the CUDA backend (libamp_runtime_cuda) on first use, so that the core and everything that
// links it start without any CUDA library: a CPU-only program never maps libcudart or cuBLASLt.
#include "cuda_backend.h"

#include <fmt/format.h>

#if defined(AMP_CUDA_BACKEND_MODULE)
#include <dlfcn.h>
#include <unistd.h>
#endif

#include <string>

namespace amp::detail {
namespace {

struct Loaded {
  const CudaBackend *table = nullptr;
  std::string why; ///< why `table` is null
};

#if defined(AMP_CUDA_BACKEND_MODULE)
/// The folder this library was loaded from, with a trailing '/', or "" when unknown: the backend
/// is installed (and built) next to the core, and that is where it is looked for first.
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&try_cuda_backend), &info) == 0 || !info.dli_fname)
    return "";
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

Loaded load() {
  Loaded out;
  const char *name = AMP_CUDA_BACKEND_MODULE;
  std::string path = own_folder() + name;
  if (path == name || access(path.c_str(), F_OK) != 0)
    path = name; // not next to the core: the loader's search path (LD_LIBRARY_PATH, ld.so.cache)
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *err = dlerror();
    out.why = fmt::format("the CUDA backend {} could not be loaded ({}); it needs the CUDA {} "
                          "runtime libraries (libcudart.so.{}, libcublasLt.so.{}) on the "
                          "loader's path",
                          name, err ? err : "unknown reason", AMP_CUDA_MAJOR, AMP_CUDA_MAJOR,
                          AMP_CUDA_MAJOR);
    return out;
  }
  using Entry = const CudaBackend *(*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "amp_cuda_backend_v1"));
  if (!entry) {
    out.why = fmt::format("{} has no entry point amp_cuda_backend_v1 (not an amp CUDA backend)",
                          path);
    return out;
  }
  const CudaBackend *table = entry();
  if (!table || table->abi != kCudaBackendAbi) {
    out.why = fmt::format("{} was built for another version of the amp runtime (backend ABI {}, "
                          "this runtime needs {})",
                          path, table ? table->abi : 0u, kCudaBackendAbi);
    return out;
  }
  // The handle is never closed: kernels and cuBLASLt handles live until the process exits.
  out.table = table;
  return out;
}
#elif defined(AMP_CUDA_BACKEND_LINKED)
Loaded load() {
  Loaded out;
  out.table = amp_cuda_backend_v1(); // a static build: the backend is linked in
  return out;
}
#else
Loaded load() {
  Loaded out;
  out.why = "the runtime was built without CUDA";
  return out;
}
#endif

const Loaded &loaded() {
  static const Loaded once = load(); // thread-safe; the outcome (success or not) is final
  return once;
}

} // namespace

const CudaBackend *try_cuda_backend(std::string *why) {
  const Loaded &l = loaded();
  if (!l.table && why)
    *why = l.why;
  return l.table;
}

const CudaBackend &cuda_backend(const char *op) {
  const Loaded &l = loaded();
  if (!l.table)
    throw Error(fmt::format("amp::{}: {}", op, l.why));
  return *l.table;
}

} // namespace amp::detail

namespace amp::cuda {

bool available() {
  const detail::CudaBackend *b = detail::try_cuda_backend(nullptr);
  return b && b->available();
}

void load() { (void)detail::cuda_backend("cuda::load"); }

} // namespace amp::cuda
