// `pax-ocl bench kernels --roofline` (bench/suite/roofline.*): the bytes and FLOPs it counts for a
// tiny GPT step against formulas worked out by hand from the kernels' arguments, the lower bound
// it derives, and the command's exit status and output.
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/suite/roofline.h"
#include "tests/test_support.h"

namespace paxocl::bench {
namespace {

// L1 C8 NH2 hs4 H32 V16 (padded to Vp 128), T4 B2: N = 8 rows.
models::GptConfig tiny() {
  models::GptConfig c;
  c.num_layers = 1;
  c.model_dims = 8;
  c.hidden_dims = 32;
  c.num_heads = 2;
  c.dims_per_head = 4;
  c.max_seq_len = 4;
  c.vocab_size = 16;
  return c;
}

const KernelTraffic& find(const std::vector<KernelTraffic>& ks, const std::string& name) {
  const auto it = std::find_if(ks.begin(), ks.end(), [&](const KernelTraffic& k) { return k.kernel == name; });
  if (it == ks.end()) throw std::runtime_error("no kernel " + name);
  return *it;
}

TEST(Roofline, CountsTheTinyStepsBytesAndFlopsByHand) {
  const auto ks = step_kernel_traffic(tiny(), 2, 4);
  const double N = 8, C = 8, D = 8, H = 32, Vp = 128, T = 4, L = 1;
  // LayerNorm forward: x (N, C) and w, b (C) in, y (N, C) and mean, rstd (N) out; ln1 and lnf.
  const KernelTraffic& ln = find(ks, "layernorm_forward");
  EXPECT_EQ(ln.bytes, 4 * (N * C + 2 * C + N * C + 2 * N));
  EXPECT_EQ(ln.bytes, 640);
  EXPECT_EQ(ln.calls, 2u);
  EXPECT_EQ(find(ks, "layernorm_backward_params").calls, 3u);  // ln1, ln2, lnf
  // Cross-entropy over the padded vocabulary: logits read, dlogits written in place; targets,
  // weights read; losses, correct written.
  EXPECT_EQ(find(ks, "softmax_cross_entropy").bytes, 4 * (2 * N * Vp + 4 * N));
  EXPECT_EQ(find(ks, "softmax_cross_entropy").bytes, 8320);
  // Adam: params, m, v, grads read; params, m, v written; P = wte + wpe + one block + lnf.
  const double P = Vp * C + T * C + L * (2 * C + 3 * D * C + 3 * D + D * C + C + 2 * C + H * C + H + C * H + C) + 2 * C;
  EXPECT_EQ(P, 1944);
  EXPECT_EQ(find(ks, "adam_update").bytes, 28 * P);
  EXPECT_EQ(find(ks, "fill_f32 (gradients)").bytes, 4 * P);
  // Flash attention forward: qkv (N, 3D) read, out (N, D) and lse (B, NH, T) written; FLOPs over
  // the causal pairs: 2 heads x 2 sequences x 10 pairs x (4 hs + 6).
  EXPECT_EQ(find(ks, "flash_attention_forward").bytes, 4 * (N * 3 * D + N * D + 2 * 2 * T));
  EXPECT_EQ(find(ks, "flash_attention_forward").flops, 880);
  // GEMMs: A and B read, C written; the weight gradient (float32) accumulated: read and written.
  // Float32: the bias (and for fc GELU's output) in the forward GEMM's epilogue, no pass of its own.
  EXPECT_EQ(find(ks, "GEMM qkv fwd").bytes, 4 * (N * C + 3 * D * C + N * 3 * D + 3 * D));
  EXPECT_EQ(find(ks, "GEMM qkv fwd").bytes, 1888);
  EXPECT_EQ(find(ks, "GEMM fc fwd").bytes, 4 * (N * C + H * C + 2 * N * H + H));
  EXPECT_EQ(find(ks, "GEMM fc.proj dX").bytes, 4 * (N * C + C * H + 2 * N * H));  // and z, for gelu'(z)
  EXPECT_EQ(find(ks, "GEMM fc dX").bytes, 4 * (N * H + H * C + N * C));
  for (const char* gone : {"bias_add (qkv)", "bias_add (C)", "bias_gelu_forward", "gelu_backward"}) {
    EXPECT_THROW(find(ks, gone), std::runtime_error) << gone;
  }
  EXPECT_EQ(find(ks, "GEMM lm head dW").bytes, 4 * (Vp * N + N * C) + 8 * Vp * C);
  EXPECT_EQ(find(ks, "GEMM lm head dW").flops, 2 * Vp * C * N);
  // A 16-bit activation dtype halves the activations and adds the parameters' cast.
  const auto half = step_kernel_traffic(tiny(), 2, 4, 2);
  EXPECT_EQ(find(half, "layernorm_forward").bytes, 2 * (N * C + 2 * C + N * C) + 4 * 2 * N);
  EXPECT_EQ(find(half, "cast_to_act (parameters)").bytes, 6 * P);
  // 16-bit: the tensor-core GEMM has no epilogue, so bias and GELU keep their passes.
  EXPECT_EQ(find(half, "bias_gelu_forward").bytes, 2 * (3 * N * H + H));
  EXPECT_EQ(find(half, "gelu_backward").bytes, 2 * 3 * N * H);
  EXPECT_EQ(find(half, "GEMM qkv fwd").bytes, 2 * (N * C + 3 * D * C + N * 3 * D));
}

TEST(Roofline, TheBoundIsTheSlowerOfMemoryAndArithmetic) {
  const RooflinePeak peak{"test", 1e9, 1e10};
  EXPECT_DOUBLE_EQ(lower_bound_seconds({"m", "g", 1, 2e9, 1e9, false}, peak), 2.0);   // memory: 2 s vs 0.1 s
  EXPECT_DOUBLE_EQ(lower_bound_seconds({"c", "g", 1, 1e6, 3e10, true}, peak), 3.0);   // compute: 1 ms vs 3 s
}

TEST(Roofline, TheCommandPrintsBothStepsAndRefusesAnythingElse) {
  const std::string binary = PAXOCL_BINARY;
  // No OpenCL platform: the table needs none.
  const testing::CommandResult r = testing::run_command("OCL_ICD_VENDORS=/nonexistent " + binary + " bench kernels --roofline");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("### GPT-2 124M"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("### bench_train_step D"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| softmax_cross_entropy | cross-entropy | 1 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of PyTorch fp32's step (27.6 ms"), std::string::npos) << r.out;
  EXPECT_EQ(testing::run_command(binary + " bench kernels --roofline").out, r.out);  // deterministic
  const testing::CommandResult bare = testing::run_command(binary + " bench kernels");
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("pax-ocl bench kernels --roofline"), std::string::npos) << bare.err;
  EXPECT_EQ(testing::run_command(binary + " bench gemm --roofline").exit_code, 2);
}

}  // namespace
}  // namespace paxocl::bench
