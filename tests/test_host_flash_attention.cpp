// The host's blocked flash attention (kernels_cl/host_flash_attention.h) on host memory, without
// OpenCL: against the float64 reference in every activation dtype and every instruction set this
// CPU has (so an AVX-512 machine tests the code AVX2-only and older CPUs run), over causal blocks
// with a short last one, grouped-query heads, head sizes off the 16-float vectors, decoding against
// a cache, and the same bits whatever the thread count. The layer through OpenCL (CpuFlashAttention)
// runs in test_kernels' attention tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "device/dtype.h"
#include "kernels_cl/host_flash_attention.h"
#include "tests/device_fixture.h"
#include "tests/reference_gpt.h"

namespace paxocl::testing {
namespace {

using device::DType;
using kernels::HostVectorUnit;

// Values held in `dtype` (as a device would hold them) and their exact float64 values.
struct Held {
  std::vector<std::byte> bytes;
  std::vector<double> values;
};
Held held(DType dtype, const std::vector<double>& values) {
  const std::vector<float> f(values.begin(), values.end());
  Held h{device::encode(dtype, f), {}};
  for (float x : device::decode(dtype, h.bytes)) h.values.push_back(x);
  return h;
}
// The first element where two arrays of `dtype` differ, for a failure's message.
std::string first_difference(DType dtype, const std::vector<std::byte>& got, const std::vector<std::byte>& want,
                             std::size_t width) {
  const std::vector<float> g = device::decode(dtype, got), w = device::decode(dtype, want);
  if (g.size() != w.size()) return "sizes " + std::to_string(g.size()) + " and " + std::to_string(w.size());
  std::size_t n = 0, first = g.size();
  for (std::size_t i = 0; i < g.size(); ++i)
    if (std::memcmp(&g[i], &w[i], sizeof(float)) != 0 && n++ == 0) first = i;
  if (n == 0) return "the same";
  return std::to_string(n) + " differ, the first at row " + std::to_string(first / width) + " column " +
         std::to_string(first % width) + ": " + std::to_string(g[first]) + " against " + std::to_string(w[first]);
}

std::vector<double> values_of(DType dtype, const std::vector<std::byte>& bytes) {
  const std::vector<float> f = device::decode(dtype, bytes);
  return {f.begin(), f.end()};
}

// (activation dtype, instruction set); a set this CPU lacks is skipped, by name.
class HostFlashTest : public ::testing::TestWithParam<std::tuple<DType, HostVectorUnit>> {
 public:
  void SetUp() override {
    if (!kernels::host_vector_unit_available(unit())) {
      GTEST_SKIP() << "this CPU lacks " << kernels::host_vector_unit_name(unit());
    }
  }
  DType dtype() const { return std::get<0>(GetParam()); }
  HostVectorUnit unit() const { return std::get<1>(GetParam()); }
  Tol tol(Tol f32) const { return stored(dtype(), f32); }
};

// Training forward and backward, B sequences of T tokens, H query heads over Hkv kv heads.
struct Training {
  std::vector<std::byte> out, dqkv;
  std::vector<float> lse;
};
Training run_training(DType dtype, HostVectorUnit unit, const Held& qkv, const Held& dout, int B, int H, int Hkv,
                      int T, int hs, unsigned threads, std::optional<kernels::HostFlashBackwardForm> form = std::nullopt,
                      std::size_t key_block = kernels::kHostFlashKeyBlock) {
  const std::size_t D = H * hs, W = (H + 2 * Hkv) * hs, N = B * T, size = device::dtype_size(dtype);
  const kernels::AttentionHeads heads{std::size_t(H), std::size_t(Hkv), std::size_t(hs)};
  Training r{std::vector<std::byte>(N * D * size), std::vector<std::byte>(N * W * size),
             std::vector<float>(B * H * T, -1.0f)};
  kernels::host_flash_forward({.q = qkv.bytes.data(), .q_stride = W, .kv = qkv.bytes.data(),
                               .kv_rows_per_sequence = std::size_t(T), .kv_stride = W, .k_col = D,
                               .v_col = D + Hkv * hs, .out = r.out.data(), .out_stride = D, .lse = r.lse.data(),
                               .stats_stride = std::size_t(T), .act = dtype, .heads = heads, .B = std::size_t(B),
                               .queries = std::size_t(T), .p0 = 0, .unit = unit},
                              threads);
  kernels::host_flash_backward({.qkv = qkv.bytes.data(), .width = W, .k_col = D, .v_col = D + Hkv * hs,
                                .out = r.out.data(), .dout = dout.bytes.data(), .lse = r.lse.data(),
                                .dqkv = r.dqkv.data(), .act = dtype, .heads = heads, .B = std::size_t(B),
                                .T = std::size_t(T), .key_block = key_block, .unit = unit, .form = form},
                               threads);
  return r;
}

void check_training(DType dtype, HostVectorUnit unit, Tol out_tol, Tol dqkv_tol, int B, int H, int Hkv, int T, int hs,
                    std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "B " << B << ", H " << H << ", Hkv " << Hkv << ", T " << T << ", hs " << hs);
  const int D = H * hs, W = (H + 2 * Hkv) * hs, N = B * T;
  const Held qkv = held(dtype, DeviceTest::random(N * W, seed)), dout = held(dtype, DeviceTest::random(N * D, seed + 1));
  using kernels::HostFlashBackwardForm;
  const Training got = run_training(dtype, unit, qkv, dout, B, H, Hkv, T, hs, 2, HostFlashBackwardForm::kFused);
  const auto out = values_of(dtype, got.out), dqkv = values_of(dtype, got.dqkv);
  // The split form recomputes each score in a task of its own: the same calls, so the same bits.
  const Training split = run_training(dtype, unit, qkv, dout, B, H, Hkv, T, hs, 2, HostFlashBackwardForm::kSplit);
  EXPECT_TRUE(split.dqkv == got.dqkv) << "split backward: " << first_difference(dtype, split.dqkv, got.dqkv, W);
  // Blocks of 16 keys: many per row, one cut inside the 64-query blocks.
  const Training fused16 = run_training(dtype, unit, qkv, dout, B, H, Hkv, T, hs, 2, HostFlashBackwardForm::kFused, 16);
  const Training split16 = run_training(dtype, unit, qkv, dout, B, H, Hkv, T, hs, 3, HostFlashBackwardForm::kSplit, 16);
  EXPECT_TRUE(split16.dqkv == fused16.dqkv)
      << "split backward, blocks of 16 keys: " << first_difference(dtype, split16.dqkv, fused16.dqkv, W);

