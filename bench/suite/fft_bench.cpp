#include <cmath>

#include <fmt/format.h>

#include "bench/suite/benches.h"
#include "bench/suite/timing.h"
#include "kernels_cl/clfft.h"

namespace paxocl::bench {

using kernels::FftKind;
using kernels::FftPlan;

Table bench_fft(device::Device& device, bool quick) {
  Table t{"fft", fmt::format("clFFT batched 1-D single precision on {}", device.info().name),
          {"kind", "points", "batch", "gflops", "ms"}, {}, plot_of("points", "gflops", "kind"), {"kind", "points"}};
  t.plot->y_label = "GFLOP/s (5 N log2 N complex, 2.5 N log2 N real)";
  const kernels::FftLibrary library;
  const std::size_t total = quick ? (1u << 18) : (1u << 22);  // points per transform batch
  device::Buffer<float> in(device.context(), 2 * total, "fft.in"), out(device.context(), 2 * total + 4, "fft.out");
  for (std::size_t n = 1u << 8; n <= (quick ? (1u << 16) : (1u << 20)); n <<= (quick ? 4 : 2)) {
    const std::size_t batch = std::max<std::size_t>(1, total / n);
    for (const bool real : {false, true}) {
      FftPlan plan(device.context(), real ? FftKind::kRealToComplex : FftKind::kComplex, n, batch);
      plan.bake(device.queue());
      const double secs = best_seconds(device.queue(), 3, [&] { plan.enqueue(device.queue(), in.get(), out.get()); });
      const double flops = (real ? 2.5 : 5.0) * static_cast<double>(n) * std::log2(static_cast<double>(n)) *
                           static_cast<double>(batch);
      t.add({real ? "real_r2c" : "complex_c2c", n, batch, flops / secs / 1e9, secs * 1e3});
    }
  }
  return t;
}

}  // namespace paxocl::bench
