// Every GPT kernel on an OpenCL device against the float64 reference (tests/reference_gpt.h) on
// random inputs, with awkward sizes: dimensions that are not multiples of 16, T = 1, a vocabulary
// that is not a power of two, repeated tokens, zero weights. The activation kernels run for every
// activation dtype (float32, bfloat16, float16; see kernels_cl/nn_kernels.h), the GEMM and
// optimizer tests for float32 only.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>

#include "kernels_cl/cpu_flash_attention.h"
#include "kernels_cl/flash_attention.h"
#include "models/layers/causal_attention.h"
#include "models/layers/embedding.h"
#include "models/layers/linear.h"
#include "models/layers/rms_norm.h"
#include "models/layers/rotary_embedding.h"
#include "models/layers/swiglu_mlp.h"
#include "tests/device_fixture.h"
#include "tests/reference_gpt.h"

namespace paxocl::testing {
namespace {

using device::DType;
using kernels::GemmShape;
using kernels::Transpose;

class KernelTest : public DeviceTest {};


// C = alpha op(A) op(B) + beta C in double, row-major with leading dimensions and offsets.
void reference_gemm(const GemmShape& s, double alpha, const std::vector<double>& A, std::size_t a_off, std::size_t lda,
                    const std::vector<double>& B, std::size_t b_off, std::size_t ldb, double beta,
                    std::vector<double>& C, std::size_t c_off, std::size_t ldc) {
  for (std::size_t i = 0; i < s.m; ++i)
    for (std::size_t j = 0; j < s.n; ++j) {
      double acc = 0;
      for (std::size_t p = 0; p < s.k; ++p) {
        const double a = s.a == Transpose::kNo ? A[a_off + i * lda + p] : A[a_off + p * lda + i];
        const double b = s.b == Transpose::kNo ? B[b_off + p * ldb + j] : B[b_off + j * ldb + p];
        acc += a * b;
      }
      C[c_off + i * ldc + j] = alpha * acc + beta * C[c_off + i * ldc + j];
    }
}

TEST_F(KernelTest, GemmAllTransposesOffsetsAndLeadingDimensions) {
  const std::size_t m = 37, n = 19, k = 13, pad = 3, off = 5;
  for (Transpose ta : {Transpose::kNo, Transpose::kYes})
    for (Transpose tb : {Transpose::kNo, Transpose::kYes}) {
      const GemmShape s{ta, tb, m, n, k};
      const std::size_t lda = (ta == Transpose::kNo ? k : m) + pad, ldb = (tb == Transpose::kNo ? n : k) + pad,
                        ldc = n + pad;
      const auto A = random(off + lda * std::max(m, k), 1), B = random(off + ldb * std::max(n, k), 2);
      auto C = random(off + ldc * m, 3);
      auto a = upload(A), b = upload(B), c = upload(C);
      gemm_->run(s, 0.5f, {a.get(), off, lda}, {b.get(), off, ldb}, 2.0f, {c.get(), off, ldc});
      reference_gemm(s, 0.5, A, off, lda, B, off, ldb, 2.0, C, off, ldc);
      expect_close(download(c, C.size()), C, Tol{1e-5, 1e-5}, "gemm");
    }
}

TEST_F(KernelTest, GemmStridedBatched) {
  const std::size_t m = 7, n = 11, k = 5, batch = 3;
  const GemmShape s{Transpose::kNo, Transpose::kYes, m, n, k, batch};
  const std::size_t sa = m * k + 2, sb = n * k + 1, sc = m * n + 4;
  const auto A = random(sa * batch, 4), B = random(sb * batch, 5);
  std::vector<double> C(sc * batch, 0.0);
  auto a = upload(A), b = upload(B), c = upload(C);
  gemm_->run(s, 1.0f, {a.get(), 0, k, sa}, {b.get(), 0, k, sb}, 0.0f, {c.get(), 0, n, sc});
  for (std::size_t i = 0; i < batch; ++i) {
    reference_gemm(GemmShape{Transpose::kNo, Transpose::kYes, m, n, k}, 1.0, A, i * sa, k, B, i * sb, k, 0.0, C,
                   i * sc, n);
  }
  expect_close(download(c, C.size()), C, Tol{1e-5, 1e-5}, "strided batched gemm");
}

// The activation kernels, built for the dtype of the parameter.
class ActKernelTest : public DeviceTest, public ::testing::WithParamInterface<DType> {
 public:
  DType act_dtype() const override { return GetParam(); }
  // `values` rounded to the dtype: what an activation buffer (or the step's weight copy) holds.
  std::vector<double> in(std::vector<double> values) const { return rounded(GetParam(), std::move(values)); }
  device::TypedBuffer act(const std::vector<double>& values) { return upload(GetParam(), values); }
  device::TypedBuffer act_zeros(std::size_t n) { return act(std::vector<double>(n, 0.0)); }
  Tol stored(Tol f32) const { return testing::stored(GetParam(), f32); }
  // One shape (N rows of C) of each norm's forward and backward, plain and residual, and of the
  // bias add and gradient, against the float64 references.
  void check_layernorm(int N, int C);
  void check_rmsnorm(int N, int C);
  void check_bias(int N, int C);
  // One softmax cross-entropy shape (N rows, V real columns of Vp) against the float64 reference.
  void check_cross_entropy(int N, int V, int Vp);
};

void ActKernelTest::check_layernorm(int N, int C) {
  for (bool residual : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C << (residual ? " residual" : ""));
    const auto x = in(random(N * C, 9, 2.0)), delta = in(random(N * C, 29)), w = in(random(C, 10)),
               b = in(random(C, 11)), dout = in(random(N * C, 12)), dresid = in(random(N * C, 30));
    auto xb = act(x), deltab = act(delta), wb = act(w), bb = act(b), out = act_zeros(N * C), sum = act_zeros(N * C);
    auto mean = zeros(N), rstd = zeros(N);
    // The LN's input: x, or the sum as the kernel stores it and normalises it (float32(x + delta)
    // rounded to the dtype once), which must come out bit for bit.
    std::vector<double> v = x;
    if (residual) {
      for (int i = 0; i < N * C; ++i) v[i] = x[i] + delta[i];
      v = in(v);
      kernels_->layernorm.forward_residual(out, mean, rstd, sum, xb, deltab, wb, bb, N, C, 1e-5f);
      expect_close(download(sum, N * C), v, Tol{0, 0}, "ln residual sum");
    } else {
      kernels_->layernorm.forward(out, mean, rstd, xb, wb, bb, N, C, 1e-5f);
    }
    const auto ref = layernorm_forward(v, w, b, N, C);
    expect_close(download(out, N * C), ref.out, stored({1e-5, 1e-4}), "ln out");
    expect_close(download(mean, N), ref.mean, Tol{1e-6, 1e-5}, "ln mean");
    expect_close(download(rstd, N), ref.rstd, Tol{1e-6, 1e-4}, "ln rstd");
    auto dx = act_zeros(N * C);
    auto dw = upload(std::vector<double>(C, 1.0)), db = upload(std::vector<double>(C, 1.0));
    auto dout_b = act(dout), dresid_b = act(dresid);
    kernels_->layernorm.backward(dx, dw, db, dout_b, residual ? sum : xb, wb, mean, rstd,
                                 residual ? &dresid_b : nullptr, N, C);
    const auto g = layernorm_backward(dout, v, w, ref.mean, ref.rstd, N, C);
    std::vector<double> want_dx(g.dx), want_dw(g.dw), want_db(g.db);
    if (residual) {
      for (int i = 0; i < N * C; ++i) want_dx[i] += dresid[i];
    }
    for (double& e : want_dw) e += 1.0;
    for (double& e : want_db) e += 1.0;
    expect_close(download(dx, N * C), want_dx, stored({1e-4, 1e-3}), "ln dx");
    expect_close(download(dw, C), want_dw, Tol{1e-4, 1e-4}, "ln dw");
    expect_close(download(db, C), want_db, Tol{1e-4, 1e-4}, "ln db");
  }
}
void ActKernelTest::check_rmsnorm(int N, int C) {
  for (bool residual : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C << (residual ? " residual" : ""));
    const auto x = in(random(N * C, 41, 2.0)), delta = in(random(N * C, 42)), w = in(random(C, 43)),
               dout = in(random(N * C, 44)), dresid = in(random(N * C, 45));
    auto xb = act(x), deltab = act(delta), wb = act(w), out = act_zeros(N * C), sum = act_zeros(N * C);
    auto rstd = zeros(N);
    // The norm's input: x, or the sum as the kernel stores it (float32(x + delta) rounded once).
    std::vector<double> v = x;
    if (residual) {
      for (int i = 0; i < N * C; ++i) v[i] = x[i] + delta[i];
      v = in(v);
      kernels_->rmsnorm.forward_residual(out, rstd, sum, xb, deltab, wb, N, C, 1e-5f);
      expect_close(download(sum, N * C), v, Tol{0, 0}, "rmsnorm residual sum");
    } else {
      kernels_->rmsnorm.forward(out, rstd, xb, wb, N, C, 1e-5f);
    }
    const auto ref = rmsnorm_forward(v, w, N, C);
    expect_close(download(out, N * C), ref.out, stored({1e-5, 1e-4}), "rmsnorm out");
    expect_close(download(rstd, N), ref.rstd, Tol{1e-6, 1e-5}, "rmsnorm rstd");
    const auto g = rmsnorm_backward(dout, v, w, ref.rstd, N, C);
    std::vector<double> want_dx(g.dx), want_dw(g.dw);
    if (residual) {
      for (int i = 0; i < N * C; ++i) want_dx[i] += dresid[i];
    }
    for (double& e : want_dw) e = 1.0 + 2.0 * e;
    auto dx = act_zeros(N * C);
    auto dw = upload(std::vector<double>(C, 1.0));
    auto dout_b = act(dout), dresid_b = act(dresid);
    for (int call = 0; call < 2; ++call) {
      kernels_->rmsnorm.backward(dx, dw, dout_b, residual ? sum : xb, wb, rstd, residual ? &dresid_b : nullptr, N, C);
      expect_close(download(dx, N * C), want_dx, stored({1e-4, 1e-3}), "rmsnorm dx");
    }
    expect_close(download(dw, C), want_dw, Tol{1e-4, 1e-4}, "rmsnorm dscale, accumulated twice");
  }
}
void ActKernelTest::check_bias(int N, int C) {
  const auto x = in(random(N * C, 13)), bias = in(random(C, 14));
  auto out = act(x), bb = act(bias);
  kernels_->bias.add(out, bb, N, C);
  std::vector<double> want(x);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) want[n * C + c] += bias[c];
  const auto got = download(out, N * C);
  expect_close(got, want, stored({1e-6, 1e-6}), "bias add");
  // The gradient of what `out` holds now (the stored sums), into a float32 accumulator.
  auto dbias = upload(std::vector<double>(C, 0.5));
  kernels_->bias.grad(dbias, out, N, C);
  std::vector<double> colsum(C, 0.5);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) colsum[c] += got[n * C + c];
  expect_close(download(dbias, C), colsum, Tol{1e-5, 1e-5}, "bias grad");
}


