// The float64 reference GPT checked against itself and against hand-computed numbers: central
// finite differences of every per-op backward and of the full model's loss (every parameter
// tensor), golden cases for causal attention and cross-entropy, vocabulary padding, and the
// all-padding batch.
#include "tests/reference_gpt.h"
#include "tests/reference_llama.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numbers>
#include <random>
#include <set>
#include <string>

#include "common/errors.h"

namespace paxocl::testing {
namespace {

using Vec = std::vector<double>;

constexpr double kStep = 1e-5;         // central-difference step
constexpr double kMaxRelError = 1e-6;  // |fd - analytic| / max(|fd|, |analytic|, kRelFloor)
// Below this magnitude a gradient is compared absolutely: the central difference's rounding error
// is about 1e-16 * |loss| / kStep ~ 1e-11, which would dominate the relative error of a tiny value.
constexpr double kRelFloor = 1e-4;

// The finite-difference comparisons of one test: every test that compares declares one
// (`const FdTally tally;`), and when it ends reports its largest errors and fails unless it
// compared something and every relative error stayed below kMaxRelError. (Per test, because ctest
// runs each test in a process of its own: a run-wide maximum would never be seen.)
class FdTally {
 public:
  FdTally() { active_ = this; }
  ~FdTally() {
    active_ = nullptr;
    std::printf("  %ld finite-difference comparisons: max relative error (|grad| >= %.0e) %.3e; max absolute below %.3e\n",
                count_, kRelFloor, max_rel_, max_abs_small_);
    EXPECT_GT(count_, 0) << "no finite-difference comparison ran";
    EXPECT_LT(max_rel_, kMaxRelError);
  }
  FdTally(const FdTally&) = delete;
  FdTally& operator=(const FdTally&) = delete;

  static void record(double fd, double analytic, double rel) {
    if (active_ == nullptr) {
      ADD_FAILURE() << "a finite-difference comparison outside an FdTally";
      return;
    }
    ++active_->count_;
    if (std::max(std::abs(fd), std::abs(analytic)) >= kRelFloor) {
      active_->max_rel_ = std::max(active_->max_rel_, rel);
    } else {
      active_->max_abs_small_ = std::max(active_->max_abs_small_, std::abs(fd - analytic));
    }
  }

 private:
  static inline FdTally* active_ = nullptr;
  long count_ = 0;
  double max_rel_ = 0.0, max_abs_small_ = 0.0;
};

double rel_error(double fd, double analytic) {
  return std::abs(fd - analytic) / std::max({std::abs(fd), std::abs(analytic), kRelFloor});
}

// Compares one coordinate; returns its (floored) relative error.
double compare(double fd, double analytic, const std::string& what) {
  const double err = rel_error(fd, analytic);
  FdTally::record(fd, analytic, err);
  EXPECT_LT(err, kMaxRelError) << what << ": finite difference " << fd << ", analytic " << analytic;
  return err;
}

Vec random_vec(std::mt19937_64& rng, std::size_t n, double mean, double std) {
  std::normal_distribution<double> dist(mean, std);
  Vec v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central difference of f at x along coordinate i.
double central_difference(const std::function<double(const Vec&)>& f, Vec x, std::size_t i) {
  const double x0 = x[i];
  x[i] = x0 + kStep;
  const double up = f(x);
  x[i] = x0 - kStep;
  const double down = f(x);
  return (up - down) / (2.0 * kStep);
}

// Checks every coordinate of `analytic` = df/dx against central differences.
void expect_gradient(const std::function<double(const Vec&)>& f, const Vec& x, const Vec& analytic,
                     const std::string& what) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  for (std::size_t i = 0; i < x.size(); ++i) {
    compare(central_difference(f, x, i), analytic[i], what + "[" + std::to_string(i) + "]");
  }
}

// ---------------------------------------------------------------------------------------------
// Per-op finite differences. A vector-valued op is reduced to the scalar sum(r * out) with a
// fixed random r, so its backward is called with dout = r.

TEST(ReferenceOps, LinearMatchesFiniteDifferences) {
  const FdTally tally;
  std::mt19937_64 rng(1);
  const int N = 3, in = 4, out = 5;
  const Vec x = random_vec(rng, N * in, 0, 1), w = random_vec(rng, out * in, 0, 1), b = random_vec(rng, out, 0, 1);
  const Vec r = random_vec(rng, N * out, 0, 1);
  const LinearGrads g = linear_backward(x, w, r, N, in, out);
  expect_gradient([&](const Vec& v) { return dot(r, linear_forward(v, w, b, N, in, out)); }, x, g.dx, "linear dx");
  expect_gradient([&](const Vec& v) { return dot(r, linear_forward(x, v, b, N, in, out)); }, w, g.dw, "linear dW");
  expect_gradient([&](const Vec& v) { return dot(r, linear_forward(x, w, v, N, in, out)); }, b, g.db, "linear db");
  // No bias: the same product.
  const Vec y = linear_forward(x, w, {}, N, in, out), yb = linear_forward(x, w, b, N, in, out);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < out; ++o) EXPECT_NEAR(yb[n * out + o] - y[n * out + o], b[o], 1e-14);
}

TEST(ReferenceOps, LayerNormMatchesFiniteDifferences) {
  const FdTally tally;
  std::mt19937_64 rng(2);
  const int N = 3, C = 6;
  const Vec x = random_vec(rng, N * C, 0.5, 1.5), w = random_vec(rng, C, 1, 0.3), b = random_vec(rng, C, 0, 0.3);
  const Vec r = random_vec(rng, N * C, 0, 1);
  const LayerNormResult fwd = layernorm_forward(x, w, b, N, C);
  // Normalised rows: mean 0, biased variance var / (var + eps) before the affine part.
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0, ref_mean = 0;
    for (int c = 0; c < C; ++c) ref_mean += x[n * C + c] / C;
    for (int c = 0; c < C; ++c) {
      const double xhat = (fwd.out[n * C + c] - b[c]) / w[c];
      m += xhat / C;
      v += xhat * xhat / C;
    }
    EXPECT_NEAR(m, 0.0, 1e-12);
    EXPECT_NEAR(fwd.mean[n], ref_mean, 1e-12);
    EXPECT_NEAR(v, 1.0 - kLayerNormEps * fwd.rstd[n] * fwd.rstd[n], 1e-12);  // var / (var + eps)
  }
  const LayerNormGrads g = layernorm_backward(r, x, w, fwd.mean, fwd.rstd, N, C);
  expect_gradient([&](const Vec& v) { return dot(r, layernorm_forward(v, w, b, N, C).out); }, x, g.dx, "layernorm dx");
  expect_gradient([&](const Vec& v) { return dot(r, layernorm_forward(x, v, b, N, C).out); }, w, g.dw, "layernorm dw");
  expect_gradient([&](const Vec& v) { return dot(r, layernorm_forward(x, w, v, N, C).out); }, b, g.db, "layernorm db");
}

