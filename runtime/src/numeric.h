// fp16/bf16 <-> fp32 conversions and float predicates that compile identically for host and device.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define AMP_HD __host__ __device__ __forceinline__
#else
#define AMP_HD inline
#endif

namespace amp::detail {

// Storage types: the bit patterns of IEEE binary16 and bfloat16. The runtime never does arithmetic
// in these types; every element is widened to fp32, computed on, and rounded back once.
struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

AMP_HD std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

AMP_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// All ones when `c`, else zero: selects written as masks so that GCC's vectoriser sees no branch.
AMP_HD std::uint32_t mask_if(bool c) { return 0u - static_cast<std::uint32_t>(c); }
AMP_HD std::uint32_t select(std::uint32_t mask, std::uint32_t a, std::uint32_t b) {
  return (a & mask) | (b & ~mask);
}

/// inf or NaN, tested on the exponent bits so that the check survives -ffast-math and vectorises.
AMP_HD bool is_nonfinite(float x) { return (float_bits(x) & 0x7f800000u) == 0x7f800000u; }
AMP_HD bool is_nan(float x) { return (float_bits(x) & 0x7fffffffu) > 0x7f800000u; }

// The host versions are branch-free so that GCC vectorises the conversion loops; the device
// versions use the hardware conversions. Both round to nearest even and agree bit for bit except
// for NaN payloads (both produce a NaN).
AMP_HD float half_to_float(std::uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t magnitude = h & 0x7fffu;
  const std::uint32_t shifted = magnitude << 13;
  // Rebiasing by a multiply by 2^112 maps normals and subnormals alike onto fp32.
  float f = bits_float(shifted) * 0x1p112f;
  // inf/NaN keep their mantissa and get the all-ones fp32 exponent.
  const std::uint32_t out =
      select(mask_if(magnitude >= 0x7c00u), shifted | 0x7f800000u, float_bits(f));
  return bits_float(out | sign);
#endif
}

AMP_HD std::uint16_t float_to_half(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  std::uint32_t x = float_bits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  // Overflow (>= 65520 rounds to inf), inf and NaN.
  const std::uint32_t special = select(mask_if(x > 0x7f800000u), 0x7e00u, 0x7c00u);
  // Subnormal results: adding 0.5 (as fp32 with the right exponent) lets the FPU do the rounding.
  const float sub = bits_float(x) + bits_float(126u << 23);
  const std::uint32_t subnormal = float_bits(sub) - (126u << 23);
  // Normal results: rebias the exponent and round the 13 dropped bits to nearest even.
  const std::uint32_t odd = (x >> 13) & 1u;
  const std::uint32_t normal =
      (x + (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + odd) >> 13;
  std::uint32_t out = select(mask_if(x < (113u << 23)), subnormal, normal);
  out = select(mask_if(x >= 0x477ff000u), special, out);
  return static_cast<std::uint16_t>(out | sign);
#endif
}

AMP_HD float bfloat16_to_float(std::uint16_t b) {
  return bits_float(static_cast<std::uint32_t>(b) << 16);
}

AMP_HD std::uint16_t float_to_bfloat16(float f) {
#if defined(__CUDA_ARCH__)
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
  const std::uint32_t x = float_bits(f);
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  // NaN must stay NaN (rounding could carry it into inf): force a quiet NaN.
  const std::uint32_t nan = ((x >> 16) & 0x8000u) | 0x7fc0u;
  return static_cast<std::uint16_t>(select(mask_if((x & 0x7fffffffu) > 0x7f800000u), nan, rounded));
#endif
}

// Load/store one element of a given storage type as fp32.
AMP_HD float load_as_float(const float *p) { return *p; }
AMP_HD float load_as_float(const Half *p) { return half_to_float(p->bits); }
AMP_HD float load_as_float(const BFloat16 *p) { return bfloat16_to_float(p->bits); }
AMP_HD void store_from_float(float *p, float v) { *p = v; }
AMP_HD void store_from_float(Half *p, float v) { p->bits = float_to_half(v); }
AMP_HD void store_from_float(BFloat16 *p, float v) { p->bits = float_to_bfloat16(v); }

} // namespace amp::detail