TEST_P(ActKernelTest, EmbeddingForwardAndDeterministicBackward) {
  // C = 19: the GPU twin element by element; C = 16: its vector loads (rows of whole fours).
  for (const int C : {19, 16}) {
    SCOPED_TRACE(::testing::Message() << "C " << C);
    const int B = 3, T = 5, Vp = 41, maxT = 7;
    const std::vector<int> ids = {4, 4, 0, 40, 4, 7, 4, 0, 0, 13, 40, 40, 1, 4, 2};  // repeats, last row
    const auto wte = in(random(Vp * C, 6)), wpe = in(random(maxT * C, 7)), dout = in(random(B * T * C, 8));
    auto wte_b = act(wte), wpe_b = act(wpe), out = act_zeros(B * T * C);
    auto ids_b = upload_ints(ids);
    kernels_->embedding.forward(out, ids_b, wte_b, wpe_b, B, T, C);
    expect_close(download(out, B * T * C), embedding_forward(ids, B, T, wte, wpe, Vp, maxT, C), stored({0, 1e-6}),
                 "embedding");
    // Decoding continues at position 2: rows read wpe[2 + t], as the reference with wpe's first 2 rows dropped.
    kernels_->embedding.forward(out, ids_b, wte_b, wpe_b, B, T, C, 2);
    const std::vector<double> wpe_from_2(wpe.begin() + 2 * C, wpe.end());
    expect_close(download(out, B * T * C), embedding_forward(ids, B, T, wte, wpe_from_2, Vp, maxT - 2, C),
                 stored({0, 1e-6}), "embedding from position 2");

    // The CSR the model builds: positions grouped by token, ascending.
    std::vector<int> positions(B * T);
    std::iota(positions.begin(), positions.end(), 0);
    std::stable_sort(positions.begin(), positions.end(), [&](int a, int b) { return ids[a] < ids[b]; });
    std::vector<int> tokens, starts;
    for (int p = 0; p < B * T; ++p) {
      if (p == 0 || ids[positions[p]] != ids[positions[p - 1]]) {
        tokens.push_back(ids[positions[p]]);
        starts.push_back(p);
      }
    }
    starts.push_back(B * T);
    const auto ref = embedding_backward(ids, B, T, dout, Vp, maxT, C);
    std::vector<double> first;
    for (int run = 0; run < 2; ++run) {
      auto dwte = upload(std::vector<double>(Vp * C, 0.25)), dwpe = upload(std::vector<double>(T * C, 0.25));
      auto dout_b = act(dout);
      auto tok = upload_ints(tokens), st = upload_ints(starts), pos = upload_ints(positions);
      kernels_->embedding.backward_wte(dwte, dout_b, tok, st, pos, tokens.size(), C);
      kernels_->embedding.backward_wpe(dwpe, dout_b, B, T, C);
      std::vector<double> want_wte(ref.dwte), want_wpe(ref.dwpe.begin(), ref.dwpe.begin() + T * C);
      for (double& v : want_wte) v += 0.25;  // accumulates into the existing (float32) gradient
      for (double& v : want_wpe) v += 0.25;
      const auto got = download(dwte, Vp * C);
      expect_close(got, want_wte, Tol{1e-5, 1e-5}, "dwte");
      expect_close(download(dwpe, T * C), want_wpe, Tol{1e-5, 1e-5}, "dwpe");
      if (run == 0) first = got;
      else EXPECT_EQ(got, first) << "embedding backward must be bit-reproducible";
    }
  }
}

// A tensor-parallel shard of the table: wte's rows [13, 24) of a 41-row vocabulary. Ids at both
// ends of the range, just outside it on both sides, far outside, repeated; C = 19 takes the CPU
// twin's 16-wide path and its tail. A token outside the range adds nothing to its row. The shard's
// buffer runs on with the table's later rows, so reading past the range would add a real row.
TEST_P(ActKernelTest, EmbeddingForwardReadsOnlyItsVocabularyRange) {
  const std::size_t B = 3, T = 5, C = 19, Vp = 41, maxT = 7, begin = 13, rows = 11;
  const std::vector<int> ids = {13, 23, 24, 12, 0, 40, 17, 17, 13, 30, 20, 5, 23, 14, 24};
  const auto wte = in(random(Vp * C, 71)), wpe = in(random(maxT * C, 72));
  const std::vector<double> shard(wte.begin() + static_cast<std::ptrdiff_t>(begin * C), wte.end());
  auto shard_b = act(shard), wpe_b = act(wpe), out = act_zeros(B * T * C);
  auto ids_b = upload_ints(ids);
  // out[bt] = (wte[id] if begin <= id < begin + rows, else 0) + table[pos0 + t] (table[0] without
  // positions), in double.
  auto reference = [&](const std::vector<double>& table, std::size_t pos0, bool positions) {
    std::vector<double> want(B * T * C, 0.0);
    for (std::size_t bt = 0; bt < B * T; ++bt) {
      const auto id = static_cast<std::size_t>(ids[bt]);
      const bool held = id >= begin && id < begin + rows;
      const std::size_t position = positions ? bt % T + pos0 : 0;
      for (std::size_t c = 0; c < C; ++c) want[bt * C + c] = (held ? wte[id * C + c] : 0.0) + table[position * C + c];
    }
    return want;
  };
  kernels_->embedding.forward(out, ids_b, shard_b, wpe_b, B, T, C, 0, true, begin, rows);
  expect_close(download(out, B * T * C), reference(wpe, 0, true), stored({0, 1e-6}), "embedding shard");
  kernels_->embedding.forward(out, ids_b, shard_b, wpe_b, B, T, C, 2, true, begin, rows);
  expect_close(download(out, B * T * C), reference(wpe, 2, true), stored({0, 1e-6}),
               "embedding shard from position 2");
  // Without positions every row reads wpe's first row, which the caller keeps zero: a row outside
  // the range is all zeros.
  std::vector<double> zero_first_row(wpe);
  std::fill_n(zero_first_row.begin(), C, 0.0);
  auto zero_first_row_b = act(zero_first_row);
  kernels_->embedding.forward(out, ids_b, shard_b, zero_first_row_b, B, T, C, 0, false, begin, rows);
  expect_close(download(out, B * T * C), reference(zero_first_row, 0, false), Tol{0, 0},
               "embedding shard without positions");
}

// Plain and with the residual fusion (sum = x + delta normalised; dresidual added to dx).
// The Embedding layer's own CSR (forward groups the batch's positions by token): each token's row
// of dwte gets its positions' rows of dout added one by one in position order — bit for bit what
// this float32 loop computes from a zero gradient (the CPU kernel adds into the row, the portable
// one into a register it then adds; from zero both are this sum). Many repeats; C = 19 takes the
// 16-wide path and a tail.
TEST_P(ActKernelTest, EmbeddingLayerAddsEachTokensPositionsInOrder) {
  const std::size_t B = 2, T = 16, C = 19, Vp = 11, N = B * T;
  std::vector<int> ids(N);
  for (std::size_t p = 0; p < N; ++p) ids[p] = static_cast<int>((p * 7 + p / 5) % 5 + (p % 3 == 0 ? 6 : 0));
  const auto wte = in(random(Vp * C, 61)), wpe = in(random(T * C, 62)), dx = in(random(N * C, 63));
  const std::vector<double> dwte0(Vp * C, 0.0), dwpe0 = random(T * C, 65);
  models::Param wte_p{upload(wte), upload(dwte0), act(wte)}, wpe_p{upload(wpe), upload(dwpe0), act(wpe)};
  models::Embedding layer(*device_, GetParam(), wte_p, wpe_p, C, N, "emb");
  models::LayerContext ctx{*device_, *kernels_, *gemm_, B, T};
  layer.forward(ctx, ids);
  auto dx_b = act(dx);
  layer.backward(ctx, dx_b);
  std::vector<float> want(dwte0.begin(), dwte0.end());
  for (std::size_t p = 0; p < N; ++p)
    for (std::size_t c = 0; c < C; ++c) want[static_cast<std::size_t>(ids[p]) * C + c] += static_cast<float>(dx[p * C + c]);
  const std::vector<double> got = download(wte_p.grad, Vp * C);
  for (std::size_t i = 0; i < Vp * C; ++i) ASSERT_EQ(got[i], static_cast<double>(want[i])) << "dwte[" << i / C << "][" << i % C << "]";
}

TEST_P(ActKernelTest, LayerNormForwardBackward) {
  for (auto [N, C] : {std::pair{7, 37}, std::pair{1, 5}, std::pair{33, 128}}) check_layernorm(N, C);
}

// Plain and with the residual fusion, as LayerNorm; the weight gradient accumulates, so the
// backward runs twice and dscale must hold its initial value plus twice the gradient.
TEST_P(ActKernelTest, RmsNormForwardBackward) {
  for (auto [N, C] : {std::pair{67, 37}, std::pair{1, 37}, std::pair{67, 256}, std::pair{1, 256}}) check_rmsnorm(N, C);
}

// A shape beyond a buffer, or a norm without dimensions or epsilon, is a one-line error naming it.
TEST_P(ActKernelTest, RmsNormRefusesBadShapes) {
  auto x = act_zeros(4 * 8), w = act_zeros(8), out = act_zeros(4 * 8);
  auto rstd = zeros(4);
  EXPECT_THROW(kernels_->rmsnorm.forward(out, rstd, x, w, 5, 8, 1e-5f), DeviceError);
  EXPECT_THROW(kernels_->rmsnorm.forward(out, rstd, x, w, 4, 9, 1e-5f), DeviceError);
  const models::Param scale{zeros(8), zeros(8), act_zeros(8)};
  EXPECT_THROW(models::RmsNorm(*device_, GetParam(), scale, 0, 4, 1e-5f, "norm"), ConfigError);
  EXPECT_THROW(models::RmsNorm(*device_, GetParam(), scale, 8, 4, 0.0f, "norm"), ConfigError);
}

TEST_P(ActKernelTest, BiasAddAndGrad) {
  for (auto [N, C] : {std::pair{13, 21}, std::pair{5, 48}}) check_bias(N, C);
}

// The shapes the GPU twins find awkward (a team of 32 work-items per row and several rows per
// group, 32 columns per work-item in registers, row blocks of at least 32): one element, rows not a
// multiple of 4 wide, rows within (1000 columns) and beyond (4100) what a team's registers hold,
// fewer rows than a group has teams, and 10,000 rows (250 row blocks of 40).
TEST_P(ActKernelTest, NormsAndBiasAtAwkwardShapes) {
  for (auto [N, C] : {std::pair{1, 1}, std::pair{3, 3}, std::pair{2, 7}, std::pair{2, 1000}, std::pair{1, 4100},
                      std::pair{10000, 5}}) {
    SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C);
    check_layernorm(N, C);
    check_rmsnorm(N, C);
    check_bias(N, C);
  }
}

// A Linear without a bias (LLaMA's projections): y = x W^T, dx = dy W, dW += dy^T x, and nothing
// else is read or written. With GELU (float32 only: the 16-bit pre-activation is rounded before
// GELU sees it, which the reference cannot reproduce near GELU's zero) y = gelu(x W^T).
TEST_P(ActKernelTest, LinearWithoutBias) {
  const int N = 13, K = 37, M = 21;  // x (N, K), W (M, K), y (N, M)
  const auto x = in(random(N * K, 71)), w = in(random(M * K, 72, 0.3)), dy = in(random(N * M, 73));
  for (auto activation : {models::Linear::Activation::kNone, models::Linear::Activation::kGelu}) {
    const bool gelu = activation == models::Linear::Activation::kGelu;
    if (gelu && GetParam() != DType::kF32) continue;
    SCOPED_TRACE(gelu ? "gelu" : "identity");
    models::Param weight{upload(w), upload(std::vector<double>(M * K, 0.5)), act(w)};
    models::Linear layer(*device_, GetParam(), weight, std::nullopt, K, M, N, "linear", activation);
    models::LayerContext ctx{*device_, *kernels_, *gemm_, 1, N};
    auto xb = act(x), dyb = act(dy);
    const auto z = linear_forward(x, w, {}, N, K, M);
    expect_close(download(layer.forward(ctx, xb), N * M), gelu ? gelu_forward(z) : z, stored({1e-5, 1e-4}), "linear y");
    const auto g = linear_backward(x, w, gelu ? gelu_backward(z, dy) : dy, N, K, M);
    std::vector<double> want_dw(g.dw);
    for (double& e : want_dw) e += 0.5;
    expect_close(download(layer.backward(ctx, dyb), N * K), g.dx, stored({1e-5, 1e-4}), "linear dx");
    expect_close(download(weight.grad, M * K), want_dw, Tol{1e-4, 1e-4}, "linear dW");
  }
}

