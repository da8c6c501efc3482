// The host's blocked flash attention (kernels_cl/host_flash_attention.h) on host memory, forward
// and backward, at each query block size: the numbers behind kHostFlashQueryBlock. Prints ms and
// GFLOP/s of the causal work (forward 4 hs per (query, key) pair at or below the diagonal,
// backward 10 hs: its five products against the forward's two), best of 5 runs after a warm-up;
// then the backward in each of its two forms (HostFlashBackwardForm), whatever the default.
// Usage: bench_host_flash [B (8)] [H (6)] [T (256)] [hs (64)] [threads (2)] [dtype (float32)]
//        [query blocks (32,64,128,256)]
// (config C's attention by default: L6 D384 H6 T256, 8 sequences).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/rng.h"
#include "common/whole_number.h"
#include "device/dtype.h"
#include "kernels_cl/host_flash_attention.h"
#include "kernels_cl/openmp_wait_policy.h"

namespace {

using namespace paxocl;

std::vector<std::byte> random_values(device::DType dtype, std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return device::encode(dtype, v);
}

template <typename F>
double best_ms(F&& run) {
  run();  // warm-up: workspaces, oneDNN's kernels
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

std::size_t arg(int argc, char** argv, int i, std::size_t fallback) {
  if (argc <= i) return fallback;
  const auto v = parse_whole_number(argv[i]);  // strtoul would take "-1" as 2^64 - 1
  if (!v || *v == 0 || *v > (1u << 20)) {
    throw ConfigError(std::string("bench_host_flash: argument ") + std::to_string(i) + " ('" + argv[i] +
                      "') must be a whole number from 1 to 1048576");
  }
  return static_cast<std::size_t>(*v);
}

int run(int argc, char** argv) {
  const std::size_t B = arg(argc, argv, 1, 8), H = arg(argc, argv, 2, 6), T = arg(argc, argv, 3, 256),
                    hs = arg(argc, argv, 4, 64), threads = arg(argc, argv, 5, 2);
  const device::DType dtype = argc > 6 ? device::dtype_from_name(argv[6]) : device::DType::kF32;
  std::vector<std::size_t> blocks{32, 64, 128, 256};
  if (argc > 7) {
    blocks.clear();
    std::stringstream list(argv[7]);
    for (std::string item; std::getline(list, item, ',');) {
      char* one[] = {nullptr, item.data()};
      blocks.push_back(arg(2, one, 1, 0));
    }
  }
  const std::size_t D = H * hs, W = 3 * D, N = B * T, size = device::dtype_size(dtype);
  const auto qkv = random_values(dtype, N * W, 1), dout = random_values(dtype, N * D, 2);
  std::vector<std::byte> out(N * D * size), dqkv(N * W * size);
  std::vector<float> lse(B * H * T);
  const kernels::AttentionHeads heads{H, H, hs};
  const double pairs = static_cast<double>(B * H) * static_cast<double>(T) * static_cast<double>(T + 1) / 2;
  const char* form = kernels::host_flash_backward_form(B * H, static_cast<unsigned>(threads)) ==
                             kernels::HostFlashBackwardForm::kSplit ? "split" : "fused";
  std::printf("B %zu, H %zu, T %zu, hs %zu, %s, %zu threads; the backward's form by default: %s\n"
              "%8s %10s %10s %10s %10s %12s %12s\n", B, H, T, hs, std::string(device::dtype_name(dtype)).c_str(), threads,
              form, "block", "fwd ms", "fwd GF/s", "bwd ms", "bwd GF/s", "fused ms", "split ms");
  for (const std::size_t block : blocks) {
    const kernels::HostFlashForward f{.q = qkv.data(), .q_stride = W, .kv = qkv.data(), .kv_rows_per_sequence = T,
                                      .kv_stride = W, .k_col = D, .v_col = 2 * D, .out = out.data(), .out_stride = D,
                                      .lse = lse.data(), .stats_stride = T, .act = dtype, .heads = heads, .B = B,
                                      .queries = T, .p0 = 0, .query_block = block};
    kernels::HostFlashBackward b{.qkv = qkv.data(), .width = W, .k_col = D, .v_col = 2 * D, .out = out.data(),
                                       .dout = dout.data(), .lse = lse.data(), .dqkv = dqkv.data(), .act = dtype,
                                       .heads = heads, .B = B, .T = T, .query_block = block};
    const double fwd = best_ms([&] { kernels::host_flash_forward(f, static_cast<unsigned>(threads)); });
    const double bwd = best_ms([&] { kernels::host_flash_backward(b, static_cast<unsigned>(threads)); });
    b.form = kernels::HostFlashBackwardForm::kFused;
    const double fused = best_ms([&] { kernels::host_flash_backward(b, static_cast<unsigned>(threads)); });
    b.form = kernels::HostFlashBackwardForm::kSplit;
    const double split = best_ms([&] { kernels::host_flash_backward(b, static_cast<unsigned>(threads)); });
    std::printf("%8zu %10.3f %10.1f %10.3f %10.1f %12.3f %12.3f\n", block, fwd, 4.0 * hs * pairs / fwd / 1e6, bwd,
                10.0 * hs * pairs / bwd / 1e6, fused, split);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  paxocl::kernels::restart_with_passive_openmp_waits(argv);  // as pax-ocl runs: before any thread starts
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