TEST(ReferenceOps, GeluMatchesFiniteDifferencesAndKnownValues) {
  const FdTally tally;
  std::mt19937_64 rng(3);
  Vec x;
  for (double v = -5.0; v <= 5.0; v += 0.37) x.push_back(v);
  x.push_back(0.0);
  const Vec r = random_vec(rng, x.size(), 0, 1);
  expect_gradient([&](const Vec& v) { return dot(r, gelu_forward(v)); }, x, gelu_backward(x, r), "gelu dx");
  // GELU(0) = 0, GELU(x) -> x for large x, -> 0 for very negative x; GELU(1) with the tanh form:
  // 0.5 * (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.5 * (1 + tanh(0.8335758...)) = 0.8411920...
  const Vec y = gelu_forward({0.0, 1.0, 10.0, -10.0});
  EXPECT_EQ(y[0], 0.0);
  EXPECT_NEAR(y[1], 0.5 * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * 1.044715)), 1e-15);
  EXPECT_NEAR(y[1], 0.841192, 1e-6);
  EXPECT_NEAR(y[2], 10.0, 1e-12);
  EXPECT_NEAR(y[3], 0.0, 1e-12);
}

TEST(ReferenceOps, RmsNormMatchesFiniteDifferences) {
  const FdTally tally;
  std::mt19937_64 rng(11);
  const int N = 3, C = 7;
  const Vec x = random_vec(rng, N * C, 0.5, 1.5), w = random_vec(rng, C, 1, 0.3), r = random_vec(rng, N * C, 0, 1);
  const RmsNormResult fwd = rmsnorm_forward(x, w, N, C);
  // Normalised rows: mean square ms / (ms + eps) before the scale.
  for (int n = 0; n < N; ++n) {
    double ms = 0, ms_hat = 0;
    for (int c = 0; c < C; ++c) {
      ms += x[n * C + c] * x[n * C + c] / C;
      const double xhat = fwd.out[n * C + c] / w[c];
      ms_hat += xhat * xhat / C;
    }
    EXPECT_NEAR(ms_hat, ms / (ms + kLayerNormEps), 1e-12);
    EXPECT_NEAR(fwd.rstd[n], 1.0 / std::sqrt(ms + kLayerNormEps), 1e-12);
  }
  const RmsNormGrads g = rmsnorm_backward(r, x, w, fwd.rstd, N, C);
  expect_gradient([&](const Vec& v) { return dot(r, rmsnorm_forward(v, w, N, C).out); }, x, g.dx, "rmsnorm dx");
  expect_gradient([&](const Vec& v) { return dot(r, rmsnorm_forward(x, v, N, C).out); }, w, g.dw, "rmsnorm dw");
}

TEST(ReferenceOps, SwigluMatchesFiniteDifferencesAndKnownValues) {
  const FdTally tally;
  std::mt19937_64 rng(12);
  const int N = 3, F = 5;
  const Vec gu = random_vec(rng, N * 2 * F, 0, 2), r = random_vec(rng, N * F, 0, 1);
  expect_gradient([&](const Vec& v) { return dot(r, swiglu_forward(v, N, F)); }, gu, swiglu_backward(gu, r, N, F),
                  "swiglu dgu");
  // silu(0) = 0, silu(1) = 1 / (1 + e^-1); silu(g) -> g for large g, -> 0 for very negative g.
  const Vec h = swiglu_forward({0.0, 1.0, 100.0, -100.0, 3.0, 3.0, 0.5, 0.5}, 1, 4);
  EXPECT_EQ(h[0], 0.0);
  EXPECT_NEAR(h[1], 3.0 / (1.0 + std::exp(-1.0)), 1e-15);
  EXPECT_NEAR(h[2], 50.0, 1e-12);
  EXPECT_NEAR(h[3], 0.0, 1e-12);
}

// Logsumexp of the scaled causal scores, computed directly for comparison with the forward's lse.
double naive_lse(const Vec& q, const Vec& k, int bh, int T, int hs, int t) {
  double sum = 0.0;
  for (int u = 0; u <= t; ++u) {
    double s = 0.0;
    for (int i = 0; i < hs; ++i) s += q[(bh * T + t) * hs + i] * k[(bh * T + u) * hs + i];
    sum += std::exp(s / std::sqrt(static_cast<double>(hs)));
  }
  return std::log(sum);
}