TEST_P(ActKernelTest, ResidualAddLeavesTheTailAlone) {
  const std::size_t n = 1001, size = 1010;
  const auto a = in(random(size, 33)), b = in(random(size, 34));
  auto ab = act(a), bb = act(b), out = act(std::vector<double>(size, 7.0));
  kernels_->residual.add(out, ab, bb, n);
  std::vector<double> want(size, 7.0);
  for (std::size_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
  expect_close(download(out, size), want, stored({0, 1e-6}), "residual add");
}

TEST_P(ActKernelTest, GeluForwardBackward) {
  const std::size_t n = 1001;
  const auto x = in(random(n, 15, 3.0)), dout = in(random(n, 16));
  auto xb = act(x), out = act_zeros(n), dx = act_zeros(n), dout_b = act(dout);
  kernels_->gelu.forward(out, xb, n);
  kernels_->gelu.backward(dx, xb, dout_b, n);
  expect_close(download(out, n), gelu_forward(x), stored({1e-6, 1e-5}), "gelu");
  expect_close(download(dx, n), gelu_backward(x, dout), stored({1e-6, 1e-5}), "gelu backward");
}

// Sizes around the GPU set's 4 elements per work-item: a lone tail (1, 3), one whole four, a four
// and a tail (5, 4099); residual, GELU and bias + GELU (C = 3 and 7: rows across fours).
TEST_P(ActKernelTest, ElementwiseAroundFourPerWorkItem) {
  for (const std::size_t n : {1, 3, 4, 5, 4099}) {
    SCOPED_TRACE(fmt::format("n = {}", n));
    const auto a = in(random(n, 35, 3.0)), b = in(random(n, 36));
    auto ab = act(a), bb = act(b), out = act_zeros(n), dx = act_zeros(n);
    kernels_->residual.add(out, ab, bb, n);
    std::vector<double> sum(n);
    for (std::size_t i = 0; i < n; ++i) sum[i] = a[i] + b[i];
    expect_close(download(out, n), sum, stored({0, 1e-6}), "residual add");
    kernels_->gelu.forward(out, ab, n);
    kernels_->gelu.backward(dx, ab, bb, n);
    expect_close(download(out, n), gelu_forward(a), stored({1e-6, 1e-5}), "gelu");
    expect_close(download(dx, n), gelu_backward(a, b), stored({1e-6, 1e-5}), "gelu backward");
    for (const std::size_t C : {3, 7}) {
      if (n % C != 0) continue;
      auto pre_b = act(a), bias_b = act(in(random(C, 37))), gelu_out = act_zeros(n);
      const auto bias = download(bias_b, C);
      kernels_->gelu.bias_forward(pre_b, gelu_out, bias_b, n / C, C);
      std::vector<double> biased(a);
      for (std::size_t i = 0; i < n; ++i) biased[i] += bias[i % C];
      expect_close(download(pre_b, n), in(biased), Tol{0, 0}, "bias + gelu pre-activation");
      expect_close(download(gelu_out, n), gelu_forward(biased), stored({1e-6, 1e-5}), "bias + gelu");
    }
  }
}

// pre += bias is stored (float32(pre + bias) rounded once: bit for bit); out = gelu of the float sum.
TEST_P(ActKernelTest, FusedBiasGelu) {
  for (auto [N, C] : {std::pair{13, 37}, std::pair{3, 32}}) {
    const auto pre = in(random(N * C, 31, 2.0)), bias = in(random(C, 32));
    auto pre_b = act(pre), bias_b = act(bias), out = act_zeros(N * C);
    kernels_->gelu.bias_forward(pre_b, out, bias_b, N, C);
    std::vector<double> sum(pre);
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c) sum[n * C + c] += bias[c];
    expect_close(download(pre_b, N * C), in(sum), Tol{0, 0}, "bias + gelu pre-activation");
    expect_close(download(out, N * C), gelu_forward(sum), stored({1e-6, 1e-5}), "bias + gelu");
  }
}

// SwiGLU's gate in every dtype, with gates far out in both tails (+-30, +-100: silu saturates to g
// and to -0, its derivative to 1 and to 0) that must come out finite; F = 37 takes the CPU twin's
// 16-wide path and a tail, F = 32 none; F = 3 (a tail alone), 5 and 4101 (the GPU twin's fours
// across several work-groups and a tail).
TEST_P(ActKernelTest, SwigluForwardBackwardIncludingLargeGates) {
  for (auto [N, F] : {std::pair{5, 37}, std::pair{1, 32}, std::pair{2, 3}, std::pair{3, 5}, std::pair{1, 4101}}) {
    SCOPED_TRACE(::testing::Message() << "N=" << N << " F=" << F);
    auto gu_values = random(N * 2 * F, 81, 3.0);
    const double tails[] = {30.0, -30.0, 100.0, -100.0};
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < 4; ++k) gu_values[n * 2 * F + (11 * k + n) % F] = tails[k];  // gates, vector and tail
    const auto gu = in(gu_values), dh = in(random(N * F, 82));
    auto gu_b = act(gu), dh_b = act(dh), h = act_zeros(N * F), dgu = act_zeros(N * 2 * F);
    kernels_->swiglu.forward(h, gu_b, N, F);
    kernels_->swiglu.backward(dgu, gu_b, dh_b, N, F);
    const auto got_h = download(h, N * F), got_dgu = download(dgu, N * 2 * F);
    for (double v : got_h) ASSERT_TRUE(std::isfinite(v)) << "swiglu h";
    for (double v : got_dgu) ASSERT_TRUE(std::isfinite(v)) << "swiglu dgu";
    expect_close(got_h, swiglu_forward(gu, N, F), stored({1e-6, 1e-5}), "swiglu h");
    expect_close(got_dgu, swiglu_backward(gu, dh, N, F), stored({1e-6, 1e-5}), "swiglu dgu");
  }
}

TEST_P(ActKernelTest, SwigluRefusesBadShapes) {
  auto gu = act_zeros(4 * 2 * 8), h = act_zeros(4 * 8);
  EXPECT_THROW(kernels_->swiglu.forward(h, gu, 4, 9), DeviceError);
  EXPECT_THROW(kernels_->swiglu.backward(gu, gu, h, 5, 8), DeviceError);
  const models::Param p{zeros(16), zeros(16), act_zeros(16)};
  EXPECT_THROW(models::SwigluMlp(*device_, GetParam(), p, p, 4, 0, 4, "mlp"), ConfigError);
}

// Rounding p and ds to the dtype before their products (FlashAttention-2's choice, flash attention
// on tensor cores) costs about u of each term, u the dtype's unit roundoff, on top of the stored
// results' own rounding; a sum over many keys averages these. Every case of FlashMmaTest stays
// within 1 u of the largest value (measured on PoCL), so 2 u leaves a margin, while a key masked
// wrongly or a misplaced fragment costs O(1) (a dq mask off by one fails by 0.1 - 0.16 at bfloat16).
Tol flash_mma_tolerance(DType dtype, const std::vector<double>& want) {
  double largest = 0;
  for (double v : want) largest = std::max(largest, std::abs(v));
  const double u = device::dtype_unit_roundoff(dtype);
  return Tol{2 * u * largest, 2 * u};
}

// The attention layer end to end (layout moves, GEMMs, softmax kernels), chunked and not, with
// H query heads over Hkv key/value heads (Hkv = H: multi-head).
void check_attention(ActKernelTest& t, int B, int H, int Hkv, int T, int hs, std::size_t workspace_bytes,
                     std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "B " << B << ", H " << H << ", Hkv " << Hkv << ", T " << T << ", hs " << hs
                                    << ", workspace " << workspace_bytes);
  const int D = H * hs, W = (H + 2 * Hkv) * hs, N = B * T;
  const auto qkv = t.in(ActKernelTest::random(N * W, seed)), dout = t.in(ActKernelTest::random(N * D, seed + 1));
  models::CausalAttention core(*t.device_, t.GetParam(), H, Hkv, hs, B, T, workspace_bytes, "attn");
  models::LayerContext ctx{*t.device_, *t.kernels_, *t.gemm_, static_cast<std::size_t>(B), static_cast<std::size_t>(T)};
  auto qkv_b = t.act(qkv), dout_b = t.act(dout);
  const auto out = t.download(core.forward(ctx, qkv_b), N * D);
  const auto dqkv = t.download(core.backward(ctx, dout_b), N * W);

  const QkvHeads h = split_grouped_qkv(qkv, B, T, H, Hkv, hs);
  const AttentionResult ref = attention_forward(h.q, h.k, h.v, B, H, T, hs);
  // The backward's row term delta = dO . O uses the output as stored; so does the reference.
  const AttentionGrads g = attention_backward(h.q, h.k, h.v, split_heads(out, B, T, H, hs),
                                              split_heads(dout, B, T, H, hs), B, H, T, hs);
  const auto want_out = merge_heads(ref.out, B, T, H, hs), want_dqkv = merge_grouped_qkv(g, B, T, H, Hkv, hs);
  // Flash attention on tensor cores (an NVIDIA GPU, 16-bit) rounds p and ds to the dtype before
  // their products: FlashMmaTest's tolerance. Every other path keeps them in float32.
  const kernels::FlashAttentionKernels* flash = core.flash() ? t.kernels_->flash_attention(hs) : nullptr;
  const bool mma = flash != nullptr && flash->on_tensor_cores();
  expect_close(out, want_out, mma ? flash_mma_tolerance(t.GetParam(), want_out) : t.stored({2e-5, 1e-4}), "attention out");
  expect_close(dqkv, want_dqkv, mma ? flash_mma_tolerance(t.GetParam(), want_dqkv) : t.stored({2e-5, 1e-3}),
               "attention dqkv");
}

TEST_P(ActKernelTest, AttentionSmallShapes) {
  check_attention(*this, 2, 3, 3, 7, 5, 64u << 20, 17);  // one chunk
  check_attention(*this, 2, 3, 3, 7, 5, 1, 18);          // one (batch, head) pair per chunk
  check_attention(*this, 3, 2, 2, 1, 4, 64u << 20, 19);  // T = 1
  check_attention(*this, 1, 2, 2, 33, 16, 3 * 2 * 33 * 33 * 4, 20);  // chunk of 3 over 2 pairs
}

TEST_P(ActKernelTest, AttentionAtMaxSeqLen2048) {
  // T = 2048, the largest Pax GPU length, with a workspace of one (T, T) pair: in float32 eight
  // query blocks of 256 with both heads per chunk, in 16 bits one block and one head per chunk.
  check_attention(*this, 1, 2, 2, 2048, 8, 2 * 2048 * 2048 * 4, 21);
}

