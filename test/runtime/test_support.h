// Shared test scaffolding: host tensors of any dtype, random lists shaped like models, fp64
// readback.
#pragma once

#include "amp/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace amp::test {

// Independent of the runtime's conversions: GCC's _Float16 for fp16, integer rounding for bf16.
inline float ref_half_to_float(std::uint16_t h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return static_cast<float>(x);
}
inline std::uint16_t ref_float_to_half(float f) {
  const _Float16 x = static_cast<_Float16>(f);
  std::uint16_t h;
  std::memcpy(&h, &x, 2);
  return h;
}
inline float ref_bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline std::uint16_t ref_float_to_bf16(float f) {
  if (std::isnan(f))
    return std::signbit(f) ? 0xffc0 : 0x7fc0;
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t low = u & 0xffffu;
  std::uint32_t high = u >> 16;
  if (low > 0x8000u || (low == 0x8000u && (high & 1u)))
    ++high;
  return static_cast<std::uint16_t>(high);
}

/// A host-side tensor whose values are read and written as doubles (rounded through the dtype).
struct HostTensor {
  DType dtype = DType::F32;
  std::int64_t numel = 0;
  std::vector<float> f32;
  std::vector<std::uint16_t> b16;

  HostTensor() = default;
  HostTensor(DType t, std::int64_t n) : dtype(t), numel(n) {
    if (t == DType::F32)
      f32.assign(static_cast<std::size_t>(n), 0.0f);
    else
      b16.assign(static_cast<std::size_t>(n), 0);
  }
  void *data() { return dtype == DType::F32 ? static_cast<void *>(f32.data()) : b16.data(); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel) * dtype_size(dtype); }
  double get(std::int64_t i) const {
    const auto k = static_cast<std::size_t>(i);
    switch (dtype) {
    case DType::F32:
      return f32[k];
    case DType::F16:
      return ref_half_to_float(b16[k]);
    case DType::BF16:
      return ref_bf16_to_float(b16[k]);
    }
    return 0;
  }
  void set(std::int64_t i, double v) {
    const auto k = static_cast<std::size_t>(i);
    const auto f = static_cast<float>(v);
    switch (dtype) {
    case DType::F32:
      f32[k] = f;
      return;
    case DType::F16:
      b16[k] = ref_float_to_half(f);
      return;
    case DType::BF16:
      b16[k] = ref_float_to_bf16(f);
      return;
    }
  }
  /// Rounds v through this tensor's dtype (what storing then loading gives).
  double round(double v) const {
    const auto f = static_cast<float>(v);
    switch (dtype) {
    case DType::F32:
      return f;
    case DType::F16:
      return ref_half_to_float(ref_float_to_half(f));
    case DType::BF16:
      return ref_bf16_to_float(ref_float_to_bf16(f));
    }
    return 0;
  }
  TensorView view(Device d = {}) { return TensorView{numel ? data() : nullptr, dtype, numel, d}; }
};

using HostList = std::vector<HostTensor>;

inline std::vector<TensorView> views(HostList &l) {
  std::vector<TensorView> v;
  for (HostTensor &t : l)
    v.push_back(t.view());
  return v;
}

/// The three list shapes of the issue: one tensor over several chunks; 7 of mixed sizes including
/// empty ones and chunk-boundary sizes; 1,100 small-to-medium tensors as in a real model.
enum class Shape { One, Seven, Many };
inline const char *shape_name(Shape s) {
  return s == Shape::One ? "One" : s == Shape::Seven ? "Seven" : "Many";
}
inline std::vector<std::int64_t> list_sizes(Shape s, std::uint32_t seed = 7) {
  switch (s) {
  case Shape::One:
    return {3 * 65536 + 123};
  case Shape::Seven:
    return {1, 0, 65536, 65537, 4099, 131075, 17};
  case Shape::Many: {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> size(1, 1500);
    std::vector<std::int64_t> sizes;
    for (int i = 0; i < 1100; ++i)
      sizes.push_back(i % 97 == 5 ? 0 : size(rng));
    sizes[600] = 70001; // one tensor over a chunk boundary in the middle of the list
    return sizes;
  }
  }
  return {};
}

/// Fresh random values in +-[lo, hi], never zero (zeros hide a missing multiply).
inline HostList random_list(DType t, const std::vector<std::int64_t> &sizes, std::uint32_t seed,
                            double lo = 0.01, double hi = 2.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> mag(lo, hi);
  std::bernoulli_distribution neg(0.5);
  HostList list;
  for (std::int64_t n : sizes) {
    HostTensor x(t, n);
    for (std::int64_t i = 0; i < n; ++i)
      x.set(i, neg(rng) ? -mag(rng) : mag(rng));
    list.push_back(std::move(x));
  }
  return list;
}