void check_attention(int T) {
  const FdTally tally;
  SCOPED_TRACE("T=" + std::to_string(T));
  std::mt19937_64 rng(4 + static_cast<unsigned>(T));
  const int B = 2, NH = 2, hs = 3, n = B * NH * T * hs;
  const Vec q = random_vec(rng, n, 0, 1), k = random_vec(rng, n, 0, 1), v = random_vec(rng, n, 0, 1);
  const Vec r = random_vec(rng, n, 0, 1);
  const AttentionResult fwd = attention_forward(q, k, v, B, NH, T, hs);
  ASSERT_EQ(fwd.lse.size(), static_cast<std::size_t>(B * NH * T));
  for (int bh = 0; bh < B * NH; ++bh)
    for (int t = 0; t < T; ++t) EXPECT_NEAR(fwd.lse[bh * T + t], naive_lse(q, k, bh, T, hs, t), 1e-12);
  // The first query sees only the first key: its output is v_0 exactly.
  for (int bh = 0; bh < B * NH; ++bh)
    for (int i = 0; i < hs; ++i) EXPECT_NEAR(fwd.out[bh * T * hs + i], v[bh * T * hs + i], 1e-15);
  const AttentionGrads g = attention_backward(q, k, v, fwd.out, r, B, NH, T, hs);
  auto f_out = [&](const Vec& qq, const Vec& kk, const Vec& vv) {
    return dot(r, attention_forward(qq, kk, vv, B, NH, T, hs).out);
  };
  expect_gradient([&](const Vec& x) { return f_out(x, k, v); }, q, g.dq, "attention dq");
  expect_gradient([&](const Vec& x) { return f_out(q, x, v); }, k, g.dk, "attention dk");
  expect_gradient([&](const Vec& x) { return f_out(q, k, x); }, v, g.dv, "attention dv");
}

TEST(ReferenceOps, AttentionMatchesFiniteDifferencesT1) { check_attention(1); }
TEST(ReferenceOps, AttentionMatchesFiniteDifferencesT7) { check_attention(7); }

TEST(ReferenceOps, AttentionIsCausal) {
  // Changing key/value t only changes outputs of queries >= t.
  std::mt19937_64 rng(5);
  const int B = 1, NH = 1, T = 6, hs = 2, n = B * NH * T * hs;
  const Vec q = random_vec(rng, n, 0, 1), k = random_vec(rng, n, 0, 1), v = random_vec(rng, n, 0, 1);
  Vec k2 = k, v2 = v;
  for (int i = 0; i < hs; ++i) {
    k2[3 * hs + i] += 1.0;
    v2[3 * hs + i] -= 2.0;
  }
  const Vec a = attention_forward(q, k, v, B, NH, T, hs).out, b = attention_forward(q, k2, v2, B, NH, T, hs).out;
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < hs; ++i) {
      if (t < 3) {
        EXPECT_EQ(a[t * hs + i], b[t * hs + i]);
      } else {
        EXPECT_NE(a[t * hs + i], b[t * hs + i]);
      }
    }
}

TEST(ReferenceOps, QkvAndHeadPermutationsAreInverse) {
  std::mt19937_64 rng(6);
  const int B = 2, T = 3, NH = 2, hs = 2, D = NH * hs;
  const Vec qkv = random_vec(rng, B * T * 3 * D, 0, 1);
  const QkvHeads h = split_qkv(qkv, B, T, NH, hs);
  EXPECT_EQ(merge_qkv(h.q, h.k, h.v, B, T, NH, hs), qkv);
  // Row (b=1, t=2), head 1, dim 0 of k sits at column D + 1*hs + 0 of the fused row.
  EXPECT_EQ(h.k[((1 * NH + 1) * T + 2) * hs + 0], qkv[(1 * T + 2) * 3 * D + D + 1 * hs + 0]);
  EXPECT_EQ(h.v[((0 * NH + 0) * T + 1) * hs + 1], qkv[(0 * T + 1) * 3 * D + 2 * D + 0 * hs + 1]);
  const Vec merged = random_vec(rng, B * T * D, 0, 1);
  EXPECT_EQ(merge_heads(split_heads(merged, B, T, NH, hs), B, T, NH, hs), merged);
}

TEST(ReferenceOps, CrossEntropyMatchesFiniteDifferences) {
  const FdTally tally;
  std::mt19937_64 rng(7);
  const int N = 4, Vp = 8, V = 5;
  const Vec logits = random_vec(rng, N * Vp, 0, 2);
  const std::vector<int> targets = {2, 0, -1, 4};  // row 2 has weight 0: its target is never read
  const Vec weights = {1.0, 0.5, 0.0, 2.0};
  const CrossEntropyResult ce = softmax_cross_entropy(logits, N, Vp, V, targets, weights);
  // Padding columns are included in the finite differences: the loss does not depend on them.
  expect_gradient([&](const Vec& x) { return softmax_cross_entropy(x, N, Vp, V, targets, weights).loss; }, logits,
                  ce.dlogits, "cross-entropy dlogits");
  for (int n = 0; n < N; ++n) {
    double psum = 0.0;
    for (int j = 0; j < Vp; ++j) {
      if (j >= V) {
        EXPECT_EQ(ce.probs[n * Vp + j], 0.0);
      }
      if (j >= V || n == 2) {
        EXPECT_EQ(ce.dlogits[n * Vp + j], 0.0);
      }
      psum += ce.probs[n * Vp + j];
    }
    EXPECT_NEAR(psum, 1.0, 1e-14);
  }
  EXPECT_EQ(ce.row_ce[2], 0.0);
  EXPECT_NEAR(ce.loss, (1.0 * ce.row_ce[0] + 0.5 * ce.row_ce[1] + 2.0 * ce.row_ce[3]) / 3.5, 1e-14);
}

