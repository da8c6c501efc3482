// Storage dtypes for mixed precision (device/dtype.h, kernels_cl/dtype.cl): the host conversions
// against values worked out from the formats' definitions, float64 arithmetic on every float16,
// and the device's casts bit-exact with the host's on random, boundary and special values.
#include <algorithm>
#include <bit>
#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "common/float16_arrays.h"
#include "device/dtype.h"
#include "kernels_cl/nn_kernels.h"
#include "tests/device_fixture.h"

namespace paxocl::testing {
namespace {

using device::DType;

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

TEST(DType, NamesSizesAndErrors) {
  EXPECT_EQ(device::dtype_from_name("bfloat16"), DType::kBF16);
  EXPECT_EQ(device::dtype_from_name("float16"), DType::kF16);
  EXPECT_EQ(device::dtype_from_name("float32"), DType::kF32);
  EXPECT_EQ(device::dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(device::dtype_size(DType::kF32), 4u);
  EXPECT_THROW(device::dtype_from_name("fp8"), ConfigError);
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(device::float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(device::float_to_bf16(-2.0f), 0xC000);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
  EXPECT_EQ(device::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  // 1 + 3*2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up to even.
  EXPECT_EQ(device::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(device::float_to_bf16(from_bits(0x3F808001)), 0x3F81);  // just above halfway: up
  EXPECT_EQ(device::float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // overflows to infinity
  EXPECT_EQ(device::float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_TRUE(std::isnan(device::bf16_to_float(device::float_to_bf16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(device::bf16_to_float(device::float_to_bf16(from_bits(0x7F800001)))));  // payload below bit 16
}

// Every float16 value decodes to what its fields say, computed in float64, and encodes back to itself.
TEST(DType, Float16DecodesEveryValueAndRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const int sign = (h >> 15) ? -1 : 1, e = static_cast<int>((h >> 10) & 31), m = static_cast<int>(h & 1023);
    const float f = device::half_to_float(static_cast<std::uint16_t>(h));
    if (e == 31) {
      ASSERT_TRUE(m ? std::isnan(f) : std::isinf(f)) << h;
      if (m == 0) {
        ASSERT_EQ(device::float_to_half(f), h);
      }
      continue;
    }
    const double want = sign * (e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25));
    ASSERT_EQ(static_cast<double>(f), want) << h;
    ASSERT_EQ(device::float_to_half(f), h) << h;
  }
}

TEST(DType, Float16RoundsToNearestEvenIncludingSubnormalsAndOverflow) {
  EXPECT_EQ(device::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie: to even (1)
  EXPECT_EQ(device::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie: to even (up)
  EXPECT_EQ(device::float_to_half(std::ldexp(1.0f, -25)), 0x0000);             // half the smallest subnormal: to 0
  EXPECT_EQ(device::float_to_half(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 units: to even (2)
  EXPECT_EQ(device::float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(device::float_to_half(65519.0f), 0x7BFF);  // below the halfway point 65520
  EXPECT_EQ(device::float_to_half(65520.0f), 0x7C00);  // halfway, and 65504 is odd: infinity
  EXPECT_EQ(device::float_to_half(-1e6f), 0xFC00);
}

// The array conversions (F16C on CPUs that have it: this test's point there) give the scalar
// conversions' bits: every float16 value widened, and narrowed every float at and around each
// midpoint between neighbouring float16 values (the ties and both sides), in the half's subnormal
// and overflow ranges, and random bit patterns; lengths that leave tails of 1 to 7. NaNs stay NaNs
// of their sign (F16C quiets a signalling one).
TEST(DType, Float16ArraysGiveTheScalarConversionsBits) {
  auto expect_same = [](float got, float want, std::uint32_t what) {
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << what;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << what;
    } else {
      ASSERT_EQ(bits(got), bits(want)) << std::hex << what;
    }
  };
  std::vector<std::uint16_t> halves(0x10000);
  for (std::uint32_t h = 0; h < halves.size(); ++h) halves[h] = static_cast<std::uint16_t>(h);
  std::vector<float> floats(halves.size());
  paxocl::halves_to_floats(halves.data(), halves.size(), floats.data());
  for (std::uint32_t h = 0; h < halves.size(); ++h) expect_same(floats[h], device::half_to_float(halves[h]), h);

  std::vector<float> values;
  for (std::uint32_t h = 0; h < 0x7c00; ++h) {  // every finite non-negative half and its upper neighbour
    const float lo = device::half_to_float(static_cast<std::uint16_t>(h));
    const float hi = h + 1 < 0x7c00 ? device::half_to_float(static_cast<std::uint16_t>(h + 1)) : 65520.0f;
    const float mid = lo + (hi - lo) / 2;  // exact: a float has 13 more mantissa bits than a half
    for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f), lo}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  Rng rng(11);
  for (int i = 0; i < 200000; ++i) values.push_back(from_bits(static_cast<std::uint32_t>(rng.next_u64())));
  for (float v : {65536.0f, 1e10f, std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::quiet_NaN(), from_bits(0xff800001)}) {
    values.push_back(v);
    values.push_back(-v);
  }
  std::vector<std::uint16_t> narrowed(values.size());
  for (std::size_t at = 0, n = 1; at < values.size(); at += n, n = n % 23 + 1) {  // 23 lengths, tails 1 to 7
    n = std::min(n, values.size() - at);
    paxocl::floats_to_halves(values.data() + at, n, narrowed.data() + at);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint16_t want = device::float_to_half(values[i]);
    if (std::isnan(values[i])) {
      ASSERT_TRUE(std::isnan(device::half_to_float(narrowed[i]))) << std::hex << bits(values[i]);
      ASSERT_EQ(narrowed[i] & 0x8000, want & 0x8000) << std::hex << bits(values[i]);
    } else {
      ASSERT_EQ(narrowed[i], want) << std::hex << bits(values[i]) << " (" << values[i] << ")";
    }
  }
  std::cout << "float16 arrays " << (paxocl::float16_arrays_use_f16c() ? "on F16C" : "scalar") << "\n";
}

// Random floats over the whole exponent range and the boundary cases, as float -> dtype -> float
// on the device (kernels_cl/cast.cl), bit for bit against the host conversion.
TEST_F(DeviceTest, DeviceCastsAreBitExactWithTheHost) {
  Rng rng(7);
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.0f, 65520.0f, 70000.0f, std::ldexp(1.0f, -25),
                               std::ldexp(3.0f, -25), std::ldexp(1.0f, -14), std::ldexp(1.0f, -15),
                               std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(), from_bits(0x3F808000), from_bits(0x3F818000),
                               std::numeric_limits<float>::denorm_min()};
  while (values.size() < 20000) {
    std::uint32_t u = static_cast<std::uint32_t>(rng.next_u64());
    if ((u & 0x7f800000u) == 0x7f800000u) continue;  // NaN payloads are implementation-defined for half
    values.push_back(from_bits(u));
  }
  for (DType t : {DType::kBF16, DType::kF16}) {
    kernels::CastKernels cast(cache_, *device_, t);
    device::Buffer<float> in(device_->context(), values.size(), "in"), out(device_->context(), values.size(), "out");
    device::TypedBuffer act(device_->context(), t, values.size(), "act");
    device_->queue().write(in, std::span<const float>(values));
    cast.to_act(act, in);
    cast.to_float(out, act);
    std::vector<float> back(values.size());
    device_->queue().read(out, std::span<float>(back));
    const std::vector<float> stored = act.read(device_->queue());  // the host decodes the device's bits
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float want = device::round_to(t, values[i]);
      ASSERT_EQ(bits(back[i]), bits(want)) << device::dtype_name(t) << " of " << values[i] << " (bits " << std::hex
                                           << bits(values[i]) << ")";
      ASSERT_EQ(bits(stored[i]), bits(want)) << device::dtype_name(t);
    }
  }
}

// NaNs: bfloat16 stores are pax-ocl's own rounding (kernels_cl/dtype.cl), so a NaN's bits match the
// host's too (quiet, payload kept above bit 16); float16 NaN payloads are the driver's, NaN stays NaN.
TEST_F(DeviceTest, BFloat16NaNsAreBitExactWithTheHostAndFloat16NaNsStayNaN) {
  const std::vector<float> kinds = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                                    from_bits(0x7F800001), from_bits(0xFF812345), from_bits(0x7FBF0000),
                                    from_bits(0x7FC0FFFF), from_bits(0x7FFFFFFF)};
  std::vector<float> nans;  // three times over: whole vectors of the CPU and GPU sets, and a tail
  for (int copy = 0; copy < 3; ++copy) nans.insert(nans.end(), kinds.begin(), kinds.end());
  for (DType t : {DType::kBF16, DType::kF16}) {
    kernels::CastKernels cast(cache_, *device_, t);
    device::Buffer<float> in(device_->context(), nans.size(), "in"), out(device_->context(), nans.size(), "out");
    device::TypedBuffer act(device_->context(), t, nans.size(), "act");
    device_->queue().write(in, std::span<const float>(nans));
    cast.to_act(act, in);
    cast.to_float(out, act);
    std::vector<float> back(nans.size());
    device_->queue().read(out, std::span<float>(back));
    for (std::size_t i = 0; i < nans.size(); ++i) {
      ASSERT_TRUE(std::isnan(back[i])) << device::dtype_name(t) << " of NaN bits " << std::hex << bits(nans[i]);
      if (t == DType::kBF16) {
        ASSERT_EQ(bits(back[i]), bits(device::round_to(t, nans[i]))) << "bfloat16 of NaN bits " << std::hex << bits(nans[i]);
      }
    }
  }
}

// The model casts one unit's range of the parameters at a time: elements outside stay untouched.
TEST_F(DeviceTest, CastsTouchOnlyTheirRange) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    kernels::CastKernels cast(cache_, *device_, t);
    const std::vector<double> values = rounded(t, random(100, 3));
    auto in = upload(values);
    auto act = upload(t, std::vector<double>(100, 5.0));
    cast.to_act(act, in, 17, 50);
    auto back = upload(std::vector<double>(100, 9.0));
    cast.to_float(back, act, 20, 60);
    const std::vector<double> stored = download(act, 100), floats = download(back, 100);
    for (std::size_t i = 0; i < 100; ++i) {
      EXPECT_EQ(stored[i], i >= 17 && i < 67 ? values[i] : 5.0) << device::dtype_name(t) << " " << i;
      EXPECT_EQ(floats[i], i >= 20 && i < 80 ? stored[i] : 9.0) << device::dtype_name(t) << " " << i;
    }
    EXPECT_THROW(cast.to_act(act, in, 90, 11), DeviceError);
  }
}

// A float (rows, cols) block into columns of rows `ld` apart (grouped-query attention's dk, dv):
// rows of 7 straddle every set's work-items (1, 4 or 16 elements each) and 35 elements end in a
// partial one; the gaps between the rows stay untouched.
TEST_F(DeviceTest, RowCastsWriteTheirBlockOnly) {
  const std::size_t rows = 5, cols = 7, ld = 11, offset = 3, n = offset + (rows - 1) * ld + cols + 4;
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    kernels::CastKernels cast(cache_, *device_, t);
    const std::vector<double> values = rounded(t, random(rows * cols, 4));
    auto in = upload(values);
    auto act = upload(t, std::vector<double>(n, 5.0));
    cast.rows_to_act(act, offset, ld, in, rows, cols);
    const std::vector<double> stored = download(act, n);
    for (std::size_t i = 0; i < n; ++i) {
      const bool inside = i >= offset && (i - offset) / ld < rows && (i - offset) % ld < cols;
      EXPECT_EQ(stored[i], inside ? values[(i - offset) / ld * cols + (i - offset) % ld] : 5.0)
          << device::dtype_name(t) << " " << i;
    }
  }
}

}  // namespace
}  // namespace paxocl::testing
