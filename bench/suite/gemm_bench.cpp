#include <fmt/format.h>

#include "bench/suite/benches.h"
#include "bench/suite/timing.h"
#include "kernels_cl/auto_gemm.h"

namespace paxocl::bench {

using kernels::GemmShape;
using kernels::Transpose;

std::vector<GemmCase> model_gemm_cases(const models::GptConfig& c, std::size_t N) {
  const std::size_t C = static_cast<std::size_t>(c.model_dims), D = static_cast<std::size_t>(c.attention_dims()),
                    H = static_cast<std::size_t>(c.hidden_dims), V = static_cast<std::size_t>(c.padded_vocab());
  const auto no = Transpose::kNo, yes = Transpose::kYes;
  return {{"qkv fwd", {no, yes, N, 3 * D, C}}, {"attn.proj fwd", {no, yes, N, C, D}}, {"fc fwd", {no, yes, N, H, C}},
          {"fc.proj fwd", {no, yes, N, C, H}}, {"fc dW", {yes, no, H, C, N}}, {"fc dX", {no, no, N, C, H}},
          {"lm head fwd", {no, yes, N, V, C}}, {"lm head dX", {no, no, N, C, V}}};
}

Table bench_gemm(device::Device& device, device::ProgramCache& cache, const models::GptConfig& model, int batch,
                 bool quick) {
  Table t{"gemm", fmt::format("GEMM GFLOP/s on {}", device.info().name),
          {"implementation", "case", "m", "n", "k", "gflops", "ms"}, {}, plot_of("m", "gflops", "implementation"),
          {"implementation", "case", "m", "n", "k"}};
  t.plot->y_label = "GFLOP/s (square NN sizes)";
  t.plot->only_column = "case";
  t.plot->only_value = "square";
  std::vector<GemmCase> cases;
  for (std::size_t n = 64; n <= (quick ? 256u : 2048u); n *= 2) cases.push_back({"square", {Transpose::kNo, Transpose::kNo, n, n, n}});
  const std::size_t tokens = static_cast<std::size_t>(batch) * static_cast<std::size_t>(model.max_seq_len);
  for (const GemmCase& c : model_gemm_cases(model, quick ? std::min<std::size_t>(tokens, 256) : tokens)) cases.push_back(c);
  GemmTimer timer(device, cases);
  for (const std::string policy : {"auto", "clblast"}) {
    const auto gemm = kernels::make_gemm(device, cache, policy);
    for (const GemmCase& c : cases) {
      const double secs = timer.seconds(*gemm, c.shape, quick ? 2 : 3);
      t.add({policy == "auto" ? "pax-ocl" : "clblast", c.name, c.shape.m, c.shape.n, c.shape.k,
             GemmTimer::gflops(c.shape, secs), secs * 1e3});
    }
  }
  t.plot->reference = peak_of(t);
  t.plot->reference_label = fmt::format("measured peak {:.1f} GFLOP/s", peak_of(t));
  return t;
}

namespace {
std::size_t largest_operand(const std::vector<GemmCase>& cases) {
  std::size_t biggest = 1;
  for (const GemmCase& c : cases) {
    biggest = std::max({biggest, c.shape.m * c.shape.k, c.shape.k * c.shape.n, c.shape.m * c.shape.n});
  }
  return biggest;
}
}  // namespace

GemmTimer::GemmTimer(device::Device& device, const std::vector<GemmCase>& cases)
    : device_(device),
      a_(device.context(), largest_operand(cases), "bench.a"),
      b_(device.context(), largest_operand(cases), "bench.b"),
      c_(device.context(), largest_operand(cases), "bench.c") {}

double GemmTimer::seconds(kernels::Gemm& gemm, const GemmShape& s, int reps) {
  const std::size_t lda = s.a == Transpose::kNo ? s.k : s.m, ldb = s.b == Transpose::kNo ? s.n : s.k;
  return best_seconds(device_.queue(), reps,
                      [&] { gemm.run(s, 1.0f, {a_.get(), 0, lda}, {b_.get(), 0, ldb}, 0.0f, {c_.get(), 0, s.n}); });
}

double GemmTimer::gflops(const GemmShape& s, double seconds) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) / seconds / 1e9;
}

double peak_of(const Table& gemm) {
  double best = 0;
  for (const auto& row : gemm.rows) best = std::max(best, row[5].get<double>());
  return best;
}

}  // namespace paxocl::bench
