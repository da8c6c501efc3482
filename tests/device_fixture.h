// A test fixture with one OpenCL device (the first of test_device_selection()) and the kernel
// library built for act_dtype(), both shared by the process's tests (shared_test_device()); a
// private program cache and a GEMM that takes act_dtype() (CLBlast for float32, pax-ocl's own for
// 16 bits), per test; host<->device helpers in float64 for reference comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>
#include <vector>

#include "device/device.h"
#include "device/device_selection.h"
#include "device/program_cache.h"
#include "device/typed_buffer.h"
#include "kernels_cl/auto_gemm.h"
#include "kernels_cl/gemm.h"
#include "kernels_cl/kernel_library.h"
#include "common/rng.h"
#include "tests/test_support.h"

namespace paxocl::device {
// gtest names a dtype parameter in messages ("where GetParam() = bfloat16").
inline void PrintTo(DType t, std::ostream* os) { *os << dtype_name(t); }
}  // namespace paxocl::device

namespace paxocl::testing {

// The devices the tests run on: PAX_OCL_DEVICES as `pax-ocl` reads it (default auto: a GPU when
// there is one, else the CPU devices), so `ctest -L gpu` on a GPU machine tests the GPU. The first
// call prints the first device, as `pax-ocl devices` names it, so a log says what was tested.
inline std::vector<device::DeviceInfo> test_device_selection() {
  auto selected = device::select_devices(device::enumerate_devices(),
                                         device::parse_device_selection(device::device_spec_from(std::nullopt)));
  static const bool said = [&] {
    if (!selected.empty()) {
      std::printf("[ device   ] %s (%s, %s)\n", selected.front().name.c_str(), device::to_string(selected.front().kind),
                  selected.front().platform_name.c_str());
    }
    return true;
  }();
  (void)said;
  return selected;
}

// One device and one kernel library per activation dtype for the whole test process, shared by
// every DeviceTest: building the library's programs costs about 0.5 s a test even where the
// driver's cache holds them (PoCL preprocesses each source to find its entry), which was most of
// a kernel test's time when one process runs many (the GPU- and portable-set runs). Never
// destroyed: test_main.cpp leaves with _Exit, before the driver's teardown.
struct SharedTestDevice {
  device::ProgramCache cache{std::filesystem::path()};  // no files: the driver's cache, as before
  std::shared_ptr<device::Device> device;
  std::map<device::DType, std::shared_ptr<kernels::KernelLibrary>> kernels;
};
// Called once per test, from SetUp. PAXOCL_TEST_DEVICE_PER_TEST=1 (scripts/oclgrind_check.sh)
// gives each test its own instead: Oclgrind's shadow memory keeps a freed buffer's length for a
// new buffer at its address, so with one context for all, a kernel's fully written scratch buffer
// read as uninitialized past the length of an earlier test's freed buffer (docs/testing.md).
inline SharedTestDevice& shared_test_device() {
  static SharedTestDevice* shared = new SharedTestDevice();
  static const bool per_test = [] {
    const char* v = std::getenv("PAXOCL_TEST_DEVICE_PER_TEST");
    return v != nullptr && std::string_view(v) == "1";
  }();
  if (per_test) {
    shared->kernels.clear();  // before the device they were built on
    shared->device.reset();
  }
  return *shared;
}

class DeviceTest : public ::testing::Test {
 public:
  void SetUp() override {
    SharedTestDevice& shared = shared_test_device();
    if (!shared.device) {
      const auto selected = test_device_selection();
      ASSERT_FALSE(selected.empty());
      shared.device = std::make_shared<device::Device>(selected.front());
    }
    device_ = shared.device;
    auto& library = shared.kernels[act_dtype()];
    if (!library) library = std::make_shared<kernels::KernelLibrary>(shared.cache, *device_, act_dtype());
    kernels_ = library;
    gemm_ = act_dtype() == device::DType::kF32 ? kernels::make_clblast_gemm(*device_)
                                               : kernels::make_gemm(*device_, cache_, "auto");
  }
  void TearDown() override {
    // A test that stopped between a native kernel's failure and the next synchronisation leaves
    // nothing pending for the next test.
    if (device_) {
      try {
        device_->queue().finish();
      } catch (const std::exception&) {
      }
    }
  }

  // The activation dtype of the kernel library; fixtures parameterised over dtypes override it.
  virtual device::DType act_dtype() const { return device::DType::kF32; }