  const QkvHeads h = split_grouped_qkv(qkv.values, B, T, H, Hkv, hs);
  const AttentionResult ref = attention_forward(h.q, h.k, h.v, B, H, T, hs);
  expect_close(out, merge_heads(ref.out, B, T, H, hs), out_tol, "host flash out");
  expect_close(std::vector<double>(got.lse.begin(), got.lse.end()), ref.lse, Tol{1e-5, 1e-5}, "host flash lse");
  // The backward's row term dO . o uses the output as stored; so does the reference.
  const AttentionGrads g = attention_backward(h.q, h.k, h.v, split_heads(out, B, T, H, hs),
                                              split_heads(dout.values, B, T, H, hs), B, H, T, hs);
  const std::vector<double> want = merge_grouped_qkv(g, B, T, H, Hkv, hs);
  expect_close(dqkv, want, dqkv_tol, "host flash dqkv");
  expect_close(values_of(dtype, fused16.dqkv), want, dqkv_tol, "host flash dqkv, blocks of 16 keys");
}

TEST_P(HostFlashTest, TrainingMatchesTheFloat64Reference) {
  const Tol out = tol({2e-5, 1e-4}), dqkv = tol({2e-5, 1e-3});
  std::uint64_t seed = 10;
  check_training(dtype(), unit(), out, dqkv, 3, 2, 2, 1, 8, seed += 2);     // T = 1
  check_training(dtype(), unit(), out, dqkv, 2, 3, 3, 7, 5, seed += 2);     // rows shorter than a vector
  check_training(dtype(), unit(), out, dqkv, 2, 2, 2, 130, 13, seed += 2);  // 3 blocks, the last of 2 queries
  check_training(dtype(), unit(), out, dqkv, 1, 4, 2, 77, 16, seed += 2);   // grouped-query heads
  check_training(dtype(), unit(), out, dqkv, 1, 4, 1, 300, 64, seed += 2);  // multi-query, GPT-2's head size
}

// Decoding: Q queries at positions p0 .. p0+Q-1 (q rows at a stride of their own) against a cache
// of more rows than they reach, as CausalAttention::decode passes them.
TEST_P(HostFlashTest, DecodingAgainstACacheMatchesTheFloat64Reference) {
  const DType dtype = this->dtype();
  const int B = 2, H = 4, Hkv = 2, T = 90, hs = 24, D = H * hs, W = (H + 2 * Hkv) * hs, p0 = 70, Q = 13;
  const int q_stride = D + 3, cache_rows = 128, KV = 2 * Hkv * hs;
  const std::vector<double> qkv = DeviceTest::random(B * T * W, 300);
  std::vector<double> q(B * Q * q_stride, 0.0), cache(B * cache_rows * KV, 0.0);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      if (t >= p0 && t < p0 + Q)
        for (int c = 0; c < D; ++c) q[(b * Q + t - p0) * q_stride + c] = qkv[(b * T + t) * W + c];
      for (int c = 0; c < KV; ++c) cache[(b * cache_rows + t) * KV + c] = qkv[(b * T + t) * W + D + c];
    }
  const Held q_held = held(dtype, q), cache_held = held(dtype, cache), qkv_held = held(dtype, qkv);
  std::vector<std::byte> out(B * Q * D * device::dtype_size(dtype));
  std::vector<float> lse(B * H * cache_rows, -1.0f);
  kernels::host_flash_forward({.q = q_held.bytes.data(), .q_stride = std::size_t(q_stride), .kv = cache_held.bytes.data(),
                               .kv_rows_per_sequence = std::size_t(cache_rows), .kv_stride = std::size_t(KV), .k_col = 0,
                               .v_col = std::size_t(Hkv * hs), .out = out.data(), .out_stride = std::size_t(D),
                               .lse = lse.data(), .stats_stride = std::size_t(cache_rows), .act = dtype,
                               .heads = {std::size_t(H), std::size_t(Hkv), std::size_t(hs)}, .B = std::size_t(B),
                               .queries = std::size_t(Q), .p0 = std::size_t(p0), .unit = unit()},
                              2);
  const QkvHeads h = split_grouped_qkv(qkv_held.values, B, T, H, Hkv, hs);
  const AttentionResult ref = attention_forward(h.q, h.k, h.v, B, H, T, hs);
  const auto full = merge_heads(ref.out, B, T, H, hs);
  std::vector<double> want, want_lse, got_lse;
  for (int b = 0; b < B; ++b)
    for (int t = p0; t < p0 + Q; ++t)
      for (int c = 0; c < D; ++c) want.push_back(full[(b * T + t) * D + c]);
  for (int b = 0; b < B; ++b)
    for (int hh = 0; hh < H; ++hh)
      for (int t = p0; t < p0 + Q; ++t) {
        want_lse.push_back(ref.lse[(b * H + hh) * T + t]);
        got_lse.push_back(lse[(b * H + hh) * cache_rows + t]);
      }
  expect_close(values_of(dtype, out), want, tol({2e-5, 1e-4}), "host flash decode out");
  expect_close(got_lse, want_lse, Tol{1e-5, 1e-5}, "host flash decode lse");
  // Only the decoded positions' statistics are written.
  EXPECT_EQ(lse[p0 - 1], -1.0f);
  EXPECT_EQ(lse[p0 + Q], -1.0f);
}

