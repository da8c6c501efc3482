#include <fmt/format.h>

#include "bench/suite/benches.h"
#include "bench/suite/timing.h"

namespace paxocl::bench {

namespace {
constexpr const char* kStreamSource = R"CL(
__kernel void stream_copy(__global float* restrict a, __global const float* restrict b) {
  a[get_global_id(0)] = b[get_global_id(0)];
}
__kernel void stream_triad(__global float* restrict a, __global const float* restrict b,
                           __global const float* restrict c, const float s) {
  const size_t i = get_global_id(0);
  a[i] = b[i] + s * c[i];
}
)CL";
}  // namespace

Table bench_memory(device::Device& device, device::ProgramCache& cache, bool quick) {
  Table t{"memory", fmt::format("Memory bandwidth on {}", device.info().name), {"operation", "bytes", "gb_per_s", "ms"},
          {}, plot_of("bytes", "gb_per_s", "operation"), {"operation", "bytes"}};
  t.plot->y_label = "GB/s";
  const device::Program program = cache.build(device.context(), device.info(), "bench_stream", kStreamSource);
  device::Kernel copy(program, "stream_copy"), triad(program, "stream_triad");
  const std::size_t largest = quick ? (4u << 20) : (256u << 20);  // bytes per array
  const std::size_t n_max = largest / sizeof(float);
  device::Buffer<float> a(device.context(), n_max, "bench.a"), b(device.context(), n_max, "bench.b"),
      c(device.context(), n_max, "bench.c");
  std::vector<float> host(n_max, 1.0f);
  for (std::size_t bytes = 64u << 10; bytes <= largest; bytes *= 4) {
    const std::size_t n = bytes / sizeof(float);
    const int reps = bytes > (16u << 20) ? 3 : 10;
    const std::size_t global[] = {n};
    copy.set_args(a, b);
    const double copy_s = best_seconds(device.queue(), reps, [&] { device.queue().launch(copy, global); });
    triad.set_args(a, b, c, 3.0f);
    const double triad_s = best_seconds(device.queue(), reps, [&] { device.queue().launch(triad, global); });
    device::Buffer<float> view = a.view(0, n, "bench.view");
    const double h2d_s = best_seconds(device.queue(), reps, [&] {
      device.queue().write(view, std::span<const float>(host.data(), n), false);
    });
    const double d2h_s = best_seconds(device.queue(), reps, [&] {
      device.queue().read(view, std::span<float>(host.data(), n), false);
    });
    // STREAM's accounting: copy moves 2 arrays, triad 3.
    t.add({"copy", bytes, 2.0 * static_cast<double>(bytes) / copy_s / 1e9, copy_s * 1e3});
    t.add({"triad", bytes, 3.0 * static_cast<double>(bytes) / triad_s / 1e9, triad_s * 1e3});
    t.add({"host_to_device", bytes, static_cast<double>(bytes) / h2d_s / 1e9, h2d_s * 1e3});
    t.add({"device_to_host", bytes, static_cast<double>(bytes) / d2h_s / 1e9, d2h_s * 1e3});
  }
  return t;
}

Table bench_launch(device::Device& device, device::ProgramCache& cache) {
  Table t{"launch", fmt::format("Kernel launch latency on {}", device.info().name), {"mode", "launches", "us_per_launch"},
          {}, std::nullopt, {"mode"}};
  const device::Program program =
      cache.build(device.context(), device.info(), "bench_empty", "__kernel void empty(__global float* x) {}\n");
  device::Kernel empty(program, "empty");
  device::Buffer<float> x(device.context(), 1, "bench.x");
  empty.set_args(x);
  const std::size_t global[] = {1};
  const int launches = 200;
  const double waited = best_seconds(device.queue(), 3, [&] {
    for (int i = 0; i < launches; ++i) {
      device.queue().launch(empty, global);
      device.queue().finish();
    }
  });
  const double pipelined = best_seconds(device.queue(), 3, [&] {
    for (int i = 0; i < launches; ++i) device.queue().launch(empty, global);
  });
  t.add({"launch_and_wait", launches, waited / launches * 1e6});
  t.add({"back_to_back", launches, pipelined / launches * 1e6});
  return t;
}

}  // namespace paxocl::bench
