// GEMM benchmark: pax-ocl's GEMM (BLIS where the device runs native kernels, each OpenCL CPU
// variant and the auto-tuned choice; CLBlast with
// --clblast) against OpenBLAS's cblas_sgemm on the GEMM shapes of one training step of the
// benchmark models (forward, input gradients, weight gradients, attention). Wall time per call,
// packing included (OpenBLAS packs internally too), best of `reps` after a warm-up.
// OpenBLAS is opened at run time (libopenblas.so.0, Debian's libopenblas0): the relocatable bundle
// leaves its 36 MB out, and without it the OpenBLAS column reads "-".
// Usage: bench_gemm [A|B|C|D|all] [reps] [--clblast]     (OpenBLAS threads: OPENBLAS_NUM_THREADS)
//        bench_gemm tc [reps] [TILE|all]   the tensor-core GEMM (NVIDIA, after its probe) in bfloat16
//            on 4096^3 and GPT-2 124M's step shapes (T1024 B8), TFLOP/s per MMA tile (all: every
//            candidate; default: the one TensorCoreGemm picks), next to the float32-accumulating auto GEMM.
//        bench_gemm tf32 [reps] [TILE|all]   the same with float32 A, B and C on the TF32 path
//            (MATMUL_PRECISION=tf32), next to auto's float32 GEMM.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "bench/suite/open_blas.h"
#include "device/device_selection.h"
#include "device/typed_buffer.h"
#include "kernels_cl/auto_gemm.h"
#include "kernels_cl/blis_gemm.h"
#include "kernels_cl/host_gemm.h"
#include "kernels_cl/openmp_wait_policy.h"
#include "kernels_cl/tensor_core_gemm.h"