// Each task's result is its own and dk, dv are summed inside one task: 1, 2, 3, 5 and 9 threads
// give the same bits. B*H = 8 forward tasks, a (sequence, head) each, keep 1 and 2 threads busy;
// 3, 5 and 9 threads get a task per block of 64 queries instead (3 blocks here). B*Hkv = 4
// backward tasks of the fused form keep up to 5 threads busy enough; 9 threads get the split form.
TEST_P(HostFlashTest, ResultsDoNotDependOnTheThreadCount) {
  const DType dtype = this->dtype();
  const int B = 2, H = 4, Hkv = 2, T = 150, hs = 16, D = H * hs, W = (H + 2 * Hkv) * hs;
  using kernels::HostFlashBackwardForm;
  ASSERT_EQ(kernels::host_flash_backward_form(B * Hkv, 5), HostFlashBackwardForm::kFused);
  ASSERT_EQ(kernels::host_flash_backward_form(B * Hkv, 9), HostFlashBackwardForm::kSplit);
  const Held qkv = held(dtype, DeviceTest::random(B * T * W, 400)), dout = held(dtype, DeviceTest::random(B * T * D, 401));
  const Training one = run_training(dtype, unit(), qkv, dout, B, H, Hkv, T, hs, 1);
  for (const unsigned threads : {2u, 3u, 5u, 9u}) {
    const Training other = run_training(dtype, unit(), qkv, dout, B, H, Hkv, T, hs, threads);
    EXPECT_EQ(other.out, one.out) << threads << " threads";
    EXPECT_EQ(other.lse, one.lse) << threads << " threads";
    EXPECT_EQ(other.dqkv, one.dqkv) << threads << " threads";
  }
}