  device::Buffer<float> upload(const std::vector<double>& host) {
    std::vector<float> f(host.begin(), host.end());
    device::Buffer<float> b(device_->context(), std::max<std::size_t>(1, f.size()), "test");
    if (!f.empty()) device_->queue().write(b, std::span<const float>(f));
    return b;
  }
  device::Buffer<cl_int> upload_ints(const std::vector<int>& host) {
    device::Buffer<cl_int> b(device_->context(), std::max<std::size_t>(1, host.size()), "test.ints");
    if (!host.empty()) device_->queue().write(b, std::span<const cl_int>(host));
    return b;
  }
  device::Buffer<float> zeros(std::size_t n) { return upload(std::vector<double>(n, 0.0)); }
  std::vector<double> download(const device::Buffer<float>& b, std::size_t n) {
    std::vector<float> f(n);
    device_->queue().read(b, std::span<float>(f));
    return std::vector<double>(f.begin(), f.end());
  }

  // A buffer of `dtype` holding `host` rounded to it (use rounded() so the reference sees the same).
  device::TypedBuffer upload(device::DType dtype, const std::vector<double>& host) {
    std::vector<float> f(host.begin(), host.end());
    device::TypedBuffer b(device_->context(), dtype, std::max<std::size_t>(1, f.size()), "test.typed");
    if (!f.empty()) b.write(device_->queue(), f);
    return b;
  }
  std::vector<double> download(const device::TypedBuffer& b, std::size_t n) {
    const std::vector<float> f = b.read(device_->queue());
    return std::vector<double>(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(std::min(n, f.size())));
  }
  // `values` rounded to `dtype` (what a buffer of that dtype holds).
  static std::vector<double> rounded(device::DType dtype, std::vector<double> values) {
    for (double& x : values) x = device::round_to(dtype, static_cast<float>(x));
    return values;
  }

  // Random values ~ N(0, std^2), rounded to float so device and reference see the same inputs.
  static std::vector<double> random(std::size_t n, std::uint64_t seed, double std = 1.0) {
    Rng rng(seed);
    std::vector<double> v(n);
    for (double& x : v) x = static_cast<double>(static_cast<float>(std * rng.normal()));
    return v;
  }

  TempDir cache_dir_;
  device::ProgramCache cache_{cache_dir_.path()};
  std::shared_ptr<device::Device> device_;                  // shared_test_device()'s
  std::shared_ptr<kernels::KernelLibrary> kernels_;         // shared_test_device()'s, for act_dtype()
  std::unique_ptr<kernels::Gemm> gemm_;
};

// |got - want| <= atol + rtol * |want| element-wise, reporting the first failure.
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double atol, double rtol,
                         const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::abs(got[i] - want[i]), atol + rtol * std::abs(want[i]))
        << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
}

// |got - want| <= atol + rtol |want|, element-wise.
struct Tol {
  double atol, rtol;
};

// Tolerances of the 16-bit variants. Inputs are rounded to the dtype before both the device and
// the reference see them, so the reference computes on exactly what the device holds; every
// kernel computes in float32 as before, so it keeps the float32 tolerance `f32` — except that a
// result STORED in the dtype is rounded once more. One rounding to nearest costs at most
// |fl(y) - y| <= u |y|, u = dtype_unit_roundoff (2^-8 bfloat16, 2^-11 float16), and the float32
// result y is itself within atol + rtol |want|, hence
//   |got - want| <= atol + rtol |want| + u (|want| + atol + rtol |want|)
//                 = (1 + u) atol + ((1 + u) rtol + u) |want|.
// Stored intermediates that a kernel reads back (the residual sum LayerNorm normalises, the
// attention output whose row dot with dO is the softmax backward's delta) cost nothing here: the
// reference is given the same stored values (bit-exact for the residual sum, which is
// float32(x + delta) rounded once; the attention output downloaded from the device). Results kept
// in float32 (LayerNorm statistics, losses, every parameter gradient: float sums of exact inputs)
// keep `f32` unchanged: a kernel that summed in 16 bits would miss them by ~u |sum| >> 1e-4.
// Float32 results are stored as computed, so for float32 this is `f32` itself.
inline Tol stored(device::DType dtype, Tol f32) {
  if (dtype == device::DType::kF32) return f32;
  const double u = device::dtype_unit_roundoff(dtype);
  return Tol{(1 + u) * f32.atol, (1 + u) * f32.rtol + u};
}

inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, Tol tol,
                         const char* what) {
  expect_close(got, want, tol.atol, tol.rtol, what);
}

}  // namespace paxocl::testing
