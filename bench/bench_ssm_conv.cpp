// The SSM layer's causal convolution, clFFT against direct (models/layers/ssm.h), over sequence
// lengths L = 64, 128, ..., max_L at a fixed batch x channels: the convolution alone
// (SsmKernels::conv_forward on a precomputed K), the layer's forward (K from C, then the
// convolution) and its forward + backward. Prints a whitespace table (gnuplot reads it:
// bench/plot_ssm_conv.gp) and, per pair, the crossover L: the first L from which FFT is faster
// at every longer L measured. Times are best of a few runs after a warm-up, queue drained.
// Usage: bench_ssm_conv [max_L (16384)] [B (1)] [C (32)] [N (64)] [FPROP_DTYPE (float32)]
// (device: PAX_OCL_DEVICES, default auto)
#include <cstdio>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "bench/suite/timing.h"
#include "common/rng.h"
#include "device/device_selection.h"
#include "kernels_cl/auto_gemm.h"
#include "kernels_cl/device_runtime.h"
#include "models/layers/ssm.h"

namespace {

using namespace paxocl;
using kernels::SsmConvolution;

struct Row {
  std::size_t L;
  double ms[6];  // conv fft, conv direct, forward fft, forward direct, fwd+bwd fft, fwd+bwd direct
};

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double std) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(std * rng.normal());
  return v;
}

models::FloatBuffer uploaded(device::Device& dev, const std::vector<float>& v, const char* name) {
  models::FloatBuffer b(dev.context(), v.size(), name);
  dev.queue().write(b, std::span<const float>(v));
  return b;
}

// The first L from which the FFT column is faster at every longer L; 0 if none.
std::size_t crossover(const std::vector<Row>& rows, int fft_column) {
  std::size_t from = 0;
  for (const Row& r : rows) {
    if (r.ms[fft_column] < r.ms[fft_column + 1]) {
      if (from == 0) from = r.L;
    } else {
      from = 0;
    }
  }
  return from;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t max_L = argc > 1 ? std::stoul(argv[1]) : 16384;
  const std::size_t B = argc > 2 ? std::stoul(argv[2]) : 1;
  const std::size_t C = argc > 3 ? std::stoul(argv[3]) : 32;
  const int N = argc > 4 ? std::stoi(argv[4]) : 64;
  const device::DType act = argc > 5 ? device::dtype_from_name(argv[5]) : device::DType::kF32;
  spdlog::set_level(spdlog::level::warn);  // stdout is the table (a clFFT fallback still warns)
  const auto selected = device::select_devices(device::enumerate_devices(),
                                               device::parse_device_selection(device::device_spec_from(std::nullopt)));
  device::Device dev(selected.front());
  device::ProgramCache cache;
  kernels::DeviceRuntime runtime(dev, cache, act, kernels::gemm_policy_from(std::nullopt));
  std::printf("# SSM convolution on %s (%s, %u CUs): B=%zu C=%zu N=%d %s\n", dev.info().name.c_str(),
              dev.info().platform_name.c_str(), dev.info().compute_units, B, C, N,
              std::string(device::dtype_name(act)).c_str());
  std::printf("# %-6s %12s %12s %12s %12s %12s %12s\n", "L", "conv_fft", "conv_direct", "fwd_fft", "fwd_direct",
              "fwdbwd_fft", "fwdbwd_direct");
  std::fflush(stdout);

  const auto Ns = static_cast<std::size_t>(N);
  auto c_re = uploaded(dev, random_floats(Ns * C, 1, 0.7), "c_re"), c_im = uploaded(dev, random_floats(Ns * C, 2, 0.7), "c_im");
  auto d = uploaded(dev, std::vector<float>(C, 1.0f), "d");
  std::vector<Row> rows;
  for (std::size_t L = 64; L <= max_L; L *= 2) {
    Row row{L, {}};
    const std::vector<float> u_host = random_floats(B * L * C, 3, 1.0);
    device::TypedBuffer u(dev.context(), act, B * L * C, "u"), dy(dev.context(), act, B * L * C, "dy");
    u.write(dev.queue(), u_host);
    dy.write(dev.queue(), u_host);
    models::LayerContext ctx{dev, runtime.kernels(), runtime.gemm(), B, L};
    const int reps = L >= 4096 ? 1 : 3;  // the direct convolution is O(L^2): keep the long runs short
    for (const SsmConvolution method : {SsmConvolution::kFft, SsmConvolution::kDirect}) {
      const bool fft = method == SsmConvolution::kFft;
      models::SsmConfig config;
      config.state_size = N;
      config.convolution = fft ? "fft" : "direct";
      const std::vector<float> zeros(Ns * C, 0.0f);
      models::Param p_re{c_re, uploaded(dev, zeros, "dc_re"), {}};
      models::Param p_im{c_im, uploaded(dev, zeros, "dc_im"), {}};
      models::Param p_d{d, uploaded(dev, std::vector<float>(C, 0.0f), "dd"), {}};
      models::Ssm layer(dev, act, p_re, p_im, p_d, config, C, B, L, "ssm");
      const SsmConvolution ran = runtime.kernels().ssm.resolve(method, B, L, C);
      if (ran != method) std::printf("# L=%zu: clFFT unavailable, the fft columns ran direct\n", L);
      // The convolution alone, on a K of the layer's scale (its values do not change the work).
      const models::FloatBuffer K = uploaded(dev, random_floats(L * C, 4, 0.01), "K");
      device::TypedBuffer y(dev.context(), act, B * L * C, "y");
      const int column = fft ? 0 : 1;
      row.ms[column] = 1e3 * bench::best_seconds(dev.queue(), reps, [&] {
        runtime.kernels().ssm.conv_forward(ran, y, u, K, d, B, L, C);
      });
      row.ms[2 + column] = 1e3 * bench::best_seconds(dev.queue(), reps, [&] { layer.forward(ctx, u); });
      row.ms[4 + column] = 1e3 * bench::best_seconds(dev.queue(), reps, [&] {
        layer.forward(ctx, u);
        layer.backward(ctx, dy);
      });
    }
    std::printf("  %-6zu %12.3f %12.3f %12.3f %12.3f %12.3f %12.3f\n", L, row.ms[0], row.ms[1], row.ms[2], row.ms[3],
                row.ms[4], row.ms[5]);
    std::fflush(stdout);
    rows.push_back(row);
  }
  const char* names[] = {"convolution", "forward", "forward+backward"};
  for (int k = 0; k < 3; ++k) {
    const std::size_t from = crossover(rows, 2 * k);
    if (from != 0) {
      std::printf("# crossover %s: FFT faster from L=%zu\n", names[k], from);
    } else {
      std::printf("# crossover %s: FFT not faster at the longest L measured\n", names[k]);
    }
  }
  return 0;
}