TEST_P(ActKernelTest, AttentionQueryBlocksWithAShortLastBlock) {
  // T = 300: a block of 256 queries and one of 44 (float32), one head per chunk, two sequences.
  static_assert(models::CausalAttention::kQueryBlock == 256);
  check_attention(*this, 2, 3, 3, 300, 5, 1, 22);
}

// Grouped-query attention: 4 query heads over 1 (multi-query), 2 and 4 kv heads, and 6 over 3;
// all kv heads in one chunk and one per chunk (the workspace of a single score block); T = 1.
TEST_P(ActKernelTest, AttentionGroupedQueryHeads) {
  std::uint64_t seed = 70;
  for (const auto& [H, Hkv] : {std::pair{4, 1}, std::pair{4, 2}, std::pair{4, 4}, std::pair{6, 3}})
    for (const std::size_t workspace : {std::size_t{64} << 20, std::size_t{1}}) {
      check_attention(*this, 2, H, Hkv, 13, 12, workspace, seed += 2);
      check_attention(*this, 3, H, Hkv, 1, 4, workspace, seed += 2);
    }
}

TEST_P(ActKernelTest, AttentionGroupedQueryHeadsWithAShortLastBlock) {
  // T = 300: in float32 dk and dv sum over 2 query blocks and 2 query heads per kv head.
  check_attention(*this, 2, 4, 2, 300, 5, 1, 80);
  check_attention(*this, 1, 4, 1, 300, 8, 64u << 20, 81);
}

// Head size 64 (GPT-2's and LLaMA's), grouped and not, T = 1, 7 and 300: on the GPU set flash
// attention's real tiles, several query and key tiles with a short last one.
TEST_P(ActKernelTest, AttentionHeadSize64) {
  std::uint64_t seed = 90;
  for (const int T : {1, 7, 300}) {
    check_attention(*this, 2, 2, 2, T, 64, 64u << 20, seed += 2);
    check_attention(*this, 1, 4, 2, T, 64, 64u << 20, seed += 2);
  }
}

// The GPU set runs the layer as flash attention, the CPU set on a CPU device with native kernels
// as the host's flash attention, the portable set as GEMMs and softmax kernels; each gives the
// same bits on a second run (fixed-order sums only).
TEST_P(ActKernelTest, AttentionIsReproducibleAndFlashExactlyOnTheGpuSet) {
  const std::size_t B = 2, H = 4, Hkv = 2, T = 77, hs = 16, N = B * T;
  models::CausalAttention core(*device_, GetParam(), H, Hkv, hs, B, T, 64u << 20, "attn");
  const kernels::KernelVariant set = kernels::requested_variant(device_->info());
  EXPECT_EQ(core.flash(), set == kernels::KernelVariant::kGpu);
  EXPECT_EQ(core.cpu_flash(), set == kernels::KernelVariant::kCpu && device_->info().native_kernels &&
                                  std::getenv("PAX_OCL_CPU_FLASH") == nullptr);
  models::LayerContext ctx{*device_, *kernels_, *gemm_, B, T};
  auto qkv = act(in(random(N * core.qkv_width(), 95))), dout = act(in(random(N * H * hs, 96)));
  std::vector<double> first_out, first_dqkv;
  for (int run = 0; run < 2; ++run) {
    const auto out = download(core.forward(ctx, qkv), N * H * hs);
    const auto dqkv = download(core.backward(ctx, dout), N * core.qkv_width());
    if (run == 0) {
      first_out = out;
      first_dqkv = dqkv;
    } else {
      EXPECT_EQ(out, first_out);
      EXPECT_EQ(dqkv, first_dqkv);
    }
  }
}

// Flash attention on tensor cores (flash_attention_mma.cl) in its portable emulation, which runs each
// mma.sync, ldmatrix and shuffle with their documented per-lane semantics: the kernels' fragment,
// tile and mask index math against the float64 references, for the 16-bit dtypes it serves.
class FlashMmaTest : public ActKernelTest {
 public:
  Tol tol(const std::vector<double>& want) const { return flash_mma_tolerance(GetParam(), want); }
  kernels::FlashAttentionKernels flash(std::size_t hs) {
    return kernels::FlashAttentionKernels(cache_, *device_, GetParam(), hs, kernels::FlashMath::kEmulatedTensorCores);
  }
};

// Training: forward and backward over B sequences of T tokens, H query heads over Hkv kv heads.
void check_flash_mma(FlashMmaTest& t, int B, int H, int Hkv, int T, int hs, std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "B " << B << ", H " << H << ", Hkv " << Hkv << ", T " << T << ", hs " << hs);
  const int D = H * hs, W = (H + 2 * Hkv) * hs, N = B * T;
  const auto qkv = t.in(ActKernelTest::random(N * W, seed)), dout = t.in(ActKernelTest::random(N * D, seed + 1));
  auto flash = t.flash(static_cast<std::size_t>(hs));
  ASSERT_TRUE(flash.on_tensor_cores());
  // The attention layer logs this line: it names the tensor-core program.
  EXPECT_EQ(flash.describe().rfind("flash attention on tensor cores (flash_attention_mma.cl, ", 0), 0) << flash.describe();
  auto qkv_b = t.act(qkv), dout_b = t.act(dout), out_b = t.act_zeros(N * D), dqkv_b = t.act_zeros(N * W);
  auto lse_b = t.zeros(B * H * T), delta_b = t.zeros(B * H * T);
  const kernels::AttentionHeads heads{std::size_t(H), std::size_t(Hkv), std::size_t(hs)};
  const std::size_t k_col = D, v_col = D + Hkv * hs;
  flash.forward(qkv_b, W, kernels::KeyValueRows{&qkv_b, std::size_t(T), std::size_t(W), k_col, v_col}, out_b, D, lse_b,
                T, heads, B, T, 0);
  flash.backward(qkv_b, W, k_col, v_col, out_b, dout_b, lse_b, delta_b, dqkv_b, heads, B, T);
  const auto out = t.download(out_b, N * D), dqkv = t.download(dqkv_b, N * W);

  const QkvHeads h = split_grouped_qkv(qkv, B, T, H, Hkv, hs);
  const AttentionResult ref = attention_forward(h.q, h.k, h.v, B, H, T, hs);
  const auto want_out = merge_heads(ref.out, B, T, H, hs);
  expect_close(out, want_out, t.tol(want_out), "flash mma out");
  expect_close(t.download(lse_b, B * H * T), ref.lse, Tol{1e-4, 1e-4}, "flash mma lse");
  const AttentionGrads g = attention_backward(h.q, h.k, h.v, split_heads(out, B, T, H, hs),
                                              split_heads(dout, B, T, H, hs), B, H, T, hs);
  const auto want_dqkv = merge_grouped_qkv(g, B, T, H, Hkv, hs);
  expect_close(dqkv, want_dqkv, t.tol(want_dqkv), "flash mma dqkv");
  // Fixed-order sums only: a second run gives the same bits.
  flash.forward(qkv_b, W, kernels::KeyValueRows{&qkv_b, std::size_t(T), std::size_t(W), k_col, v_col}, out_b, D, lse_b,
                T, heads, B, T, 0);
  flash.backward(qkv_b, W, k_col, v_col, out_b, dout_b, lse_b, delta_b, dqkv_b, heads, B, T);
  EXPECT_EQ(t.download(out_b, N * D), out);
  EXPECT_EQ(t.download(dqkv_b, N * W), dqkv);
}

// Head size 64 (GPT-2's; tiles 64x64, 64x64, 64x32) in one tile, and the smallest head: small
// enough for Oclgrind (tests/CMakeLists.txt).
TEST_P(FlashMmaTest, TrainingInOneTileMatchesTheFloat64Reference) {
  for (const int T : {1, 7}) check_flash_mma(*this, 2, 2, 2, T, 64, 190 + T);
  check_flash_mma(*this, 1, 2, 1, 20, 16, 199);
}

TEST_P(FlashMmaTest, TrainingMatchesTheFloat64Reference) {
  std::uint64_t seed = 200;
  // Several tiles with a short last one, grouped-query heads, other head sizes.
  check_flash_mma(*this, 2, 2, 2, 130, 64, seed += 2);
  check_flash_mma(*this, 1, 4, 2, 77, 64, seed += 2);
  check_flash_mma(*this, 1, 4, 1, 300, 64, seed += 2);
  check_flash_mma(*this, 2, 3, 3, 40, 16, seed += 2);   // the smallest head
  check_flash_mma(*this, 1, 2, 1, 70, 48, seed += 2);   // three 16-deep steps, an odd count of fragment pairs
  check_flash_mma(*this, 1, 2, 2, 100, 128, seed += 2);  // LLaMA's head: 2-warp groups, 16-key dk/dv tiles
}

// Decoding: a few queries at positions p0.. against a longer cache, q rows at a stride that is not
// a multiple of 8 (the kernels' element-wise loads instead of 16-byte ones).
TEST_P(FlashMmaTest, DecodingAgainstACacheMatchesTheFloat64Reference) {
  const int B = 2, H = 4, Hkv = 2, T = 90, hs = 64, D = H * hs, W = (H + 2 * Hkv) * hs, p0 = 83, Q = T - p0;
  const int q_stride = D + 3;
  const auto qkv = in(random(B * T * W, 300));
  std::vector<double> q(static_cast<std::size_t>(B * Q * q_stride), 0.0);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Q; ++t)
      for (int c = 0; c < D; ++c) q[(b * Q + t) * q_stride + c] = qkv[(b * T + p0 + t) * W + c];
  auto flash_kernels = flash(hs);
  auto qkv_b = act(qkv), q_b = act(q), out_b = act_zeros(B * Q * D);
  auto lse_b = zeros(B * H * T);
  flash_kernels.forward(q_b, q_stride, kernels::KeyValueRows{&qkv_b, std::size_t(T), std::size_t(W), std::size_t(D),
                                                             std::size_t(D + Hkv * hs)},
                        out_b, D, lse_b, T, kernels::AttentionHeads{std::size_t(H), std::size_t(Hkv), std::size_t(hs)}, B, Q, p0);
  const QkvHeads h = split_grouped_qkv(qkv, B, T, H, Hkv, hs);
  const auto full = merge_heads(attention_forward(h.q, h.k, h.v, B, H, T, hs).out, B, T, H, hs);
  std::vector<double> want;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Q; ++t)
      for (int c = 0; c < D; ++c) want.push_back(full[(b * T + p0 + t) * D + c]);
  expect_close(download(out_b, B * Q * D), want, tol(want), "flash mma decode out");
}

// The float32-FMA kernels read 4 head dims at a time with aligned loads: a row stride that is not a
// multiple of 4 (which no pax-ocl caller passes) is refused by name, never read misaligned.
TEST_P(ActKernelTest, FlashAttentionRefusesStridesThatBreakItsVectorReads) {
  if (!kernels::uses_flash_attention(device_->info(), 64)) GTEST_SKIP() << "flash attention runs on the GPU set";
  const std::size_t B = 1, H = 2, T = 8, hs = 64, D = H * hs, W = 3 * D, q_stride = D + 3;
  kernels::FlashAttentionKernels flash(cache_, *device_, GetParam(), hs, kernels::FlashMath::kFloat);
  ASSERT_FALSE(flash.on_tensor_cores());
  auto qkv = act_zeros(B * T * W), q = act_zeros(B * T * q_stride), out = act_zeros(B * T * D);
  auto lse = zeros(B * H * T);
  const kernels::AttentionHeads heads{H, H, hs};
  try {
    flash.forward(q, q_stride, kernels::KeyValueRows{&qkv, T, W, D, 2 * D}, out, D, lse, T, heads, B, T, 0);
    ADD_FAILURE() << "a q stride of " << q_stride << " was accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("q_stride = 131 is not a multiple of 4"), std::string::npos) << e.what();
  }
}