TEST(ReferenceOps, EmbeddingMatchesFiniteDifferences) {
  const FdTally tally;
  std::mt19937_64 rng(8);
  const int B = 2, T = 3, Vp = 5, maxT = 4, C = 2;
  const std::vector<int> ids = {1, 3, 1, 4, 1, 0};  // row 1 used three times, row 2 never
  const Vec wte = random_vec(rng, Vp * C, 0, 1), wpe = random_vec(rng, maxT * C, 0, 1);
  const Vec r = random_vec(rng, B * T * C, 0, 1);
  const EmbeddingGrads g = embedding_backward(ids, B, T, r, Vp, maxT, C);
  expect_gradient([&](const Vec& x) { return dot(r, embedding_forward(ids, B, T, x, wpe, Vp, maxT, C)); }, wte,
                  g.dwte, "embedding dwte");
  expect_gradient([&](const Vec& x) { return dot(r, embedding_forward(ids, B, T, wte, x, Vp, maxT, C)); }, wpe,
                  g.dwpe, "embedding dwpe");
  for (int c = 0; c < C; ++c) {
    EXPECT_EQ(g.dwte[2 * C + c], 0.0);
    EXPECT_EQ(g.dwpe[3 * C + c], 0.0);  // position 3 >= T
  }
}

// ---------------------------------------------------------------------------------------------
// Golden cases, computed by hand.

TEST(ReferenceOps, AttentionGoldenT2Hs1) {
  // B = NH = 1, T = 2, hs = 1, so the scale 1/sqrt(hs) is 1.
  //   q = [2, 1], k = [0, ln 3], v = [2, 6].
  // Query 0 sees key 0 only: s00 = 2*0 = 0, p = [1], out0 = v0 = 2, lse0 = 0.
  // Query 1: s10 = 1*0 = 0, s11 = 1*ln3 = ln3; exp = [1, 3], sum 4:
  //   p = [1/4, 3/4], out1 = 2/4 + 3*6/4 = 0.5 + 4.5 = 5, lse1 = ln 4.
  const double ln3 = std::log(3.0);
  const Vec q = {2.0, 1.0}, k = {0.0, ln3}, v = {2.0, 6.0};
  const AttentionResult fwd = attention_forward(q, k, v, 1, 1, 2, 1);
  EXPECT_NEAR(fwd.out[0], 2.0, 1e-15);
  EXPECT_NEAR(fwd.out[1], 5.0, 1e-14);
  EXPECT_NEAR(fwd.lse[0], 0.0, 1e-15);
  EXPECT_NEAR(fwd.lse[1], std::log(4.0), 1e-15);
  // Backward with dout = [0, 1] (only out1 matters):
  //   dv_u = sum_t p[t][u] dout_t: dv0 = 1/4, dv1 = 3/4.
  //   dp_u = dout1 * v_u = [2, 6]; row term dout1 * out1 = 5; ds = p * (dp - 5) = [-3/4, 3/4].
  //   dq1 = sum_u ds_u k_u = 3/4 ln3; dq0 = 0 (dout0 = 0).
  //   dk_u = ds_u q1: dk0 = -3/4, dk1 = 3/4.
  const AttentionGrads g = attention_backward(q, k, v, fwd.out, {0.0, 1.0}, 1, 1, 2, 1);
  EXPECT_NEAR(g.dv[0], 0.25, 1e-15);
  EXPECT_NEAR(g.dv[1], 0.75, 1e-15);
  EXPECT_NEAR(g.dq[0], 0.0, 1e-15);
  EXPECT_NEAR(g.dq[1], 0.75 * ln3, 1e-14);
  EXPECT_NEAR(g.dk[0], -0.75, 1e-14);
  EXPECT_NEAR(g.dk[1], 0.75, 1e-14);
}

TEST(ReferenceOps, CrossEntropyGoldenThreeClasses) {
  // V = 3 classes, Vp = 4: column 3 is padding, set to 100 so it would dominate if it counted.
  // Row 0: logits [0, ln2, ln5], target 1, weight 1.
  //   exp = [1, 2, 5], sum 8: p = [1/8, 2/8, 5/8], ce0 = ln8 - ln2 = ln4.
  //   d ce0 / d logits = p - onehot(1) = [0.125, -0.75, 0.625].
  // Row 1: logits [1, 1, 1], target 0, weight 3: p = [1/3, 1/3, 1/3], ce1 = ln3.
  //   d ce1 / d logits = [-2/3, 1/3, 1/3].
  // loss = (1 * ln4 + 3 * ln3) / 4; dlogits row n = (w_n / 4) * (p - onehot):
  //   row 0 = [0.03125, -0.1875, 0.15625], row 1 = [-0.5, 0.25, 0.25]; padding column 0.
  const Vec logits = {0.0, std::log(2.0), std::log(5.0), 100.0, 1.0, 1.0, 1.0, 100.0};
  const CrossEntropyResult ce = softmax_cross_entropy(logits, 2, 4, 3, {1, 0}, {1.0, 3.0});
  EXPECT_NEAR(ce.loss, (std::log(4.0) + 3.0 * std::log(3.0)) / 4.0, 1e-15);
  EXPECT_NEAR(ce.row_ce[0], std::log(4.0), 1e-15);
  EXPECT_NEAR(ce.row_ce[1], std::log(3.0), 1e-15);
  const Vec expected = {0.03125, -0.1875, 0.15625, 0.0, -0.5, 0.25, 0.25, 0.0};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(ce.dlogits[i], expected[i], 1e-15) << i;
  EXPECT_NEAR(ce.probs[2], 0.625, 1e-15);
  EXPECT_EQ(ce.probs[3], 0.0);
}

