// The public GEMM entry point: shape, dtype and device validation, then the CPU reference or
// cuBLASLt.
#include "amp/runtime.h"

#include "backend.h"
#include "cuda_backend.h"

#include <fmt/format.h>

#include <string>

namespace amp {
namespace {

[[noreturn]] void gemm_fail(const std::string &problem) {
  throw Error(fmt::format("amp::gemm: {}", problem));
}

void check_operand(const char *name, const TensorView &t, std::int64_t expected,
                   const ExecContext &ctx) {
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
    gemm_fail(fmt::format("{} has an unknown dtype code", name));
  if (t.device != ctx.device)
    gemm_fail(fmt::format("{} is not on the call's device", name));
  if (t.numel != expected)
    gemm_fail(fmt::format("{} has {} elements, expected {}", name, t.numel, expected));
  if (expected > 0 && t.data == nullptr)
    gemm_fail(fmt::format("{} has a null data pointer", name));
}

/// x * y, or a clear error where the product of two dimensions does not fit int64 (an overflowed
/// size could match a small buffer, and the kernel would write past it).
std::int64_t checked_product(const char *what, std::int64_t x, std::int64_t y) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(x, y, &product))
    gemm_fail(fmt::format("{} = {} * {} overflows a 64-bit element count", what, x, y));
  return product;
}

} // namespace

void gemm(const GemmArgs &args, const ExecContext &ctx) {
  if (ctx.threads < 0)
    gemm_fail(fmt::format("threads must be >= 0 (0: the runtime decides), got {}", ctx.threads));
  if (args.m < 0 || args.n < 0 || args.k < 0)
    gemm_fail("m, n and k must be >= 0");
  check_operand("a", args.a, checked_product("m*k", args.m, args.k), ctx);
  check_operand("b", args.b, checked_product("k*n", args.k, args.n), ctx);
  check_operand("c", args.c, checked_product("m*n", args.m, args.n), ctx);
  if (args.a.dtype != args.b.dtype)
    gemm_fail(fmt::format("a and b must have one dtype, got {} and {}", dtype_name(args.a.dtype),
                          dtype_name(args.b.dtype)));
  if (args.bias.data) {
    check_operand("bias", args.bias, args.n, ctx);
    if (args.bias.dtype != args.c.dtype)
      gemm_fail("bias must have c's dtype");
  }
  if (args.m == 0 || args.n == 0)
    return;
  if (ctx.device.kind == DeviceKind::CPU) {
    detail::cpu::gemm(args, ctx.threads);
    return;
  }
  std::string why;
  const detail::CudaBackend *backend = detail::try_cuda_backend(&why);
  if (!backend)
    gemm_fail(why);
  if (!backend->available())
    gemm_fail("no CUDA device or driver is available");
  backend->gemm(args, ctx);
}

} // namespace amp
