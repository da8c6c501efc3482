// The embedded element-wise kernels on every selected device, against float64 host references,
// including lengths that are not a multiple of the launch group.
#include <gtest/gtest.h>

#include <cmath>

#include "device/device_selection.h"
#include "kernels_cl/elementwise.h"
#include "kernels_cl/embedded_sources.h"
#include "tests/device_fixture.h"
#include "tests/test_support.h"

namespace paxocl::kernels {
namespace {

TEST(EmbeddedSources, ContainTheProjectKernels) {
  const std::string_view src = embedded_source("elementwise");
  EXPECT_NE(src.find("__kernel void axpy_f32"), std::string_view::npos);
  EXPECT_THROW(embedded_source("no_such_program"), DeviceError);
}

TEST(Elementwise, MatchesDoubleReferenceOnEveryDevice) {
  testing::TempDir cache_dir;
  device::ProgramCache cache(cache_dir.path());
  const auto selected = testing::test_device_selection();
  for (const device::DeviceInfo& info : selected) {
    device::Device dev(info);
    Elementwise ops(cache, dev);
    for (std::size_t n : {1u, 63u, 64u, 1000u, 4097u}) {
      std::vector<float> x(n), y(n);
      for (std::size_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(std::sin(1.7 * static_cast<double>(i)));
        y[i] = static_cast<float>(0.25 * static_cast<double>(i % 13) - 1.0);
      }
      device::Buffer<float> xb(dev.context(), n, "x"), yb(dev.context(), n, "y"), sum(dev.context(), n, "sum");
      dev.queue().write(xb, std::span<const float>(x));
      dev.queue().write(yb, std::span<const float>(y));
      ops.axpy(yb, xb, -1.5f);         // y <- y - 1.5 x
      ops.add(sum, yb, xb);            // sum <- y + x
      ops.scale(sum, 2.0f);            // sum <- 2 sum
      std::vector<float> got(n);
      dev.queue().read(sum, std::span<float>(got));
      for (std::size_t i = 0; i < n; ++i) {
        const double expected = 2.0 * ((static_cast<double>(y[i]) - 1.5 * x[i]) + x[i]);
        ASSERT_NEAR(got[i], expected, 1e-5) << "device " << info.index << " n=" << n << " i=" << i;
      }
      ops.fill(sum, 0.5f);
      dev.queue().read(sum, std::span<float>(got));
      for (float v : got) ASSERT_EQ(v, 0.5f);
    }
  }
}

}  // namespace
}  // namespace paxocl::kernels