// Both flash attentions check a call against its buffers before it runs (flash_attention.h's shared
// checks): a shape past a buffer, heads past a row, positions past the keys or another dtype among
// the buffers is a one-line DeviceError naming the call, never an access past a buffer (on CPU
// devices, past host memory).
TEST_P(ActKernelTest, FlashAttentionsRefuseCallsPastTheirBuffers) {
  const std::size_t B = 2, H = 2, T = 8, hs = 16, D = H * hs, W = 3 * D;
  std::optional<kernels::CpuFlashAttention> cpu;
  std::optional<kernels::FlashAttentionKernels> gpu;
  if (kernels::uses_cpu_flash_attention(device_->info())) {
    cpu.emplace(*device_);
  } else if (kernels::uses_flash_attention(device_->info(), hs)) {
    gpu.emplace(cache_, *device_, GetParam(), hs);
  } else {
    GTEST_SKIP() << "attention runs as GEMMs and a softmax on this device and set";
  }
  auto qkv = act_zeros(B * T * W), out = act_zeros(B * T * D), dout = act_zeros(B * T * D);
  auto dqkv = act_zeros(B * T * W), short_out = act_zeros(B * T * D - 1);
  auto other = upload(GetParam() == DType::kF32 ? DType::kBF16 : DType::kF32, std::vector<double>(B * T * D, 0.0));
  auto lse = zeros(B * H * T), delta = zeros(B * H * T);
  const kernels::AttentionHeads heads{H, H, hs};
  const kernels::KeyValueRows kv{&qkv, T, W, D, 2 * D};
  const auto forward = [&](const kernels::KeyValueRows& keys, device::TypedBuffer& o, std::size_t p0,
                           std::size_t queries) {
    if (cpu) cpu->forward(qkv, W, keys, o, D, lse, T, heads, B, queries, p0);
    else gpu->forward(qkv, W, keys, o, D, lse, T, heads, B, queries, p0);
  };
  const auto backward = [&](std::size_t width, std::size_t v_col, const device::TypedBuffer& d) {
    if (cpu) cpu->backward(qkv, width, D, v_col, out, d, lse, dqkv, heads, B, T);
    else gpu->backward(qkv, width, D, v_col, out, d, lse, delta, dqkv, heads, B, T);
  };
  const std::pair<std::function<void()>, std::string> cases[] = {
      {[&] { forward(kv, short_out, 0, T); }, "a buffer of 511 elements is shorter than the 512 the shape needs"},
      {[&] { forward(kernels::KeyValueRows{&qkv, T, W, D, 2 * D + 1}, out, 0, T); },
       "the value heads at columns 65 .. 96 run past rows of 96"},
      {[&] { forward(kv, out, 1, T); }, "positions up to 9 exceed 8 key rows"},
      {[&] { forward(kv, other, 0, T); }, "an activation buffer holds"},
      {[&] { backward(W, 2 * D, short_out); }, "a buffer of 511 elements is shorter than the 512 the shape needs"},
      {[&] { backward(W, 2 * D + 1, dout); }, "the value heads at columns 65 .. 96 run past rows of 96"},
      {[&] { backward(W, 2 * D, other); }, "an activation buffer holds"},
  };
  for (const auto& [call, says] : cases) {
    const std::string message = error_message<DeviceError>(call);
    EXPECT_NE(message.find(says), std::string::npos) << message;
    EXPECT_NE(message.find(cpu ? "CPU flash attention" : "flash_attention_"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The refused calls ran nothing: the arguments that fit still run.
  forward(kv, out, 0, T);
  backward(W, 2 * D, dout);
  EXPECT_EQ(download(out, B * T * D), std::vector<double>(B * T * D, 0.0));
}

TEST_P(FlashMmaTest, RefusesFloat32AndHeadSizesItCannotTile) {
  EXPECT_THROW(kernels::FlashAttentionKernels(cache_, *device_, DType::kF32, 64, kernels::FlashMath::kEmulatedTensorCores),
               ConfigError);
  for (const std::size_t hs : {8u, 40u, 144u})
    EXPECT_THROW(flash(hs), ConfigError) << "head size " << hs;
}

INSTANTIATE_TEST_SUITE_P(DTypes16, FlashMmaTest, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const ::testing::TestParamInfo<DType>& param_info) {
                           return std::string(device::dtype_name(param_info.param));
                         });

// The tensor-core tiles: GPT-2's and LLaMA's head sizes get the tiles scripts/check_ptx.sh checks
// for spills; every tile fits 48 KiB; head sizes that are not multiples of 16 up to 128 get none.
TEST(FlashAttentionMmaTiles, FitTheLocalMemoryAndKeepToTheCheckedTiles) {
  const auto t64 = kernels::flash_mma_tiles(64, 228u << 10);
  ASSERT_TRUE(t64.has_value());
  EXPECT_EQ(std::make_pair(t64->forward.warps, t64->forward.cols), std::make_pair(std::size_t{4}, std::size_t{64}));
  EXPECT_EQ(std::make_pair(t64->dq.warps, t64->dq.cols), std::make_pair(std::size_t{4}, std::size_t{64}));
  EXPECT_EQ(std::make_pair(t64->dkdv.warps, t64->dkdv.cols), std::make_pair(std::size_t{4}, std::size_t{32}));
  const auto t128 = kernels::flash_mma_tiles(128, 228u << 10);
  ASSERT_TRUE(t128.has_value());
  EXPECT_EQ(std::make_pair(t128->forward.warps, t128->forward.cols), std::make_pair(std::size_t{4}, std::size_t{32}));
  EXPECT_EQ(std::make_pair(t128->dq.warps, t128->dq.cols), std::make_pair(std::size_t{2}, std::size_t{32}));
  EXPECT_EQ(std::make_pair(t128->dkdv.warps, t128->dkdv.cols), std::make_pair(std::size_t{2}, std::size_t{16}));
  for (std::size_t hs = 16; hs <= kernels::kFlashMmaMaxHeadSize; hs += 16) {
    const auto tiles = kernels::flash_mma_tiles(hs, 48u << 10);
    ASSERT_TRUE(tiles.has_value()) << hs;
    EXPECT_LE(tiles->local_bytes, 48u << 10) << hs;
  }
  EXPECT_FALSE(kernels::flash_mma_tiles(72, 48u << 10).has_value());
  EXPECT_FALSE(kernels::flash_mma_tiles(144, 48u << 10).has_value());
  EXPECT_FALSE(kernels::flash_mma_tiles(64, 8u << 10).has_value());  // too little local memory
}

// Flash attention's tiles: per kernel the largest that fits the local memory (at most 48 KiB), in
// groups of at most 128 with whole rows and columns per work-item; none for a head too large.
TEST(FlashAttentionTiles, FitTheLocalMemory) {
  for (const std::size_t hs : {4, 5, 64, 80, 128, 256})
    for (const std::size_t group : {32, 64, 128, 256, 1024})
      for (const std::size_t local : {std::size_t{16} << 10, std::size_t{32} << 10, std::size_t{2} << 20}) {
        SCOPED_TRACE(fmt::format("hs {} group {} local {}", hs, group, local));
        const auto tiles = kernels::flash_tiles(hs, group, local, kernels::FlashLimits{});
        if (!tiles) {  // only large heads fit nothing: 80 in 16 KiB with 16 rows of work-items, 128 and more
          EXPECT_TRUE(hs >= 128 || (hs >= 80 && local == std::size_t{16} << 10));
          continue;
        }
        EXPECT_EQ(tiles->group_size, std::min<std::size_t>(group, kernels::kFlashMaxGroup));
        EXPECT_LE(tiles->local_bytes, std::min(local, kernels::kFlashLocalBudget));
        const std::size_t row_items = tiles->group_size / kernels::kFlashLanes;
        for (const auto& tile : {tiles->forward, tiles->dq, tiles->dkdv}) {
          EXPECT_EQ(tile.rows % row_items, 0u);
          EXPECT_EQ(tile.cols % kernels::kFlashLanes, 0u);
          EXPECT_GE(tile.rows, row_items);
          EXPECT_LE(tile.rows, 64u);
          EXPECT_LE(tile.cols, 64u);
        }
      }
  // GPT-2's heads on a GPU (PAX_WG 256): a forward tile of 64 queries by 32 keys, 4 x 4 scores a
  // work-item, within 48 KiB.
  const auto h100 = kernels::flash_tiles(64, 256, 228u << 10, kernels::FlashLimits{});
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->group_size, 128u);
  EXPECT_EQ(h100->forward.rows, 64u);
  EXPECT_EQ(h100->forward.cols, 32u);
  EXPECT_FALSE(kernels::flash_tiles(4096, 256, 48u << 10).has_value());
  // The measuring switches' limits: groups of 64 (8 rows of work-items) and 32 register floats
  // leave GPT-2's forward 2 x 4 scores and 2 x 8 head dims a work-item: 16 queries by 32 keys.
  const auto limited = kernels::flash_tiles(64, 256, 228u << 10, kernels::flash_limits_from("64", "32"));
  ASSERT_TRUE(limited.has_value());
  EXPECT_EQ(limited->group_size, 64u);
  EXPECT_EQ(limited->forward.rows, 16u);
  EXPECT_EQ(limited->forward.cols, 32u);
  const auto unset = kernels::flash_limits_from(nullptr, "");
  EXPECT_EQ(unset.max_group, kernels::kFlashMaxGroup);
  EXPECT_EQ(unset.max_register_floats, kernels::kFlashMaxRegisterTile);
  for (const auto& [group, regs, names] : {std::tuple{"60", "", "PAX_OCL_FLASH_GROUP=60"},
                                           std::tuple{"2048", "", "PAX_OCL_FLASH_GROUP=2048"},
                                           std::tuple{"", "8", "PAX_OCL_FLASH_REGISTER_FLOATS=8"},
                                           std::tuple{"", "32x", "PAX_OCL_FLASH_REGISTER_FLOATS=32x"},
                                           std::tuple{"-64", "", "PAX_OCL_FLASH_GROUP=-64"},
                                           std::tuple{" 64", "", "PAX_OCL_FLASH_GROUP= 64"},
                                           std::tuple{"", "18446744073709551648", "PAX_OCL_FLASH_REGISTER_FLOATS=1844"}}) {
    const std::string message = error_message<ConfigError>([&] { kernels::flash_limits_from(group, regs); });
    EXPECT_NE(message.find(names), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST_P(ActKernelTest, AttentionRefusesKvHeadsThatDoNotDivideTheHeads) {
  for (const auto& [H, Hkv] : {std::pair{6, 4}, std::pair{4, 0}}) {
    const std::string message = error_message<ConfigError>(
        [&] { models::CausalAttention(*device_, GetParam(), H, Hkv, 8, 1, 4, 1u << 20, "attn"); });
    EXPECT_NE(message.find(fmt::format("{} attention heads cannot share {} key/value heads", H, Hkv)),
              std::string::npos)
        << message;
  }
}

// delta (B, NH, T) = dO . O over each head's hs values, O and dO (B, T, NH * hs): head size 20
// takes the 16-wide path and a 4-element tail; 15 rows launch a rounded-up range whose extra
// work-items must write nothing (the buffer's tail keeps its 7s).
TEST_P(ActKernelTest, AttentionRowDotWritesItsRowsOnly) {
  const std::size_t B = 1, T = 5, NH = 3, hs = 20, rows = B * T * NH, slack = 9;
  const auto o = in(random(rows * hs, 41)), dout = in(random(rows * hs, 42));
  auto ob = act(o), db = act(dout);
  auto delta = upload(std::vector<double>(rows + slack, 7.0));
  kernels_->attention.row_dot(delta, ob, db, B, T, NH, hs);
  std::vector<double> want(rows + slack, 7.0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < NH; ++h)
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t r = (b * NH + h) * T + t, at = ((b * T + t) * NH + h) * hs;
        want[r] = 0;
        for (std::size_t d = 0; d < hs; ++d) want[r] += o[at + d] * dout[at + d];
      }
  expect_close(download(delta, rows + slack), want, {1e-6, 1e-5}, "attention row dot");
}

// Rotary embeddings in float64, written from the formula: qkv (N, (H + 2*Hkv)*hs), row r at position
// r % T + offset; in the q and k heads the pair (i, i + hs/2) turns by sign * p * base^(-2i/hs).
std::vector<double> rope_reference(std::vector<double> qkv, int T, int H, int Hkv, int hs, double base, int offset,
                                   double sign) {
  const std::size_t width = static_cast<std::size_t>((H + 2 * Hkv) * hs), half = static_cast<std::size_t>(hs / 2);
  for (std::size_t r = 0; r < qkv.size() / width; ++r) {
    const double p = static_cast<double>(r % static_cast<std::size_t>(T)) + offset;
    for (std::size_t head = 0; head < static_cast<std::size_t>(H + Hkv); ++head)
      for (std::size_t i = 0; i < half; ++i) {
        const double angle = sign * p * std::pow(base, -2.0 * static_cast<double>(i) / hs);
        double& x1 = qkv[r * width + head * hs + i];
        double& x2 = qkv[r * width + head * hs + i + half];
        const double y1 = x1 * std::cos(angle) - x2 * std::sin(angle), y2 = x2 * std::cos(angle) + x1 * std::sin(angle);
        x1 = y1;
        x2 = y2;
      }
  }
  return qkv;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// Forward against the float64 loop (v untouched, bit for bit); backward is the transpose:
// <R x, y> = <x, R^T y>, and R^T y against the loop turned the other way, at the forward's offset.
// hs = 8: the scalar path of the CPU kernel; 64: its 16-wide path; 40: both (20 frequencies).
TEST_P(ActKernelTest, RopeForwardAndTransposedBackward) {
  const int B = 2, H = 4, Hkv = 2;
  const double base = 10000.0;
  std::uint64_t seed = 60;
  for (const int hs : {8, 64, 40, 10, 6})  // pairs 4, 32, 20: whole fours; 5, 3: the GPU twin's tail
    for (const int T : {1, 37})
      for (const int offset : {0, 11}) {
        SCOPED_TRACE(::testing::Message() << "hs " << hs << ", T " << T << ", offset " << offset);
        const std::size_t n = static_cast<std::size_t>(B * T * (H + 2 * Hkv) * hs);
        const auto x = in(random(n, ++seed)), y = in(random(n, ++seed));
        models::RotaryEmbedding rope(*device_, H, Hkv, hs, static_cast<float>(base), 64, "rope");
        models::LayerContext ctx{*device_, *kernels_, *gemm_, B, static_cast<std::size_t>(T)};
        auto xb = act(x), yb = act(y);
        rope.forward(ctx, xb, offset);
        rope.backward(ctx, yb);
        const auto rx = download(xb, n), rty = download(yb, n);
        const auto want_rx = rope_reference(x, T, H, Hkv, hs, base, offset, 1.0);
        const auto want_rty = rope_reference(y, T, H, Hkv, hs, base, offset, -1.0);
        expect_close(rx, want_rx, stored({1e-6, 1e-5}), "rope forward");
        expect_close(rty, want_rty, stored({1e-6, 1e-5}), "rope backward");
        const std::size_t width = static_cast<std::size_t>((H + 2 * Hkv) * hs), v0 = static_cast<std::size_t>((H + Hkv) * hs);
        for (std::size_t i = 0; i < n; ++i) {
          if (i % width >= v0) {
            ASSERT_EQ(rx[i], x[i]) << "v changed at " << i;
          }
        }
        // Each side is within the stored tolerance of the exact rotation, for which the two are equal.
        const Tol tol = stored({1e-6, 1e-5});
        double bound = 0;
        for (std::size_t i = 0; i < n; ++i) {
          bound += (tol.atol + tol.rtol * std::abs(want_rx[i])) * std::abs(y[i]) +
                   (tol.atol + tol.rtol * std::abs(want_rty[i])) * std::abs(x[i]);
        }
        EXPECT_NEAR(dot(rx, y), dot(x, rty), bound) << "<R x, y> != <x, R^T y>";
      }
}

TEST_P(ActKernelTest, RopeRefusesOddHeadsAndPositionsPastItsTables) {
  EXPECT_NE(error_message<ConfigError>([&] { models::RotaryEmbedding(*device_, 4, 2, 7, 10000.0f, 8, "rope"); })
                .find("even head size, got 7"),
            std::string::npos);
  models::RotaryEmbedding rope(*device_, 2, 1, 4, 10000.0f, 8, "rope");
  models::LayerContext ctx{*device_, *kernels_, *gemm_, 1, 5};
  auto qkv = act_zeros(5 * 4 * 4);
  rope.forward(ctx, qkv, 3);  // positions 3 .. 7: the last rows of the tables
  const std::string message = error_message<ConfigError>([&] { rope.forward(ctx, qkv, 4); });
  EXPECT_NE(message.find("positions 4 .. 8 exceed the rotary tables' max_positions 8"), std::string::npos) << message;
}

// The backward of RoPE + grouped-query attention against central differences of the scalar
// loss sum(out * r) (float32; every input element, v included; a position offset).
TEST_F(KernelTest, RopeAndGroupedAttentionGradientsMatchFiniteDifferences) {
  const std::size_t B = 2, T = 3, H = 4, Hkv = 2, hs = 4, W = (H + 2 * Hkv) * hs, D = H * hs, N = B * T, offset = 3;
  const auto qkv = random(N * W, 90), r = random(N * D, 91);
  models::RotaryEmbedding rope(*device_, H, Hkv, hs, models::RotaryEmbedding::kDefaultBase, 16, "rope");
  models::CausalAttention core(*device_, DType::kF32, H, Hkv, hs, B, T, 1u << 20, "attn");
  models::LayerContext ctx{*device_, *kernels_, *gemm_, B, T};
  auto loss = [&](const std::vector<double>& x) {
    auto xb = upload(DType::kF32, x);
    rope.forward(ctx, xb, offset);
    return dot(download(core.forward(ctx, xb), N * D), r);
  };
  auto xb = upload(DType::kF32, qkv), rb = upload(DType::kF32, r);
  rope.forward(ctx, xb, offset);
  core.forward(ctx, xb);
  device::TypedBuffer& dqkv = core.backward(ctx, rb);
  rope.backward(ctx, dqkv);
  const auto grad = download(dqkv, N * W);
  const double eps = 1e-2;
  std::vector<double> numeric(N * W);
  for (std::size_t i = 0; i < N * W; ++i) {
    auto x = qkv;
    x[i] = qkv[i] + eps;
    const double up = loss(x);
    x[i] = qkv[i] - eps;
    numeric[i] = (up - loss(x)) / (2 * eps);
  }
  expect_close(grad, numeric, Tol{2e-3, 1e-2}, "d sum(out * r) / d qkv");
}

TEST_P(ActKernelTest, SoftmaxCrossEntropyWithPaddingAndWeights) {
  const int N = 6, V = 37, Vp = 64;
  auto logits = in(random(N * Vp, 22, 3.0));
  const std::vector<int> targets = {0, 36, 5, 5, 17, 2};
  logits[static_cast<std::size_t>(3 * Vp + 5)] = 20.0;  // row 3 predicts its target
  // The maximum at the first entry (row 0, target 0) and at the last (row 1, target 36): the edges
  // of the argmax search; row 4 ties its target 17 with a later entry: the first maximum counts.
  logits[0] = 20.0;
  logits[static_cast<std::size_t>(Vp + V - 1)] = 20.0;
  logits[static_cast<std::size_t>(4 * Vp + 17)] = logits[static_cast<std::size_t>(4 * Vp + 30)] = 20.0;
  // Row 5 ties its target 2 with column 18, 16 columns on: the same lane of the CPU twin's vectors.
  logits[static_cast<std::size_t>(5 * Vp + 2)] = logits[static_cast<std::size_t>(5 * Vp + 18)] = 20.0;
  const std::vector<double> weights = {1.0, 0.5, 0.0, 2.0, 1.0, 1.0};
  double wsum = 0;
  for (double w : weights) wsum += w;
  auto lb = act(logits);
  auto losses = zeros(N), correct = zeros(N), wb = upload(weights);
  auto tb = upload_ints(targets);
  kernels_->cross_entropy.softmax_cross_entropy(lb, losses, correct, tb, wb, N, V, Vp, static_cast<float>(1.0 / wsum));
  const auto got_correct = download(correct, N);
  for (int n = 0; n < N; ++n) {  // weight where the first argmax over [0, V) is the target
    int argmax = 0;
    for (int v = 1; v < V; ++v) {
      if (logits[static_cast<std::size_t>(n * Vp + v)] > logits[static_cast<std::size_t>(n * Vp + argmax)]) argmax = v;
    }
    EXPECT_EQ(got_correct[static_cast<std::size_t>(n)], argmax == targets[static_cast<std::size_t>(n)] ? weights[static_cast<std::size_t>(n)] : 0.0);
  }
  const auto ref = softmax_cross_entropy(logits, N, Vp, V, targets, weights);
  const auto row_losses = download(losses, N);  // float32: the tolerances of float32
  double loss = 0;
  for (int n = 0; n < N; ++n) {
    EXPECT_NEAR(row_losses[n], weights[n] * ref.row_ce[n], 1e-4) << n;
    loss += row_losses[n];
  }
  EXPECT_NEAR(loss / wsum, ref.loss, 1e-5);
  expect_close(download(lb, N * Vp), ref.dlogits, stored({1e-6, 1e-4}), "dlogits");
}

// One softmax cross-entropy of N rows of V real columns (padded to Vp) against the float64
// reference: random logits, targets spread over the columns, the last real column a target; with
// V > 1000 also row 0's maximum tied between an early column and its target (the first counts:
// wrong), row 1's target its maximum far from the row's start, and every further odd row's target
// its maximum.
void ActKernelTest::check_cross_entropy(const int N, const int V, const int Vp) {
  SCOPED_TRACE(::testing::Message() << "N=" << N << " V=" << V << " Vp=" << Vp);
  auto logits = in(random(static_cast<std::size_t>(N) * Vp, 91, 3.0));
  std::vector<int> targets(N);
  for (int n = 0; n < N; ++n) targets[n] = (n * 31 + 7) % V;
  targets[0] = V - 1;  // the last real column, the last chunk
  if (V > 1000) {
    logits[100] = logits[static_cast<std::size_t>(V - 1)] = 16.0;  // above the ~12.4 a random row reaches
    if (N > 1) {
      targets[1] = V - 3;
      logits[static_cast<std::size_t>(Vp + V - 3)] = 16.0;
    }
    // Every further odd row: the target just above the row's maximum, so that its probability
    // stays far from 1 (g (p - 1) cancels less: the portable twin sums a row serially).
    for (int n = 3; n < N; n += 2) {
      double* row = &logits[static_cast<std::size_t>(n) * Vp];
      row[targets[n]] = in({*std::max_element(row, row + V) + 0.5})[0];  // exact in the dtype
    }
  }
  std::vector<double> weights(N);
  double wsum = 0;
  for (int n = 0; n < N; ++n) wsum += weights[n] = 0.5 + 0.25 * (n % 3);
  auto lb = act(logits);
  auto losses = zeros(N), correct = zeros(N), wb = upload(weights);
  auto tb = upload_ints(targets);
  kernels_->cross_entropy.softmax_cross_entropy(lb, losses, correct, tb, wb, N, V, Vp, static_cast<float>(1.0 / wsum));
  const auto ref = softmax_cross_entropy(logits, N, Vp, V, targets, weights);
  const auto got_losses = download(losses, N), got_correct = download(correct, N);
  for (int n = 0; n < N; ++n) {
    const double* row = &logits[static_cast<std::size_t>(n) * Vp];
    const int argmax = static_cast<int>(std::max_element(row, row + V) - row);  // the first maximum
    EXPECT_EQ(got_correct[n], argmax == targets[n] ? weights[n] : 0.0) << n;
    EXPECT_NEAR(got_losses[n], weights[n] * ref.row_ce[n], 2e-4) << n;
  }
  if (V > 1000) {
    EXPECT_EQ(got_correct[0], 0.0);
    for (int n = 1; n < N; n += 2) EXPECT_EQ(got_correct[n], weights[n]) << n;
  }
  expect_close(download(lb, static_cast<std::size_t>(N) * Vp), ref.dlogits, stored({1e-7, 1e-4}), "dlogits");
}

// GPT-2's vocabulary (50257 real columns padded to 50304, and 50304 real), a row split into many
// chunks by the GPU twin with the maximum tied across chunks and targets in the last chunk; and
// 10,000 short rows.
TEST_P(ActKernelTest, SoftmaxCrossEntropyAtAwkwardShapes) {
  check_cross_entropy(2, 50257, 50304);
  check_cross_entropy(1, 50304, 50304);
  check_cross_entropy(10000, 37, 40);
}

// Rows of whole chunks at every group size (4096 columns): the GPU set reads them in quads of 4
// columns; targets and maxima at each of a quad's four columns. Small enough for Oclgrind.
TEST_P(ActKernelTest, SoftmaxCrossEntropyInWholeChunks) { check_cross_entropy(8, 4096, 4096); }

// ---------------------------------------------------------------------------------------------
// Vocabulary-parallel cross-entropy (kernels_cl/vocab_parallel.cl): one (N, Vp) logits matrix
// split into P column blocks, as P devices hold it, run through both passes; the partials the
// devices would all-reduce are one shared buffer here, each block's pass 1 writing its own rows.

struct VocabParallelRun {
  std::vector<std::vector<double>> losses, correct;  // per rank: (N), (N)
  std::vector<double> dlogits;                       // (N, Vp), re-assembled from the P blocks
};

VocabParallelRun run_vocab_parallel(DeviceTest& t, const std::vector<double>& logits, std::size_t N, std::size_t V,
                                    std::size_t Vp, std::size_t P, const std::vector<int>& targets,
                                    const std::vector<double>& weights, double inv_weight_sum) {
  const std::size_t Vl = Vp / P;
  auto targets_b = t.upload_ints(targets);
  auto weights_b = t.upload(weights);
  auto partials = t.zeros(P * N * 3);  // (P, N, 3)
  std::vector<device::TypedBuffer> blocks;
  std::vector<std::size_t> reals;
  for (std::size_t r = 0; r < P; ++r) {
    std::vector<double> block(N * Vl);  // (N, Vl): columns [r Vl, (r + 1) Vl)
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t v = 0; v < Vl; ++v) block[n * Vl + v] = logits[n * Vp + r * Vl + v];
    blocks.push_back(t.upload(t.act_dtype(), block));
    reals.push_back(std::min(Vl, V - std::min(V, r * Vl)));
    t.kernels_->vocab_parallel.partial_stats(blocks[r], partials, targets_b, N, Vl, reals[r], r * Vl, r);
  }
  // Pass 1 against its definition in double: the max and the target's logit are exact.
  const auto stats = t.download(partials, P * N * 3);
  for (std::size_t r = 0; r < P; ++r)
    for (std::size_t n = 0; n < N; ++n) {
      const double* row = &logits[n * Vp + r * Vl];
      double mx = -std::numeric_limits<float>::max(), sum = 0, target = 0;
      for (std::size_t v = 0; v < reals[r]; ++v) mx = std::max(mx, row[v]);
      for (std::size_t v = 0; v < reals[r]; ++v) sum += std::exp(row[v] - mx);
      const auto column = static_cast<std::size_t>(targets[n]);
      if (column >= r * Vl && column < r * Vl + reals[r]) target = row[column - r * Vl];
      const std::size_t at = (r * N + n) * 3;
      EXPECT_EQ(stats[at], mx) << "max of rank " << r << " row " << n;
      // A float32 sum of reals[r] terms: rounding grows with the count (1e-5 at 36 columns).
      const double sum_rtol = 1e-5 * std::max(1.0, std::sqrt(static_cast<double>(reals[r]) / 36.0));
      EXPECT_NEAR(stats[at + 1], sum, 1e-6 + sum_rtol * sum) << "sum of rank " << r << " row " << n;
      EXPECT_EQ(stats[at + 2], target) << "target logit of rank " << r << " row " << n;
    }
  VocabParallelRun run{{}, {}, std::vector<double>(N * Vp, 0.0)};
  for (std::size_t r = 0; r < P; ++r) {
    auto losses = t.zeros(N), correct = t.zeros(N);
    t.kernels_->vocab_parallel.finish(blocks[r], partials, losses, correct, targets_b, weights_b, N, Vl, reals[r],
                                      r * Vl, P, static_cast<float>(inv_weight_sum));
    run.losses.push_back(t.download(losses, N));
    run.correct.push_back(t.download(correct, N));
    const auto block = t.download(blocks[r], N * Vl);
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t v = 0; v < Vl; ++v) run.dlogits[n * Vp + r * Vl + v] = block[n * Vl + v];
  }
  return run;
}

// P = 1..4 blocks of Vp = 48 columns, V = 36 real: blocks of 48, 24, 16 and 12 columns, the last
// one with 12, 4 or no real column (P = 4: a whole block of padding). (Vp itself is a multiple of
// 16: cross_entropy_cpu.cl's float16 build crashes on PoCL when a row does not start 16-byte aligned.)
// Against (a) the float64 full-vocabulary reference and (b) the single-device kernel on the
// whole matrix. N = 1 and N = 19; a weight of 0; a target in the last real column (once the
// row's maximum); a large logit in a padding column, which must not count; targets tying the
// maximum with a later column and with an earlier one (the one place the two kernels differ: the
// vocabulary-parallel one counts a tie as correct, the single-device one the first maximum).
TEST_P(ActKernelTest, VocabParallelCrossEntropyMatchesTheWholeVocabulary) {
  // 3001 columns: several chunks of the GPU twins at every group size below 256.
  for (auto [V, Vp] : {std::pair<std::size_t, std::size_t>{36, 48}, std::pair<std::size_t, std::size_t>{3001, 3008}})
  for (std::size_t N : {std::size_t{1}, std::size_t{19}}) {
    SCOPED_TRACE(fmt::format("N = {} V = {}", N, V));
    auto logits = in(random(N * Vp, 23 + N, 3.0));
    std::vector<int> targets(N);
    std::vector<double> weights(N);
    for (std::size_t n = 0; n < N; ++n) {
      targets[n] = static_cast<int>((n * 7 + 3) % V);
      weights[n] = 0.5 + 0.125 * static_cast<double>(n % 5);
    }
    targets[0] = V - 1;                     // the last real column
    logits[Vp - 1] = 30.0;                  // padding: excluded from the softmax and the argmax
    std::size_t earlier_tie = N;            // the row whose correct flag the kernels disagree on
    if (N > 6) {
      weights[1] = 0.0;
      logits[2 * Vp + static_cast<std::size_t>(targets[2])] = 20.0;  // predicted
      targets[3] = 10;                                               // ties with column 30 after it
      logits[3 * Vp + 10] = logits[3 * Vp + 30] = 20.0;
      logits[4 * Vp + 0] = 20.0;                                     // the maximum at the first column
      targets[5] = V - 1;                                            // the last real column, predicted
      logits[5 * Vp + V - 1] = 20.0;
      earlier_tie = 6;                                               // ties with column 10 before it
      targets[6] = 30;
      logits[6 * Vp + 10] = logits[6 * Vp + 30] = 20.0;
    }
    double weight_sum = 0;
    for (double w : weights) weight_sum += w;

    const auto ref = softmax_cross_entropy(logits, static_cast<int>(N), static_cast<int>(Vp), static_cast<int>(V),
                                           targets, weights);
    std::vector<double> want_losses(N), want_correct(N);
    for (std::size_t n = 0; n < N; ++n) {
      want_losses[n] = weights[n] * ref.row_ce[n];
      const double* row = &logits[n * Vp];
      want_correct[n] = row[targets[n]] >= *std::max_element(row, row + V) ? weights[n] : 0.0;
    }
    auto whole = act(logits);
    auto single_losses = zeros(N), single_correct = zeros(N), weights_b = upload(weights);
    auto targets_b = upload_ints(targets);
    kernels_->cross_entropy.softmax_cross_entropy(whole, single_losses, single_correct, targets_b, weights_b, N, V, Vp,
                                                  static_cast<float>(1.0 / weight_sum));
    const auto single = download(whole, N * Vp), single_loss = download(single_losses, N),
               single_right = download(single_correct, N);

    // The two kernels' float32 results each lie within the tolerance of the float64 reference.
    const Tol dlogits_tol = stored({1e-6, 1e-4}), between{2 * dlogits_tol.atol, 2 * dlogits_tol.rtol};
    for (std::size_t P = 1; P <= 4; ++P) {
      SCOPED_TRACE(fmt::format("P = {}", P));
      const auto run = run_vocab_parallel(*this, logits, N, V, Vp, P, targets, weights, 1.0 / weight_sum);
      for (std::size_t r = 1; r < P; ++r) {  // every device combines the same partials alike
        EXPECT_EQ(run.losses[r], run.losses[0]) << "losses of rank " << r;
        EXPECT_EQ(run.correct[r], run.correct[0]) << "correct of rank " << r;
      }
      expect_close(run.losses[0], want_losses, Tol{1e-4, 1e-5}, "losses vs float64");
      // A loss is a difference of two ~20s on the rows with a planted 20.0: a few float32 ulps of 20 apart.
      expect_close(run.losses[0], single_loss, Tol{4e-5, 1e-5}, "losses vs the single-device kernel");
      EXPECT_EQ(run.correct[0], want_correct);
      for (std::size_t n = 0; n < N; ++n) {
        if (n != earlier_tie) {
          EXPECT_EQ(run.correct[0][n], single_right[n]) << "correct of row " << n;
        }
      }
      expect_close(run.dlogits, ref.dlogits, dlogits_tol, "dlogits vs float64");
      expect_close(run.dlogits, single, between, "dlogits vs the single-device kernel");
    }
    if (earlier_tie < N) {
      EXPECT_EQ(single_right[earlier_tie], 0.0) << "the single-device kernel takes the first maximum";
    }
  }
}

// The gradient pass 2 writes is the derivative of the loss pass 2 reports, sum_n losses[n] * inv_weight_sum:
// central differences through both passes (float32, two blocks, the second with padding).
TEST_F(KernelTest, VocabParallelGradientMatchesFiniteDifferences) {
  const std::size_t N = 2, V = 13, Vp = 16, P = 2;
  auto logits = random(N * Vp, 31);
  const std::vector<int> targets = {12, 3};
  const std::vector<double> weights = {1.0, 0.5};
  const double inv_weight_sum = 1.0 / 1.5;
  auto loss = [&] {
    const auto run = run_vocab_parallel(*this, logits, N, V, Vp, P, targets, weights, inv_weight_sum);
    return (run.losses[0][0] + run.losses[0][1]) * inv_weight_sum;
  };
  const auto analytic = run_vocab_parallel(*this, logits, N, V, Vp, P, targets, weights, inv_weight_sum).dlogits;
  // The moved logits rounded to float, as the device holds them; the quotient by their actual distance.
  const double h = 1e-2;
  std::vector<double> numeric(N * Vp);
  for (std::size_t i = 0; i < N * Vp; ++i) {
    const double saved = logits[i], above = static_cast<float>(saved + h), below = static_cast<float>(saved - h);
    logits[i] = above;
    const double up = loss();
    logits[i] = below;
    numeric[i] = (up - loss()) / (above - below);
    logits[i] = saved;
  }
  expect_close(analytic, numeric, Tol{2e-5, 1e-3}, "dlogits vs d loss / d logits");
}

// A block with more real columns than columns, a rank past the partials' blocks, no devices: a
// one-line ConfigError naming the numbers.
TEST_P(ActKernelTest, VocabParallelRefusesBadSizes) {
  const std::size_t N = 3, Vl = 8, P = 2;
  auto logits = act_zeros(N * Vl);
  auto partials = zeros(P * N * 3), losses = zeros(N), correct = zeros(N), weights = zeros(N);
  auto targets = upload_ints(std::vector<int>(N, 0));
  auto expect_config_error = [](const std::function<void()>& call, const std::vector<std::string>& named) {
    try {
      call();
      ADD_FAILURE() << "no ConfigError";
    } catch (const ConfigError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      for (const auto& part : named) EXPECT_NE(message.find(part), std::string::npos) << message << " names " << part;
    }
  };
  expect_config_error([&] { kernels_->vocab_parallel.partial_stats(logits, partials, targets, N, Vl, 9, 0, 0); },
                      {"9 real", "8 columns"});
  expect_config_error([&] { kernels_->vocab_parallel.partial_stats(logits, partials, targets, N, Vl, Vl, 0, P); },
                      {"rank 2", "2 row blocks"});
  expect_config_error([&] {
    kernels_->vocab_parallel.finish(logits, partials, losses, correct, targets, weights, N, Vl, 9, 0, P, 1.0f);
  }, {"9 real", "8 columns"});
  expect_config_error([&] {
    kernels_->vocab_parallel.finish(logits, partials, losses, correct, targets, weights, N, Vl, Vl, 0, 0, 1.0f);
  }, {"P = 0"});
}

// A buffer of another dtype would be read as garbage; the launchers refuse it.
TEST_P(ActKernelTest, LaunchersRefuseBuffersOfAnotherDType) {
  const DType other = GetParam() == DType::kBF16 ? DType::kF16 : DType::kBF16;
  auto out = upload(other, std::vector<double>(16, 0.0)), bias = act(std::vector<double>(16, 1.0));
  try {
    kernels_->bias.add(out, bias, 1, 16);
    ADD_FAILURE() << "bias_add took a " << device::dtype_name(other) << " buffer";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find(std::string(device::dtype_name(GetParam()))), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, ActKernelTest, ::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
                         [](const ::testing::TestParamInfo<DType>& param_info) {
                           return std::string(device::dtype_name(param_info.param));
                         });

// ---------------------------------------------------------------------------------------------
// LLaMA's layers by finite differences on the device (float32): the layer's own forward, run again
// with one input coordinate moved by +-h, against its own backward. loss = sum(y * r), r random.

// Every coordinate of `values` (what `buffer` holds) moved by +-h on the device, `loss` run after
// each write; the central difference must match `analytic` to float32's accuracy of the loss.
void expect_device_gradient(DeviceTest& t, device::TypedBuffer& buffer, std::vector<double> values,
                            const std::vector<double>& analytic, const std::function<double()>& loss, const char* what) {
  ASSERT_EQ(values.size(), analytic.size()) << what;
  const double h = 1e-2;
  auto write = [&] {
    const std::vector<float> f(values.begin(), values.end());
    buffer.write(t.device_->queue(), f);
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double saved = values[i];
    values[i] = saved + h;
    write();
    const double up = loss();
    values[i] = saved - h;
    write();
    const double down = loss();
    values[i] = saved;
    const double fd = (up - down) / (2 * h), g = analytic[i];
    EXPECT_LE(std::abs(fd - g), 5e-4 + 2e-2 * std::abs(g)) << what << "[" << i << "] fd " << fd << " analytic " << g;
  }
  write();
}

TEST_F(KernelTest, RmsNormLayerMatchesFiniteDifferences) {
  const std::size_t N = 3, C = 19;
  const auto x = random(N * C, 51), delta = random(N * C, 52), w = random(C, 53), r = random(N * C, 54),
             r_sum = random(N * C, 55);
  models::Param scale{upload(w), zeros(C), upload(DType::kF32, w)};
  models::RmsNorm norm(*device_, DType::kF32, scale, C, N, models::RmsNorm::kDefaultEpsilon, "norm");
  models::LayerContext ctx{*device_, *kernels_, *gemm_, 1, N};
  auto xb = upload(DType::kF32, x), deltab = upload(DType::kF32, delta), rb = upload(DType::kF32, r),
       r_sumb = upload(DType::kF32, r_sum), sum = upload(DType::kF32, std::vector<double>(N * C, 0.0));

  norm.forward(ctx, xb);
  const auto dx = download(norm.backward(ctx, rb), N * C);
  const auto dscale = download(scale.grad, C);
  auto loss = [&] { return dot(download(norm.forward(ctx, xb), N * C), r); };
  expect_device_gradient(*this, xb, x, dx, loss, "rmsnorm dx");
  expect_device_gradient(*this, scale.compute, w, dscale, loss, "rmsnorm dscale");

  // Residual fusion as a block uses it: loss = sum(y * r) + sum(sum * r_sum), y = RMSNorm(x + delta);
  // the backward given dresidual = r_sum returns d loss / d x (= d loss / d delta).
  norm.forward_residual(ctx, xb, deltab, sum);
  const auto dx_resid = download(norm.backward(ctx, rb, &r_sumb), N * C);
  auto loss_resid = [&] {
    const auto y = download(norm.forward_residual(ctx, xb, deltab, sum), N * C);
    return dot(y, r) + dot(download(sum, N * C), r_sum);
  };
  expect_device_gradient(*this, xb, x, dx_resid, loss_resid, "rmsnorm residual dx");
  expect_device_gradient(*this, deltab, delta, dx_resid, loss_resid, "rmsnorm residual ddelta");
}

// The float32 layer against the float64 reference (y, dx, dW_gu, dW_down), then by finite
// differences of its own forward over every coordinate of x, W_gu and W_down.
TEST_F(KernelTest, SwigluMlpMatchesTheReferenceAndFiniteDifferences) {
  const int N = 3, C = 8, F = 6;
  const auto x = random(N * C, 91), w_gu = random(2 * F * C, 92, 0.5), w_down = random(C * F, 93, 0.5),
             r = random(N * C, 94);
  models::Param gate_up{upload(w_gu), zeros(2 * F * C), upload(DType::kF32, w_gu)},
      down{upload(w_down), zeros(C * F), upload(DType::kF32, w_down)};
  models::SwigluMlp mlp(*device_, DType::kF32, gate_up, down, C, F, N, "mlp");
  models::LayerContext ctx{*device_, *kernels_, *gemm_, 1, static_cast<std::size_t>(N)};
  auto xb = upload(DType::kF32, x), rb = upload(DType::kF32, r);

  const auto y = download(mlp.forward(ctx, xb), N * C);
  const auto dx = download(mlp.backward(ctx, rb), N * C);
  const auto dw_gu = download(gate_up.grad, 2 * F * C), dw_down = download(down.grad, C * F);
  const auto gu = linear_forward(x, w_gu, {}, N, C, 2 * F);
  const auto h = swiglu_forward(gu, N, F);
  expect_close(y, linear_forward(h, w_down, {}, N, F, C), Tol{1e-5, 1e-4}, "mlp y");
  const auto g_down = linear_backward(h, w_down, r, N, F, C);
  const auto g_gu = linear_backward(x, w_gu, swiglu_backward(gu, g_down.dx, N, F), N, C, 2 * F);
  expect_close(dx, g_gu.dx, Tol{1e-5, 1e-4}, "mlp dx");
  expect_close(dw_gu, g_gu.dw, Tol{1e-5, 1e-4}, "mlp dW_gu");
  expect_close(dw_down, g_down.dw, Tol{1e-5, 1e-4}, "mlp dW_down");

  auto loss = [&] { return dot(download(mlp.forward(ctx, xb), N * C), r); };
  expect_device_gradient(*this, xb, x, dx, loss, "mlp dx");
  expect_device_gradient(*this, gate_up.compute, w_gu, dw_gu, loss, "mlp dW_gu");
  expect_device_gradient(*this, down.compute, w_down, dw_down, loss, "mlp dW_down");
}

TEST_F(KernelTest, GradientNormPartials) {
  const std::size_t n = 10007, chunk = 4096;
  const auto x = random(n, 23);
  auto xb = upload(x), partial = zeros(3);
  kernels_->optimizer.sum_squares(partial, xb, n, chunk);
  const auto p = download(partial, 3);
  double want = 0, got = 0;
  for (double v : x) want += v * v;
  for (double v : p) got += v;
  EXPECT_NEAR(got, want, 1e-4 * want);
}

// n = 777: the GPU set's fours and a tail of 1; also n = 1, 3 and 4 (a tail alone, one four).
TEST_F(KernelTest, AdamUpdateMatchesPraxisFormula) {
  for (const std::size_t n : {777, 1, 3, 4}) {
  SCOPED_TRACE(fmt::format("n = {}", n));
  auto p = random(n, 24), m = random(n, 25, 0.1), g = random(n, 27);
  auto v = random(n, 26, 0.1);
  for (double& x : v) x = std::abs(x);
  auto pb = upload(p), mb = upload(m), vb = upload(v), gb = upload(g);
  const kernels::OptimizerKernels::AdamArgs a{0.5f, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
  kernels_->optimizer.adam(pb, mb, vb, gb, n, a);
  for (std::size_t i = 0; i < n; ++i) {
    const double gi = g[i] * a.grad_scale;
    m[i] = a.decay1 * m[i] + (1 - static_cast<double>(a.decay1)) * gi;
    v[i] = a.decay2 * v[i] + (1 - static_cast<double>(a.decay2)) * gi * gi;
    p[i] -= a.lr * (m[i] / (std::sqrt(v[i]) + a.eps) + a.weight_decay * p[i]);
  }
  expect_close(download(pb, n), p, Tol{1e-6, 1e-5}, "adam params");
  expect_close(download(mb, n), m, Tol{1e-7, 1e-5}, "adam m");
  expect_close(download(vb, n), v, Tol{1e-7, 1e-5}, "adam v");
  }
}

}  // namespace
}  // namespace paxocl::testing