// The fused form's tasks all take as long: split where its last round would leave threads idle
// for longer than the split form's extra work (kHostFlashSplitCost) takes.
TEST(HostFlashBackwardForm, SplitWhereTheFusedTasksLeaveThreadsIdle) {
  using kernels::HostFlashBackwardForm;
  using kernels::host_flash_backward_form;
  EXPECT_EQ(host_flash_backward_form(48, 1), HostFlashBackwardForm::kFused);
  EXPECT_EQ(host_flash_backward_form(1, 1), HostFlashBackwardForm::kFused);
  EXPECT_EQ(host_flash_backward_form(0, 2), HostFlashBackwardForm::kFused);
  EXPECT_EQ(host_flash_backward_form(1, 2), HostFlashBackwardForm::kSplit);      // half the threads idle
  EXPECT_EQ(host_flash_backward_form(3, 2), HostFlashBackwardForm::kFused);      // a quarter idle
  EXPECT_EQ(host_flash_backward_form(48, 32), HostFlashBackwardForm::kFused);    // GPT-2 at B4: a quarter idle
  EXPECT_EQ(host_flash_backward_form(33, 32), HostFlashBackwardForm::kSplit);    // a second round of one task
  EXPECT_EQ(host_flash_backward_form(8, 64), HostFlashBackwardForm::kSplit);     // LLaMA's 8 kv heads at B1
  EXPECT_EQ(host_flash_backward_form(256, 64), HostFlashBackwardForm::kFused);
}

const char* unit_label(HostVectorUnit unit) {
  return unit == HostVectorUnit::kAvx512 ? "avx512" : unit == HostVectorUnit::kAvx2 ? "avx2" : "baseline";
}

INSTANTIATE_TEST_SUITE_P(DTypesAndUnits, HostFlashTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
                                            ::testing::Values(HostVectorUnit::kAvx512, HostVectorUnit::kAvx2,
                                                              HostVectorUnit::kBaseline)),
                         [](const auto& p) {
                           return std::string(device::dtype_name(std::get<0>(p.param))) + "_" +
                                  unit_label(std::get<1>(p.param));
                         });

}  // namespace
}  // namespace paxocl::testing
