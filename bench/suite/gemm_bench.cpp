#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "bench/suite/benches.h"
#include "bench/suite/open_blas.h"
#include "bench/suite/timing.h"
#include "kernels_cl/auto_gemm.h"
#include "kernels_cl/host_gemm.h"
#include "models/layers/causal_attention.h"

namespace paxocl::bench {

using kernels::GemmShape;
using kernels::Transpose;

std::vector<GemmCase> model_gemm_cases(const models::GptConfig& c, std::size_t batch) {
  const std::size_t C = static_cast<std::size_t>(c.model_dims), D = static_cast<std::size_t>(c.attention_dims()),
                    H = static_cast<std::size_t>(c.hidden_dims), V = static_cast<std::size_t>(c.padded_vocab()),
                    T = static_cast<std::size_t>(c.max_seq_len), L = static_cast<std::size_t>(c.num_layers),
                    heads = static_cast<std::size_t>(c.num_heads), hs = D / heads, N = batch * T;
  const auto no = Transpose::kNo, yes = Transpose::kYes;
  std::vector<GemmCase> cases;
  // Linear (layers/linear.cpp): y (N, out) = x W^T; dW (out, in) = dy^T x; dx (N, in) = dy W.
  const auto linear = [&](const std::string& name, std::size_t in, std::size_t out, std::size_t count) {
    cases.push_back({name + " fwd", {no, yes, N, out, in}, count});
    cases.push_back({name + " dW", {yes, no, out, in, N}, count});
    cases.push_back({name + " dX", {no, no, N, in, out}, count});
  };
  linear("qkv", C, 3 * D, L);
  linear("attn.proj", D, C, L);
  linear("fc", C, H, L);
  linear("fc.proj", H, C, L);
  // Attention (layers/causal_attention.cpp), per sequence and layer over the heads, per query block
  // (Q queries against their K causal keys): q k^T in the forward, again in the backward
  // (recomputed probabilities), and dO v^T; P v and dS k; P^T dO and dS^T q.
  const std::size_t block = std::min(T, models::CausalAttention::kQueryBlock);
  for (std::size_t q0 = 0; q0 < T; q0 += block) {
    const std::size_t Q = std::min(block, T - q0), K = q0 + Q;
    const std::string at = fmt::format("attn block {}..{}: ", q0, K - 1);
    cases.push_back({at + "(Q,K) = (Q,hs)(hs,K)", {no, yes, Q, K, hs, heads}, 3 * batch * L});
    cases.push_back({at + "(Q,hs) = (Q,K)(K,hs)", {no, no, Q, hs, K, heads}, 2 * batch * L});
    cases.push_back({at + "(K,hs) = (Q,K)^T(Q,hs)", {yes, no, K, hs, Q, heads}, 2 * batch * L});
  }
  linear("lm head", C, V, 1);  // lm_head.cpp: the same three GEMMs with wte as W
  return cases;
}

double gemm_flops(const GemmCase& c) {
  return 2.0 * static_cast<double>(c.count) * static_cast<double>(c.shape.m) * static_cast<double>(c.shape.n) *
         static_cast<double>(c.shape.k) * static_cast<double>(c.shape.batch);
}

namespace {

// Row lengths of `s`'s operands as stored, row-major (their leading dimensions when dense).
std::size_t a_cols(const GemmShape& s) { return s.a == Transpose::kNo ? s.k : s.m; }
std::size_t b_cols(const GemmShape& s) { return s.b == Transpose::kNo ? s.n : s.k; }

std::size_t largest_operand(const std::vector<GemmCase>& cases) {
  std::size_t biggest = 1;
  for (const GemmCase& c : cases) {
    const GemmShape& s = c.shape;
    biggest = std::max({biggest, s.batch * s.m * s.k, s.batch * s.k * s.n, s.batch * s.m * s.n});
  }
  return biggest;
}

}  // namespace

Table bench_gemm(device::Device& device, device::ProgramCache& cache, const models::GptConfig& model, int batch,
                 bool quick) {
  Table t{"gemm", fmt::format("GEMM GFLOP/s on {}", device.info().name),
          {"implementation", "case", "m", "n", "k", "batch", "count", "gflops", "ms"}, {},
          plot_of("m", "gflops", "implementation"), {"implementation", "case", "m", "n", "k", "batch"}};
  t.plot->y_label = "GFLOP/s (square NN sizes)";
  t.plot->only_column = "case";
  t.plot->only_value = "square";
  std::vector<GemmCase> cases;
  for (std::size_t n = 64; n <= (quick ? 256u : 2048u); n *= 2) cases.push_back({"square", {Transpose::kNo, Transpose::kNo, n, n, n}});
  models::GptConfig shapes_of = model;
  if (quick) {
    shapes_of.max_seq_len = std::min(shapes_of.max_seq_len, 256);
    batch = 1;
  }
  for (const GemmCase& c : model_gemm_cases(shapes_of, static_cast<std::size_t>(batch))) cases.push_back(c);
  const int reps = quick ? 2 : 3;

  const bool cpu = device.info().kind == device::DeviceKind::kCpu;
  std::vector<std::string> policies = {"auto"};
  if (cpu && kernels::host_gemm_available(device)) policies.insert(policies.end(), {"onednn", "blis"});
  for (const char* p : cpu ? std::vector<const char*>{"cpu-8x48", "cpu-12x32"} : std::vector<const char*>{"gpu-64x64"}) {
    policies.push_back(p);
  }
  policies.push_back("clblast");
  // One implementation's rows: every case, then "step", every GEMM of the step (each shape times
  // its count).
  const auto add_rows = [&](const std::string& impl, const std::function<double(const GemmShape&)>& seconds_of) {
    double step_seconds = 0, step_flops = 0;
    for (const GemmCase& c : cases) {
      const double secs = seconds_of(c.shape);
      t.add({impl, c.name, c.shape.m, c.shape.n, c.shape.k, c.shape.batch, c.count, GemmTimer::gflops(c.shape, secs),
             secs * 1e3});
      if (c.name != "square") {
        step_seconds += secs * static_cast<double>(c.count);
        step_flops += gemm_flops(c);
      }
    }
    t.add({impl, "step", 0, 0, 0, 0, 0, step_flops / step_seconds / 1e9, step_seconds * 1e3});
  };

  GemmTimer timer(device, cases);
  for (const std::string& policy : policies) {
    const auto gemm = kernels::make_gemm(device, cache, policy);
    add_rows(policy == "auto" ? "pax-ocl" : policy, [&](const GemmShape& s) { return timer.seconds(*gemm, s, reps); });
  }
  if (const OpenBlas openblas; openblas.available()) {
    const std::size_t biggest = largest_operand(cases);
    std::vector<float> a(biggest, 0.5f), b(biggest, 0.25f), c_host(biggest);
    add_rows("openblas (host)", [&](const GemmShape& s) {
      return best_seconds(reps, [&] { openblas.sgemm(s, a.data(), b.data(), c_host.data()); });
    });
  }
  t.plot->reference = peak_of(t);
  t.plot->reference_label = fmt::format("measured peak {:.1f} GFLOP/s", peak_of(t));
  return t;
}

GemmTimer::GemmTimer(device::Device& device, const std::vector<GemmCase>& cases)
    : device_(device),
      a_(device.context(), largest_operand(cases), "bench.a"),
      b_(device.context(), largest_operand(cases), "bench.b"),
      c_(device.context(), largest_operand(cases), "bench.c") {}

double GemmTimer::seconds(kernels::Gemm& gemm, const GemmShape& s, int reps) {
  const kernels::GemmOperand a{a_.get(), 0, a_cols(s), s.m * s.k}, b{b_.get(), 0, b_cols(s), s.k * s.n},
      c{c_.get(), 0, s.n, s.m * s.n};
  return best_seconds(device_.queue(), reps, [&] { gemm.run(s, 1.0f, a, b, 0.0f, c); });
}

double GemmTimer::gflops(const GemmShape& s, double seconds) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
         static_cast<double>(s.batch) / seconds / 1e9;
}

double peak_of(const Table& gemm) {
  const auto column = std::find(gemm.columns.begin(), gemm.columns.end(), "gflops") - gemm.columns.begin();
  double best = 0;
  for (const auto& row : gemm.rows) {
    if (row[0].get<std::string>().starts_with("openblas")) continue;  // the host's, not the device's
    best = std::max(best, row[static_cast<std::size_t>(column)].get<double>());
  }
  return best;
}

}  // namespace paxocl::bench
