#include "app/device_check.h"

#include <cmath>
#include <vector>

#include "kernels_cl/elementwise.h"

namespace paxocl::app {

nlohmann::json check_device(device::ProgramCache& cache, device::Device& dev) {
  constexpr std::size_t n = 1 << 20;
  constexpr float alpha = 0.5f;
  const device::ProgramCacheStats before = cache.stats();
  kernels::Elementwise ops(cache, dev);
  const device::ProgramCacheStats after = cache.stats();

  std::vector<float> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i)));
    y[i] = static_cast<float>(std::cos(0.003 * static_cast<double>(i)));
  }
  device::Buffer<float> xb(dev.context(), n, "check.x"), yb(dev.context(), n, "check.y"), out(dev.context(), n, "check.out");
  dev.queue().write(xb, std::span<const float>(x));
  dev.queue().write(yb, std::span<const float>(y));
  const device::Event axpy = ops.axpy(yb, xb, alpha);  // y <- alpha x + y
  const device::Event add = ops.add(out, yb, xb);      // out <- y + x
  std::vector<float> result(n);
  dev.queue().read(out, std::span<float>(result));

  double max_error = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double expected = (static_cast<double>(alpha) * x[i] + y[i]) + x[i];
    max_error = std::max(max_error, std::abs(expected - static_cast<double>(result[i])));
  }
  // Two float roundings of values below 3 in magnitude: a few ulps at most.
  const bool passed = max_error <= 4 * 3.0 * 1.2e-7;
  return {{"passed", passed},
          {"max_abs_error", max_error},
          {"programs_from_cache", after.hits - before.hits},
          {"programs_compiled", after.misses - before.misses},
          {"programs_driver_cached", after.driver_cached - before.driver_cached},
          {"build_ms", after.build_ms - before.build_ms},
          {"kernel_ms", axpy.elapsed_ms() + add.elapsed_ms()}};
}

}  // namespace paxocl::app