namespace {

using namespace paxocl;
using kernels::GemmShape;
using kernels::Transpose;


struct Model {
  const char* name;
  std::size_t layers, dims, heads, seq, vocab, batch;
};
constexpr Model kModels[] = {{"A", 2, 128, 4, 128, 4096, 8}, {"B", 4, 256, 4, 256, 8192, 8}, {"C", 6, 384, 6, 256, 16384, 8}, {"D", 12, 768, 12, 256, 50304, 4}};

struct Shape {
  std::string what;
  GemmShape s;
};

std::vector<Shape> step_shapes(const Model& m) {
  const std::size_t N = m.batch * m.seq, C = m.dims, Vp = (m.vocab + 127) / 128 * 128, T = m.seq, hs = C / m.heads;
  const auto NT = [](std::size_t a, std::size_t b, std::size_t c, std::size_t batch = 1) {
    return GemmShape{Transpose::kNo, Transpose::kYes, a, b, c, batch};
  };
  const auto NN = [](std::size_t a, std::size_t b, std::size_t c, std::size_t batch = 1) {
    return GemmShape{Transpose::kNo, Transpose::kNo, a, b, c, batch};
  };
  const auto TN = [](std::size_t a, std::size_t b, std::size_t c, std::size_t batch = 1) {
    return GemmShape{Transpose::kYes, Transpose::kNo, a, b, c, batch};
  };
  return {{"qkv x W^T", NT(N, 3 * C, C)},      {"fc x W^T", NT(N, 4 * C, C)},     {"fcproj x W^T", NT(N, C, 4 * C)},
          {"logits y wte^T", NT(N, Vp, C)},    {"dx fc dz W", NN(N, C, 4 * C)},   {"dy dlogits wte", NN(N, C, Vp)},
          {"dW qkv dz^T x", TN(3 * C, C, N)},  {"dW fc dz^T x", TN(4 * C, C, N)}, {"dwte dlogits^T y", TN(Vp, C, N)},
          {"attn q k^T", NT(T, T, hs, m.heads)}, {"attn p v", NN(T, hs, T, m.heads)}};
}

double flops(const GemmShape& s) { return 2.0 * static_cast<double>(s.m) * s.n * s.k * s.batch; }

template <typename F>
double best_ms(int reps, F&& f) {
  f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// bench_gemm tc: bfloat16 A and B, C float32 and bfloat16 (tf32: float32 A, B and C, A and B as
// TF32); wall time of 5 back-to-back GEMMs.
int bench_tensor_cores(device::Device& dev, device::ProgramCache& cache, int reps, const std::string& tile_arg, bool tf32) {
  using device::DType;
  const kernels::TensorCores& tc = kernels::probe_tensor_cores(dev.info(), cache);
  std::printf("device: %s  %s\n", dev.info().name.c_str(), tc.describe().c_str());
  if (!(tf32 ? tc.tf32 : tc.bf16)) {
    std::printf("skipped: no %s tensor cores on this device\n", tf32 ? "TF32" : "bfloat16");
    return 0;
  }
  const DType ab = tf32 ? DType::kF32 : DType::kBF16;
  const std::vector<DType> c_dtypes = tf32 ? std::vector<DType>{DType::kF32} : std::vector<DType>{DType::kF32, DType::kBF16};
  const auto precision = tf32 ? kernels::MatmulPrecision::kTf32 : kernels::MatmulPrecision::kFloat32;
  std::vector<std::optional<kernels::MmaTile>> tiles;
  if (tile_arg == "all") {
    for (const auto& t : kernels::mma_tile_candidates(dev.info().local_mem_bytes, tf32 ? 4 : 2)) tiles.emplace_back(t);
  } else {
    tiles.push_back(tile_arg.empty() ? std::nullopt : std::optional(kernels::MmaTile::parse(tile_arg)));
  }
  std::vector<Shape> shapes = {{"square 4096 NN", GemmShape{Transpose::kNo, Transpose::kNo, 4096, 4096, 4096, 1}},
                               {"square 4096 NT", GemmShape{Transpose::kNo, Transpose::kYes, 4096, 4096, 4096, 1}},
                               {"square 4096 TN", GemmShape{Transpose::kYes, Transpose::kNo, 4096, 4096, 4096, 1}}};
  for (const Shape& sh : step_shapes(Model{"124M", 12, 768, 12, 1024, 50304, 8})) shapes.push_back(sh);
  auto fallback = kernels::make_float32_accumulating_gemm(dev, cache);
  std::printf("%-18s %-24s %-4s", "gemm", "shape (m n k x batch)", "C");
  for (const auto& t : tiles) std::printf(" %22s", t ? t->name().c_str() : "default");
  std::printf(" %10s  (TFLOP/s, best of %d)\n", "auto f32acc", reps);
  std::vector<std::unique_ptr<kernels::TensorCoreGemm>> gemms;
  for (const auto& t : tiles) {
    gemms.push_back(std::make_unique<kernels::TensorCoreGemm>(
        cache, dev, kernels::make_float32_accumulating_gemm(dev, cache), t, kernels::TensorCoreGemm::Mode::kPtx, precision));
  }
  for (const Shape& sh : shapes) {
    const GemmShape& s = sh.s;
    const std::size_t a_rows = s.a == Transpose::kNo ? s.m : s.k, a_cols = s.a == Transpose::kNo ? s.k : s.m;
    const std::size_t b_rows = s.b == Transpose::kNo ? s.k : s.n, b_cols = s.b == Transpose::kNo ? s.n : s.k;
    device::TypedBuffer a(dev.context(), ab, s.batch * a_rows * a_cols, "a"), b(dev.context(), ab, s.batch * b_rows * b_cols, "b");
    a.write(dev.queue(), std::vector<float>(s.batch * a_rows * a_cols, 0.5f));
    b.write(dev.queue(), std::vector<float>(s.batch * b_rows * b_cols, 0.25f));
    for (DType c_dtype : c_dtypes) {
      device::TypedBuffer c(dev.context(), c_dtype, s.batch * s.m * s.n, "c");
      const kernels::GemmOperand ao{a.get(), 0, a_cols, a_rows * a_cols, ab}, bo{b.get(), 0, b_cols, b_rows * b_cols, ab},
          co{c.get(), 0, s.n, s.m * s.n, c_dtype};
      const auto tflops = [&](kernels::Gemm& g) {
        const double ms = best_ms(reps, [&] {
          for (int i = 0; i < 5; ++i) g.run(s, 1.0f, ao, bo, 0.0f, co);
          dev.queue().finish();
        });
        return 5 * flops(s) / ms / 1e9;
      };
      std::printf("%-18s %5zu %5zu %5zu x%-3zu         %-4s", sh.what.c_str(), s.m, s.n, s.k, s.batch,
                  c_dtype == DType::kF32 ? "f32" : "bf16");
      for (auto& g : gemms) std::printf(" %22.1f", tflops(*g));
      std::printf(" %10.1f\n", tflops(*fallback));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  paxocl::kernels::restart_with_passive_openmp_waits(argv);  // before any thread starts
  if (const std::string w = paxocl::kernels::ignore_blis_arch_type_where_it_aborts(); !w.empty()) spdlog::warn(w);
  const std::string which = argc > 1 ? argv[1] : "all";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  const bool with_clblast = argc > 3 && std::strcmp(argv[3], "--clblast") == 0;
  const auto selected = device::select_devices(device::enumerate_devices(),
                                               device::parse_device_selection(device::device_spec_from(std::nullopt)));
  device::Device dev(selected.front());
  device::ProgramCache cache;
  if (which == "tc" || which == "tf32") return bench_tensor_cores(dev, cache, reps, argc > 3 ? argv[3] : "", which == "tf32");
  std::vector<std::string> policies = {"cpu-8x48", "cpu-12x32", "auto"};
  if (kernels::host_gemm_available(dev)) policies.insert(policies.begin(), {"onednn", "blis"});
  if (with_clblast) policies.push_back("clblast");
  std::vector<std::unique_ptr<kernels::Gemm>> gemms;
  for (const auto& p : policies) gemms.push_back(kernels::make_gemm(dev, cache, p));
  const bench::OpenBlas blas;
  if (!blas.available()) std::printf("OpenBLAS: libopenblas.so.0 not found (apt-get install libopenblas0); its column is empty\n");
  std::printf("device: %s  OpenBLAS threads: %d  (GFLOP/s, best of %d)\n", dev.info().name.c_str(), blas.threads(), reps);
  std::printf("%-5s %-18s %-26s %9s", "model", "gemm", "shape (m n k x batch)", "OpenBLAS");
  for (const auto& p : policies) std::printf(" %10s", p.c_str());
  std::printf("  auto/OpenBLAS\n");
  for (const Model& m : kModels) {
    if (which != "all" && which != m.name) continue;
    // Per policy, the step's shapes one call each: auto's rate against the fastest library's
    // (OpenBLAS, oneDNN, BLIS) is issue 38's "80% of the best GEMM library" criterion.
    double total_blas = 0, total_auto = 0;
    std::vector<double> totals(gemms.size(), 0.0);
    for (const Shape& sh : step_shapes(m)) {
      const GemmShape& s = sh.s;
      const std::size_t a_rows = s.a == Transpose::kNo ? s.m : s.k, a_cols = s.a == Transpose::kNo ? s.k : s.m;
      const std::size_t b_rows = s.b == Transpose::kNo ? s.k : s.n, b_cols = s.b == Transpose::kNo ? s.n : s.k;
      std::vector<float> A(s.batch * a_rows * a_cols, 0.5f), B(s.batch * b_rows * b_cols, 0.25f), C(s.batch * s.m * s.n);
      const double blas_ms = blas.available() ? best_ms(reps, [&] { blas.sgemm(s, A.data(), B.data(), C.data()); }) : 0.0;
      device::Buffer<float> a(dev.context(), A.size(), "a"), b(dev.context(), B.size(), "b"), c(dev.context(), C.size(), "c");
      dev.queue().write(a, std::span<const float>(A));
      dev.queue().write(b, std::span<const float>(B));
      std::printf("%-5s %-18s %5zu %5zu %5zu x%-3zu        ", m.name, sh.what.c_str(), s.m, s.n, s.k, s.batch);
      if (blas_ms > 0) std::printf("%9.1f", flops(s) / blas_ms / 1e6); else std::printf("%9s", "-");
      double auto_ms = 0;
      for (std::size_t g = 0; g < gemms.size(); ++g) {
        const double ms = best_ms(reps, [&] {
          gemms[g]->run(s, 1.0f, {a.get(), 0, a_cols, a_rows * a_cols}, {b.get(), 0, b_cols, b_rows * b_cols}, 0.0f,
                        {c.get(), 0, s.n, s.m * s.n});
          dev.queue().finish();
        });
        if (policies[g] == "auto") auto_ms = ms;
        totals[g] += ms;
        std::printf(" %10.1f", flops(s) / ms / 1e6);
      }
      if (blas_ms > 0) std::printf("  %5.0f%%\n", 100.0 * blas_ms / auto_ms); else std::printf("  %6s\n", "-");
      total_blas += blas_ms;
      total_auto += auto_ms;
      std::fflush(stdout);
    }
    if (total_blas > 0) {
      std::printf("%-5s all shapes of a step: OpenBLAS %.1f ms, pax-ocl auto %.1f ms: %.0f%% of OpenBLAS's speed\n", m.name,
                  total_blas, total_auto, 100.0 * total_blas / total_auto);
    } else {
      std::printf("%-5s all shapes of a step: pax-ocl auto %.1f ms\n", m.name, total_auto);
    }
    std::string fastest = total_blas > 0 ? "OpenBLAS" : "";
    double fastest_ms = total_blas;
    for (std::size_t g = 0; g < gemms.size(); ++g) {
      if ((policies[g] == "onednn" || policies[g] == "blis") && (fastest.empty() || totals[g] < fastest_ms)) {
        fastest = policies[g];
        fastest_ms = totals[g];
      }
    }
    if (!fastest.empty()) {
      std::printf("%-5s all shapes of a step: the fastest library, %s, %.1f ms; pax-ocl auto %.0f%% of its speed\n",
                  m.name, fastest.c_str(), fastest_ms, 100.0 * fastest_ms / total_auto);
    }
  }
}