/// Same sizes, every element a NaN-free poison value the op must overwrite.
inline HostList poisoned_list(DType t, const std::vector<std::int64_t> &sizes) {
  HostList list;
  for (std::int64_t n : sizes) {
    HostTensor x(t, n);
    for (std::int64_t i = 0; i < n; ++i)
      x.set(i, 12345.0);
    list.push_back(std::move(x));
  }
  return list;
}

inline std::vector<std::int64_t> sizes_of(const HostList &l) {
  std::vector<std::int64_t> s;
  for (const HostTensor &t : l)
    s.push_back(t.numel);
  return s;
}

/// Positions (tensor, element) for inf/NaN: the first element, the last element, and both sides of
/// every chunk boundary of the list.
inline std::vector<std::pair<std::size_t, std::int64_t>> poison_positions(const HostList &l) {
  std::vector<std::pair<std::size_t, std::int64_t>> out;
  for (std::size_t t = 0; t < l.size() && out.empty(); ++t)
    if (l[t].numel > 0)
      out.push_back({t, 0});
  for (std::size_t t = 0; t < l.size(); ++t)
    for (std::int64_t b = 65536; b < l[t].numel; b += 65536) {
      out.push_back({t, b - 1});
      out.push_back({t, b});
    }
  for (std::size_t t = l.size(); t-- > 0;)
    if (l[t].numel > 0) {
      out.push_back({t, l[t].numel - 1});
      break;
    }
  return out;
}

/// Relative tolerance of one rounding to the dtype.
inline double dtype_rtol(DType t) {
  switch (t) {
  case DType::F32:
    return 2e-6;
  case DType::F16:
    return 1.0 / 1024;
  case DType::BF16:
    return 1.0 / 128;
  }
  return 0;
}

inline ::testing::AssertionResult close(double got, double want, double rtol, double atol = 1e-30) {
  if (std::isnan(want) && std::isnan(got))
    return ::testing::AssertionSuccess();
  if (std::isinf(want) && got == want)
    return ::testing::AssertionSuccess();
  if (std::fabs(got - want) <= atol + rtol * std::fabs(want))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << got << ", want " << want << " (rtol " << rtol << ")";
}

/// Compares every element of two lists; stops at the first few mismatches.
inline ::testing::AssertionResult lists_close(const HostList &got,
                                              const std::vector<std::vector<double>> &want,
                                              double rtol, double atol = 1e-30) {
  int failures = 0;
  std::string msg;
  for (std::size_t t = 0; t < got.size(); ++t)
    for (std::int64_t i = 0; i < got[t].numel; ++i) {
      auto r = close(got[t].get(i), want[t][static_cast<std::size_t>(i)], rtol, atol);
      if (!r && failures++ < 5)
        msg += "tensor " + std::to_string(t) + " element " + std::to_string(i) + ": " +
               r.message() + "\n";
    }
  if (failures == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << failures << " mismatches\n" << msg;
}

inline ::testing::AssertionResult lists_equal_bits(const HostList &a, const HostList &b) {
  for (std::size_t t = 0; t < a.size(); ++t) {
    if (a[t].dtype != b[t].dtype || a[t].numel != b[t].numel)
      return ::testing::AssertionFailure() << "tensor " << t << " differs in dtype/numel";
    const bool same = a[t].dtype == DType::F32 ? a[t].f32 == b[t].f32 : a[t].b16 == b[t].b16;
    if (!same) {
      for (std::int64_t i = 0; i < a[t].numel; ++i) {
        const double x = a[t].get(i), y = b[t].get(i);
        if (!(x == y || (std::isnan(x) && std::isnan(y))))
          return ::testing::AssertionFailure()
                 << "tensor " << t << " element " << i << ": " << x << " vs " << y;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::vector<std::vector<double>> as_doubles(const HostList &l) {
  std::vector<std::vector<double>> out;
  for (const HostTensor &t : l) {
    std::vector<double> v(static_cast<std::size_t>(t.numel));
    for (std::int64_t i = 0; i < t.numel; ++i)
      v[static_cast<std::size_t>(i)] = t.get(i);
    out.push_back(std::move(v));
  }
  return out;
}

inline const DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16};
inline const Shape kAllShapes[] = {Shape::One, Shape::Seven, Shape::Many};

} // namespace amp::test