TEST(ReferenceOps, CrossEntropyPaddingAndZeroWeights) {
  std::mt19937_64 rng(9);
  const int N = 3, V = 4;
  const Vec unpadded = random_vec(rng, N * V, 0, 1);
  Vec padded(N * 6);
  for (int n = 0; n < N; ++n) {
    for (int j = 0; j < V; ++j) padded[n * 6 + j] = unpadded[n * V + j];
    padded[n * 6 + 4] = 1e3;  // huge padding logits take no probability
    padded[n * 6 + 5] = -1e3;
  }
  const std::vector<int> targets = {0, 3, 2};
  const Vec weights = {1.0, 1.0, 0.5};
  const CrossEntropyResult a = softmax_cross_entropy(unpadded, N, V, V, targets, weights);
  const CrossEntropyResult b = softmax_cross_entropy(padded, N, 6, V, targets, weights);
  EXPECT_NEAR(a.loss, b.loss, 1e-15);
  for (int n = 0; n < N; ++n)
    for (int j = 0; j < 6; ++j) {
      if (j < V) {
        EXPECT_NEAR(b.dlogits[n * 6 + j], a.dlogits[n * V + j], 1e-15);
      } else {
        EXPECT_EQ(b.dlogits[n * 6 + j], 0.0);
      }
    }
  const CrossEntropyResult zero = softmax_cross_entropy(padded, N, 6, V, {-1, 7, 2}, {0.0, 0.0, 0.0});
  EXPECT_EQ(zero.loss, 0.0);
  for (double d : zero.dlogits) EXPECT_EQ(d, 0.0);
  EXPECT_THROW(softmax_cross_entropy(padded, N, 6, V, {0, 4, 2}, weights), std::invalid_argument);  // target >= V
  EXPECT_THROW(softmax_cross_entropy(padded, N, 6, V, targets, {1.0, -1.0, 1.0}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// The full model.

models::GptConfig tiny_config() {
  models::GptConfig c;
  c.num_layers = 2;
  c.model_dims = 8;
  c.num_heads = 2;
  c.dims_per_head = 4;
  c.hidden_dims = 12;
  c.max_seq_len = 8;
  c.vocab_size = 11;  // Vp = 128 by the default rounding
  c.init_std = 0.3f;
  return c;
}

// Every tensor random with std 0.3 (LayerNorm scales around 1), wte's padding rows included;
// the layout's alignment gaps stay 0. Rounded to float, the precision of the real parameters.
std::vector<float> random_params(const models::ParameterLayout& layout, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, 0.3);
  std::vector<float> p(layout.total(), 0.0f);
  for (const models::TensorSpec& t : layout.tensors()) {
    const double mean = t.init == models::TensorSpec::Init::kOne ? 1.0 : 0.0;
    for (std::size_t i = 0; i < t.count; ++i) p[t.offset + i] = static_cast<float>(mean + dist(rng));
  }
  return p;
}

ReferenceBatch tiny_batch() {
  ReferenceBatch b;
  b.B = 2;
  b.T = 5;
  b.ids = {3, 7, 3, 0, 10, 5, 3, 9, 1, 7};       // 3 and 7 repeat; 2, 4, 6, 8 never inputs
  b.targets = {7, 3, 0, 10, 2, 3, 9, 1, 7, 4};   // 2 and 4 are targets but never inputs
  b.weights = {1.0f, 0.5f, 2.0f, 0.0f, 1.0f, 1.5f, 1.0f, 0.25f, 1.0f, 0.75f};
  return b;
}

struct TinyModel {
  explicit TinyModel(models::GptConfig c = tiny_config()) : config(std::move(c)) {}
  models::GptConfig config;
  models::ParameterLayout layout{config, 16};  // gaps between tensors
  std::vector<float> params = random_params(layout, 42);
  ReferenceBatch batch = tiny_batch();
};

// Praxis's SSMTransformer block after an attention block: a hybrid (BLOCK_KINDS=attention,ssm).
// dt = 0.1 so the convolution, not just D u, carries weight at T = 5.
models::GptConfig tiny_hybrid_config() {
  models::GptConfig c = tiny_config();
  c.block_kinds = {models::BlockKind::kAttention, models::BlockKind::kSsm};
  c.ssm.state_size = 4;
  c.ssm.step_size = 0.1f;
  return c;
}

// Central differences of the reference loss at 12 coordinates of every tensor (and wte's and
// wpe's telling rows) against the reference's analytic gradient; every tensor must take part.
void expect_every_tensor_matches_finite_differences(const TinyModel& m, const ReferenceResult& ref) {
  const Vec params(m.params.begin(), m.params.end());
  auto loss_at = [&](const Vec& p) { return reference_loss(m.config, m.layout, p, m.batch); };
  std::mt19937_64 rng(123);
  const int C = m.config.model_dims;
  for (const models::TensorSpec& t : m.layout.tensors()) {
    std::set<std::size_t> coords;
    std::uniform_int_distribution<std::size_t> any(0, t.count - 1);
    while (coords.size() < std::min<std::size_t>(12, t.count)) coords.insert(any(rng));
    if (t.name == "wte") {
      // Row 3: an input (three times) and an LM-head row; row 2: LM head and target, never an
      // input; row 10: input, target, last real row; rows 11 and 127: padding.
      for (int row : {3, 2, 10, 11, 127})
        for (int c : {0, C - 1}) coords.insert(static_cast<std::size_t>(row * C + c));
    }
    if (t.name == "wpe") {
      for (int row : {0, 4, 5, 7}) coords.insert(static_cast<std::size_t>(row * C + 1));  // 5, 7: >= T, unused
    }
    double tensor_max = 0.0, max_abs_grad = 0.0;
    for (std::size_t i : coords) {
      const std::size_t flat = t.offset + i;
      const double fd = central_difference(loss_at, params, flat);
      const double an = ref.grads[flat];
      tensor_max = std::max(tensor_max, compare(fd, an, t.name + "[" + std::to_string(i) + "]"));
      max_abs_grad = std::max(max_abs_grad, std::abs(an));
    }
    std::printf("  %-18s %zu coordinates, max |grad| %.3e, max (floored) rel error %.3e\n", t.name.c_str(), coords.size(),
                max_abs_grad, tensor_max);
    // Every tensor takes part in the loss: its sampled gradients are not all (near) zero.
    EXPECT_GT(max_abs_grad, 1e-4) << t.name;
  }
}

TEST(ReferenceGpt, TinyConfigIsAsIntended) {
  TinyModel m;
  EXPECT_EQ(m.config.padded_vocab(), 128);
  EXPECT_EQ(m.layout.at("wte").shape, (std::vector<std::int64_t>{128, 8}));
  EXPECT_GT(m.layout.total(), static_cast<std::size_t>(m.layout.parameter_count()));  // there are gaps
}

TEST(ReferenceGpt, GradientsMatchFiniteDifferencesForEveryTensor) {
  const FdTally tally;
  TinyModel m;
  const ReferenceResult ref = reference_forward_backward(m.config, m.layout, m.params, m.batch);
  const Vec params(m.params.begin(), m.params.end());
  ASSERT_EQ(ref.grads.size(), m.layout.total());
  EXPECT_EQ(reference_loss(m.config, m.layout, params, m.batch), ref.loss);  // one computation
  EXPECT_TRUE(std::isfinite(ref.loss));
  EXPECT_GT(ref.loss, 0.0);

  expect_every_tensor_matches_finite_differences(m, ref);
  const int C = m.config.model_dims;
  // Gradients that must be exactly 0: wte's padding rows, wpe rows >= T, and the layout's gaps.
  const models::TensorSpec& wte = m.layout.at("wte");
  for (std::size_t i = static_cast<std::size_t>(m.config.vocab_size * C); i < wte.count; ++i)
    EXPECT_EQ(ref.grads[wte.offset + i], 0.0) << "wte padding row " << i / C;
  const models::TensorSpec& wpe = m.layout.at("wpe");
  for (std::size_t i = static_cast<std::size_t>(m.batch.T * C); i < wpe.count; ++i)
    EXPECT_EQ(ref.grads[wpe.offset + i], 0.0) << "wpe row " << i / C;
  std::vector<bool> inside(m.layout.total(), false);
  for (const models::TensorSpec& t : m.layout.tensors())
    for (std::size_t i = 0; i < t.count; ++i) inside[t.offset + i] = true;
  for (std::size_t i = 0; i < inside.size(); ++i) {
    if (!inside[i]) {
      EXPECT_EQ(ref.grads[i], 0.0) << "gap at " << i;
    }
  }
  // A bias on the keys adds q_t · b to every score of row t, which the softmax cancels: the k
  // part [D, 2D) of each attn.qkv.b has zero gradient (up to rounding), the q and v parts do not.
  const int D = m.config.attention_dims();
  for (int l = 0; l < m.config.num_layers; ++l) {
    const models::TensorSpec& b = m.layout.at(models::ParameterLayout::layer_name(l, "attn.qkv.b"));
    double q_part = 0.0, v_part = 0.0;
    for (int i = 0; i < D; ++i) {
      EXPECT_NEAR(ref.grads[b.offset + static_cast<std::size_t>(D + i)], 0.0, 1e-15) << b.name << "[" << D + i << "]";
      q_part = std::max(q_part, std::abs(ref.grads[b.offset + static_cast<std::size_t>(i)]));
      v_part = std::max(v_part, std::abs(ref.grads[b.offset + static_cast<std::size_t>(2 * D + i)]));
    }
    EXPECT_GT(q_part, 1e-4) << b.name;
    EXPECT_GT(v_part, 1e-4) << b.name;
  }
}

TEST(ReferenceGpt, HybridGradientsMatchFiniteDifferencesForEveryTensor) {
  const FdTally tally;
  const TinyModel m(tiny_hybrid_config());
  ASSERT_TRUE(m.layout.tensors().end() !=
              std::find_if(m.layout.tensors().begin(), m.layout.tensors().end(),
                           [](const models::TensorSpec& t) { return t.name == "h1.ssm.c_re"; }));
  EXPECT_THROW(m.layout.at("h1.attn.qkv.w"), std::out_of_range);  // the SSM block has no attention
  const ReferenceResult ref = reference_forward_backward(m.config, m.layout, m.params, m.batch);
  EXPECT_EQ(reference_loss(m.config, m.layout, Vec(m.params.begin(), m.params.end()), m.batch), ref.loss);
  expect_every_tensor_matches_finite_differences(m, ref);
}

TEST(ReferenceGpt, PaddingColumnsNeverGetProbability) {
  TinyModel m;
  const int V = m.config.vocab_size, Vp = m.config.padded_vocab(), C = m.config.model_dims;
  const models::TensorSpec& wte = m.layout.at("wte");
  // Zero padding rows: padding logits are exactly 0. Huge padding rows: huge padding logits, yet
  // the loss and every gradient are unchanged.
  std::vector<float> zero_pad = m.params, huge_pad = m.params;
  for (std::size_t i = static_cast<std::size_t>(V * C); i < wte.count; ++i) {
    zero_pad[wte.offset + i] = 0.0f;
    huge_pad[wte.offset + i] = 50.0f;
  }
  const ReferenceResult a = reference_forward_backward(m.config, m.layout, zero_pad, m.batch);
  const ReferenceResult b = reference_forward_backward(m.config, m.layout, huge_pad, m.batch);
  const ReferenceResult c = reference_forward_backward(m.config, m.layout, m.params, m.batch);
  ASSERT_EQ(a.logits.size(), static_cast<std::size_t>(m.batch.B * m.batch.T * Vp));
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.loss, c.loss);
  EXPECT_EQ(a.grads, b.grads);
  EXPECT_EQ(a.grads, c.grads);
  double max_pad_logit = 0.0;
  for (int n = 0; n < m.batch.B * m.batch.T; ++n)
    for (int j = V; j < Vp; ++j) {
      EXPECT_EQ(a.logits[n * Vp + j], 0.0);
      max_pad_logit = std::max(max_pad_logit, std::abs(b.logits[n * Vp + j]));
    }
  EXPECT_GT(max_pad_logit, 10.0);  // the padding logits are computed, then ignored
  // The loss equals the cross-entropy of the first V columns alone.
  Vec real(static_cast<std::size_t>(m.batch.B * m.batch.T * V));
  for (int n = 0; n < m.batch.B * m.batch.T; ++n)
    for (int j = 0; j < V; ++j) real[n * V + j] = b.logits[n * Vp + j];
  const Vec w(m.batch.weights.begin(), m.batch.weights.end());
  EXPECT_NEAR(softmax_cross_entropy(real, m.batch.B * m.batch.T, V, V, m.batch.targets, w).loss, b.loss, 1e-14);
}

TEST(ReferenceGpt, AllZeroWeightsGiveZeroLossAndGradients) {
  TinyModel m;
  m.batch.weights.assign(m.batch.weights.size(), 0.0f);
  m.batch.targets.assign(m.batch.targets.size(), -1);  // never read
  const ReferenceResult r = reference_forward_backward(m.config, m.layout, m.params, m.batch);
  EXPECT_EQ(r.loss, 0.0);
  ASSERT_EQ(r.grads.size(), m.layout.total());
  for (double g : r.grads) EXPECT_EQ(g, 0.0);
  EXPECT_EQ(reference_loss(m.config, m.layout, Vec(m.params.begin(), m.params.end()), m.batch), 0.0);
}

TEST(ReferenceGpt, WeightsAreRelative) {
  // Scaling every weight leaves the weighted mean unchanged; a weight-0 position's target and
  // logits do not matter.
  TinyModel m;
  const ReferenceResult a = reference_forward_backward(m.config, m.layout, m.params, m.batch);
  ReferenceBatch scaled = m.batch;
  for (float& w : scaled.weights) w *= 4.0f;
  scaled.targets[3] = 6;  // weight 0
  const ReferenceResult b = reference_forward_backward(m.config, m.layout, m.params, scaled);
  EXPECT_NEAR(a.loss, b.loss, 1e-14);
  for (std::size_t i = 0; i < a.grads.size(); ++i) EXPECT_NEAR(a.grads[i], b.grads[i], 1e-14);
}

TEST(ReferenceGpt, RejectsBadBatches) {
  TinyModel m;
  ReferenceBatch long_batch;
  long_batch.B = 1;
  long_batch.T = m.config.max_seq_len + 1;
  long_batch.ids.assign(static_cast<std::size_t>(long_batch.T), 0);
  long_batch.targets = long_batch.ids;
  long_batch.weights.assign(long_batch.ids.size(), 1.0f);
  EXPECT_THROW(reference_forward_backward(m.config, m.layout, m.params, long_batch), std::invalid_argument);
  ReferenceBatch bad_id = m.batch;
  bad_id.ids[0] = m.config.vocab_size;
  EXPECT_THROW(reference_forward_backward(m.config, m.layout, m.params, bad_id), std::invalid_argument);
  ReferenceBatch bad_size = m.batch;
  bad_size.weights.pop_back();
  EXPECT_THROW(reference_forward_backward(m.config, m.layout, m.params, bad_size), std::invalid_argument);
  std::vector<float> short_params(m.params.begin(), m.params.end() - 1);
  EXPECT_THROW(reference_forward_backward(m.config, m.layout, short_params, m.batch), std::invalid_argument);
}

}  // namespace
}  // namespace paxocl::testing

