#include <clFFT.h>

#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "bench/suite/benches.h"
#include "bench/suite/timing.h"
#include "common/errors.h"

namespace paxocl::bench {

namespace {
void check_fft(clfftStatus status, const char* call) {
  if (status != CLFFT_SUCCESS) throw DeviceError(fmt::format("{} failed with clFFT status {}", call, static_cast<int>(status)));
}

// clFFT's library state (clfftSetup / clfftTeardown) and one plan, released in reverse order.
struct FftLibrary {
  FftLibrary() {
    clfftSetupData setup;
    check_fft(clfftInitSetupData(&setup), "clfftInitSetupData");
    check_fft(clfftSetup(&setup), "clfftSetup");
  }
  ~FftLibrary() { clfftTeardown(); }
  FftLibrary(const FftLibrary&) = delete;
  FftLibrary& operator=(const FftLibrary&) = delete;
};

class FftPlan {
 public:
  FftPlan(const device::Device& device, std::size_t n, std::size_t batch, bool real) {
    check_fft(clfftCreateDefaultPlan(&plan_, device.context().get(), CLFFT_1D, &n), "clfftCreateDefaultPlan");
    check_fft(clfftSetPlanPrecision(plan_, CLFFT_SINGLE), "clfftSetPlanPrecision");
    check_fft(clfftSetResultLocation(plan_, CLFFT_OUTOFPLACE), "clfftSetResultLocation");
    check_fft(clfftSetPlanBatchSize(plan_, batch), "clfftSetPlanBatchSize");
    if (real) {  // (batch, n) reals -> (batch, n/2 + 1) complex
      check_fft(clfftSetLayout(plan_, CLFFT_REAL, CLFFT_HERMITIAN_INTERLEAVED), "clfftSetLayout");
      check_fft(clfftSetPlanDistance(plan_, n, n / 2 + 1), "clfftSetPlanDistance");
    } else {
      check_fft(clfftSetLayout(plan_, CLFFT_COMPLEX_INTERLEAVED, CLFFT_COMPLEX_INTERLEAVED), "clfftSetLayout");
    }
  }
  ~FftPlan() { clfftDestroyPlan(&plan_); }
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  void bake(device::Queue& queue) {
    cl_command_queue q = queue.get();
    check_fft(clfftBakePlan(plan_, 1, &q, nullptr, nullptr), "clfftBakePlan");
  }
  void forward(device::Queue& queue, cl_mem in, cl_mem out) {
    cl_command_queue q = queue.get();
    check_fft(clfftEnqueueTransform(plan_, CLFFT_FORWARD, 1, &q, 0, nullptr, nullptr, &in, &out, nullptr),
              "clfftEnqueueTransform");
  }

 private:
  clfftPlanHandle plan_ = 0;
};
}  // namespace

Table bench_fft(device::Device& device, bool quick) {
  Table t{"fft", fmt::format("clFFT batched 1-D single precision on {}", device.info().name),
          {"kind", "points", "batch", "gflops", "ms"}, {}, plot_of("points", "gflops", "kind"), {"kind", "points"}};
  t.plot->y_label = "GFLOP/s (5 N log2 N complex, 2.5 N log2 N real)";
  const FftLibrary library;
  const std::size_t total = quick ? (1u << 18) : (1u << 22);  // points per transform batch
  device::Buffer<float> in(device.context(), 2 * total, "fft.in"), out(device.context(), 2 * total + 4, "fft.out");
  for (std::size_t n = 1u << 8; n <= (quick ? (1u << 16) : (1u << 20)); n <<= (quick ? 4 : 2)) {
    const std::size_t batch = std::max<std::size_t>(1, total / n);
    for (const bool real : {false, true}) {
      FftPlan plan(device, n, batch, real);
      plan.bake(device.queue());
      const double secs = best_seconds(device.queue(), 3, [&] { plan.forward(device.queue(), in.get(), out.get()); });
      const double flops = (real ? 2.5 : 5.0) * static_cast<double>(n) * std::log2(static_cast<double>(n)) *
                           static_cast<double>(batch);
      t.add({real ? "real_r2c" : "complex_c2c", n, batch, flops / secs / 1e9, secs * 1e3});
    }
  }
  return t;
}

}  // namespace paxocl::bench