// ---------------------------------------------------------------------------------------------
// The LLaMA reference (reference_llama.h): its new ops, then the full model, with the same finite
// differences.

namespace paxocl::testing {
namespace {

// RoPE as the complex rotation z_i e^{i t theta_i} of z_i = x_i + i x_{i+hs/2}: norms are kept, the
// inverse undoes it, and the score of a rotated query and key depends only on their distance.
TEST(ReferenceLlamaOps, RopeIsARelativeRotation) {
  std::mt19937_64 rng(4);
  const int hs = 8, T = 6;
  const double base = 10000.0;
  const Vec q = random_vec(rng, hs, 0, 1), k = random_vec(rng, hs, 0, 1);
  Vec qs, ks;  // the same q and k at every position
  for (int t = 0; t < T; ++t) {
    qs.insert(qs.end(), q.begin(), q.end());
    ks.insert(ks.end(), k.begin(), k.end());
  }
  const Vec rq = rope_rotate(qs, 1, 1, T, hs, base), rk = rope_rotate(ks, 1, 1, T, hs, base);
  auto at = [&](const Vec& v, int t) { return Vec(v.begin() + t * hs, v.begin() + (t + 1) * hs); };
  EXPECT_NEAR(dot(at(rq, 5), at(rq, 5)), dot(q, q), 1e-12);
  EXPECT_NEAR(dot(at(rq, 4), at(rk, 1)), dot(at(rq, 3), at(rk, 0)), 1e-12);  // distance 3
  EXPECT_NEAR(dot(at(rq, 5), at(rk, 3)), dot(at(rq, 2), at(rk, 0)), 1e-12);  // distance 2
  EXPECT_GT(std::abs(dot(at(rq, 4), at(rk, 1)) - dot(at(rq, 4), at(rk, 2))), 1e-6);
  const Vec back = rope_rotate(rq, 1, 1, T, hs, base, 0, true);
  for (std::size_t i = 0; i < qs.size(); ++i) EXPECT_NEAR(back[i], qs[i], 1e-13);
  // Position 1, pair 0 rotates by exactly 1 radian; pair i by base^(-2i/hs); an offset shifts positions.
  const Vec one = rope_rotate(Vec(qs.begin(), qs.begin() + 2 * hs), 1, 1, 2, hs, base);
  EXPECT_NEAR(one[hs + 0], q[0] * std::cos(1.0) - q[4] * std::sin(1.0), 1e-15);
  const double a1 = std::pow(base, -2.0 / hs);
  EXPECT_NEAR(one[hs + 5], q[5] * std::cos(a1) + q[1] * std::sin(a1), 1e-15);
  const Vec shifted = rope_rotate(Vec(qs.begin(), qs.begin() + hs), 1, 1, 1, hs, base, 5);
  for (int i = 0; i < hs; ++i) EXPECT_NEAR(shifted[i], rq[5 * hs + i], 1e-13);
}

TEST(ReferenceLlamaOps, GroupedHeadsRepeatAndSumBack) {
  std::mt19937_64 rng(5);
  const int B = 2, T = 3, H = 6, Hkv = 2, hs = 2;
  const Vec qkv = random_vec(rng, B * T * (H + 2 * Hkv) * hs, 0, 1);
  const QkvHeads heads = split_qkv_grouped(qkv, B, T, H, Hkv, hs);
  EXPECT_EQ(merge_qkv_grouped(heads.q, heads.k, heads.v, B, T, H, Hkv, hs), qkv);
  // Query head 4 of sequence 1 reads kv head 4 / 3 = 1: row (1, t), columns H*hs + 1*hs ...
  const Vec rep = repeat_kv(heads.k, B, Hkv, H, T, hs);
  EXPECT_EQ(rep[((1 * H + 4) * T + 2) * hs + 1], qkv[(1 * T + 2) * (H + 2 * Hkv) * hs + H * hs + 1 * hs + 1]);
  // sum_kv_groups is repeat_kv's adjoint: <repeat(k), d> = <k, sum(d)>.
  const Vec d = random_vec(rng, rep.size(), 0, 1);
  EXPECT_NEAR(dot(rep, d), dot(heads.k, sum_kv_groups(d, B, Hkv, H, T, hs)), 1e-12);
  // With Hkv = H the grouped split is the GPT's.
  const Vec mha = random_vec(rng, B * T * 3 * H * hs, 0, 1);
  const QkvHeads g = split_qkv_grouped(mha, B, T, H, H, hs), s = split_qkv(mha, B, T, H, hs);
  EXPECT_EQ(g.q, s.q);
  EXPECT_EQ(g.k, s.k);
  EXPECT_EQ(g.v, s.v);
}

models::LlamaConfig tiny_llama_config() {
  models::LlamaConfig c;
  c.num_layers = 2;
  c.model_dims = 8;
  c.hidden_dims = 12;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.dims_per_head = 4;  // attention width 16 != C: the projections are not square
  c.max_seq_len = 8;
  c.vocab_size = 11;
  c.init_std = 0.3f;
  c.rope_base = 100.0f;  // angles that turn visibly within 5 positions
  return c;
}

TEST(ReferenceLlama, GradientsMatchFiniteDifferencesForEveryTensor) {
  const FdTally tally;
  const models::LlamaConfig config = tiny_llama_config();
  const models::ParameterLayout layout(config, 16);
  const std::vector<float> params = random_params(layout, 43);
  const ReferenceBatch batch = tiny_batch();
  const ReferenceResult ref = reference_forward_backward(config, layout, params, batch);
  const Vec p(params.begin(), params.end());
  EXPECT_EQ(reference_loss(config, layout, p, batch), ref.loss);
  EXPECT_TRUE(std::isfinite(ref.loss));
  auto loss_at = [&](const Vec& v) { return reference_loss(config, layout, v, batch); };
  std::mt19937_64 rng(321);
  for (const models::TensorSpec& t : layout.tensors()) {
    std::set<std::size_t> coords;
    std::uniform_int_distribution<std::size_t> any(0, t.count - 1);
    while (coords.size() < std::min<std::size_t>(16, t.count)) coords.insert(any(rng));
    if (t.name == "embed" || t.name == "lm_head") {
      for (int row : {3, 2, 10}) coords.insert(static_cast<std::size_t>(row * config.model_dims + 1));
    }
    double max_abs_grad = 0.0;
    for (std::size_t i : coords) {
      compare(central_difference(loss_at, p, t.offset + i), ref.grads[t.offset + i], t.name + "[" + std::to_string(i) + "]");
      max_abs_grad = std::max(max_abs_grad, std::abs(ref.grads[t.offset + i]));
    }
    EXPECT_GT(max_abs_grad, 1e-4) << t.name << ": every tensor takes part in the loss";
  }
  // Untied: the embedding's padding rows and the never-input rows get nothing; the head's
  // padding rows get nothing either (their logits are masked).
  const int C = config.model_dims;
  const models::TensorSpec& embed = layout.at("embed");
  for (int c = 0; c < C; ++c) {
    EXPECT_EQ(ref.grads[embed.offset + static_cast<std::size_t>(2 * C + c)], 0.0) << "embed row 2 is never an input";
    EXPECT_EQ(ref.grads[layout.at("lm_head").offset + static_cast<std::size_t>(20 * C + c)], 0.0) << "lm_head padding";
  }
}

TEST(ReferenceLlama, RejectsBadConfigs) {
  models::LlamaConfig c = tiny_llama_config();
  c.num_kv_heads = 3;
  try {
    c.validate();
    FAIL() << "NUM_KV_HEADS=3 does not divide NUM_HEADS=4";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("NUM_KV_HEADS=3 must divide NUM_HEADS=4"), std::string::npos) << e.what();
  }
  c = tiny_llama_config();
  c.dims_per_head = 5;
  EXPECT_THROW(c.validate(), ConfigError);
}

}  // namespace
}  // namespace paxocl::testing
