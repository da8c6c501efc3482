#include "bench/suite/roofline.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "bench/suite/benches.h"

namespace paxocl::bench {

namespace {

// FLOPs per element of the non-GEMM kernels (adds, multiplies, an exp or rsqrt as one each; GELU's
// tanh as a few). Only the order of magnitude matters: at 2.6 TB/s and 67 TFLOP/s a kernel is
// memory-bound below ~26 FLOPs per byte, and none of these comes near.
constexpr double kLayerNormForward = 8, kLayerNormBackwardDx = 10, kLayerNormBackwardParams = 5;
constexpr double kGeluForward = 16, kGeluBackward = 24, kCrossEntropy = 8, kAdam = 14;
// Flash attention per (query, key) pair of the causal triangle: the forward's q.k and p.v (2 hs
// each) and its online softmax; the backward's dq pass q.k, dout.v and ds.k, its dk/dv pass q.k,
// dout.v, p.dout and ds.q (2 hs each: q.k and dout.v are computed in both, for determinism).
constexpr double kFlashForwardExtra = 6, kFlashBackwardExtra = 8;

}  // namespace

std::vector<KernelTraffic> step_kernel_traffic(const models::GptConfig& model, std::size_t batch, std::size_t seq_len,
                                               std::size_t act_bytes) {
  const double a = static_cast<double>(act_bytes), f = 4, i = 4;  // act, float32, int32 bytes
  const auto L = static_cast<std::size_t>(model.num_layers);
  const double B = static_cast<double>(batch), T = static_cast<double>(seq_len), N = B * T,
               C = model.model_dims, D = model.attention_dims(), H = model.hidden_dims, NH = model.num_heads,
               hs = model.dims_per_head, Vp = model.padded_vocab();
  double P = 0;  // parameters (wpe at MAX_SEQ_LEN rows)
  for (const models::TensorDef& t : models::tensor_defs_of(model)) {
    double n = 1;
    for (std::int64_t d : t.shape) n *= static_cast<double>(d);
    P += n;
  }
  const double pairs = NH * B * T * (T + 1) / 2;  // causal (query, key) pairs over every head
  const double stats = B * NH * T;                 // lse / delta floats
  const double U = std::min(N, static_cast<double>(model.vocab_size));  // distinct tokens, at most
  const double wpe_rows = T;

  // Float32 activations: Linear's bias and GELU run in the direct GEMM's epilogue (gemm.h's
  // GemmEpilogue), no element-wise pass; the forward GEMMs read the bias and fc's writes G beside
  // C, and the MLP's dx GEMM reads z for gelu'(z). 16-bit operands take the tensor-core GEMM on an
  // H100, which has no epilogue: the passes stay.
  const bool fused = act_bytes == 4;
  std::vector<KernelTraffic> k;
  auto add = [&](std::string kernel, std::string group, std::size_t calls, double bytes, double flops) {
    k.push_back({std::move(kernel), std::move(group), calls, bytes, flops, false});
  };
  // Step start: gradients zeroed; with a 16-bit act dtype the parameters cast to their compute copy.
  add("fill_f32 (gradients)", "optimizer", 1, P * f, 0);
  if (act_bytes != 4) add("cast_to_act (parameters)", "elementwise", 1, P * (f + a), P);
  // Forward.
  add("embedding_forward", "elementwise", 1, N * i + N * C * a + wpe_rows * C * a + N * C * a, N * C);
  add("layernorm_forward", "layernorm", L + 1, N * C * a + 2 * C * a + N * C * a + 2 * N * f,
      kLayerNormForward * N * C);
  if (!fused) add("bias_add (qkv)", "elementwise", L, 2 * N * 3 * D * a + 3 * D * a, N * 3 * D);
  add("flash_attention_forward", "attention", L, N * 3 * D * a + N * D * a + stats * f,
      pairs * (4 * hs + kFlashForwardExtra));
  if (!fused) add("bias_add (C)", "elementwise", 2 * L, 2 * N * C * a + C * a, N * C);
  add("layernorm_forward_residual", "layernorm", L, 2 * N * C * a + 2 * C * a + 2 * N * C * a + 2 * N * f,
      (kLayerNormForward + 1) * N * C);
  if (!fused) add("bias_gelu_forward", "elementwise", L, N * H * a + H * a + 2 * N * H * a, (kGeluForward + 1) * N * H);
  add("residual_add", "elementwise", L, 3 * N * C * a, N * C);
  add("softmax_cross_entropy", "cross-entropy", 1, 2 * N * Vp * a + N * i + N * f + 2 * N * f, kCrossEntropy * N * Vp);
  // Backward.
  add("layernorm_backward_dx (lnf)", "layernorm", 1, 2 * N * C * a + C * a + 2 * N * f + N * C * a,
      kLayerNormBackwardDx * N * C);
  add("layernorm_backward_params", "layernorm", 2 * L + 1, 2 * N * C * a + 2 * N * f + 2 * 2 * C * f,
      kLayerNormBackwardParams * N * C);
  add("bias_grad (C)", "optimizer", 2 * L, N * C * a + 2 * C * f, N * C);
  if (!fused) add("gelu_backward", "elementwise", L, 3 * N * H * a, kGeluBackward * N * H);
  add("bias_grad (H)", "optimizer", L, N * H * a + 2 * H * f, N * H);
  add("layernorm_backward_dx (+ residual)", "layernorm", 2 * L, 3 * N * C * a + C * a + 2 * N * f + N * C * a,
      (kLayerNormBackwardDx + 1) * N * C);
  // dq first (it also forms delta = dout . out): reads q, k, v, out, dout and lse; writes dq, delta.
  add("flash_attention_backward_dq", "attention", L, N * 3 * D * a + 2 * N * D * a + 2 * stats * f + N * D * a,
      pairs * (6 * hs + kFlashBackwardExtra) + 2 * N * D);
  // dk, dv: reads q, k, v, dout, lse and delta; writes dk, dv (q.k recomputed a second time).
  add("flash_attention_backward_dkdv", "attention", L, N * 3 * D * a + N * D * a + 2 * stats * f + 2 * N * D * a,
      pairs * (8 * hs + kFlashBackwardExtra));
  add("bias_grad (qkv)", "optimizer", L, N * 3 * D * a + 2 * 3 * D * f, N * 3 * D);
  add("embedding_backward_wpe", "elementwise", 1, N * C * a + 2 * wpe_rows * C * f, N * C);
  add("embedding_backward_wte", "elementwise", 1, N * C * a + (2 * U + 1 + N) * i + 2 * U * C * f, N * C);
  // Adam: the gradient norm for clipping, then one pass over the flat buffers.
  add("sum_squares_partial", "optimizer", 1, P * f, 2 * P);
  add("adam_update", "optimizer", 1, 4 * P * f + 3 * P * f, kAdam * P);

  // The GEMMs of the Linear layers and the LM head (attention's are inside flash attention):
  // A and B read once, C written (the weight gradients, float32, accumulated: read and written).
  models::GptConfig shapes = model;
  shapes.max_seq_len = static_cast<int>(seq_len);
  for (const GemmCase& g : model_gemm_cases(shapes, batch)) {
    const bool dw = g.name.ends_with(" dW");
    if (!dw && !g.name.ends_with(" fwd") && !g.name.ends_with(" dX")) continue;
    const double m = static_cast<double>(g.shape.m), n = static_cast<double>(g.shape.n),
                 kk = static_cast<double>(g.shape.k), batches = static_cast<double>(g.shape.batch);
    double bytes = batches * ((m * kk + kk * n) * a + m * n * (dw ? 2 * f : a));
    if (fused && g.name.ends_with(" fwd") && !g.name.starts_with("lm head")) bytes += n * a;  // the bias
    if (fused && g.name == "fc fwd") bytes += m * n * a;                                       // G = gelu(C)
    if (fused && g.name == "fc.proj dX") bytes += m * n * a;                                   // z, for gelu'(z)
    k.push_back({"GEMM " + g.name, "GEMM", g.count, bytes, 2 * m * n * kk * batches, true});
  }
  return k;
}

RooflinePeak h100_fp32() { return {"H100 SXM (2.6 TB/s measured, 67 TFLOP/s fp32)", 2.6e12, 67e12}; }

double lower_bound_seconds(const KernelTraffic& k, const RooflinePeak& peak) {
  return std::max(k.bytes / peak.bytes_per_second, k.flops / peak.flops_per_second);
}

std::vector<RooflineCase> h100_roofline_cases() {
  auto gpt2 = [](int seq_len) {
    models::GptConfig c;
    c.num_layers = 12;
    c.model_dims = 768;
    c.hidden_dims = 4 * 768;
    c.num_heads = 12;
    c.dims_per_head = 64;
    c.max_seq_len = seq_len;
    c.vocab_size = 50304;
    return c;
  };
  // ../shared/gpu/H100.md (2026-11-22): PyTorch 2.11 eager fp32 on the same H100, device ms per step.
  return {
      {"GPT-2 124M (L12 C768 NH12 V50304), T1024 B8", gpt2(1024), 8, 1024, 162.0,
       {{"attention", "19.6 (fused attention fwd + bwd)"}, {"GEMM", "~128"}}},
      {"bench_train_step D (L12 C768 NH12 V50304), T256 B4", gpt2(256), 4, 256, 27.6,
       {{"layernorm", "< 0.5 (none in its top 25)"},
        {"cross-entropy", "0.58 (softmax fwd + bwd)"},
        {"attention", "1.5 (fused attention fwd + bwd)"},
        {"optimizer", "~3.5 (multi_tensor_apply: Adam, zeroing; with bias grads)"},
        {"GEMM", "~21 (cuBLAS/CUTLASS SIMT SGEMM)"}}},
  };
}

std::string roofline_markdown(const RooflineCase& c, const RooflinePeak& peak) {
  const std::vector<KernelTraffic> kernels = step_kernel_traffic(c.model, c.batch, c.seq_len);
  std::string out = fmt::format("### {}\n\nLower bound per call on {}: max(bytes / bandwidth, FLOPs / peak); "
                                "float32 activations, each input read once and each output written once.\n\n",
                                c.title, peak.name);
  out += "| kernel | group | calls/step | MB/call | MFLOP/call | bound us/call | bound ms/step | bound by |\n";
  out += "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n";
  double non_gemm = 0, gemm = 0, non_gemm_bytes = 0;
  std::size_t non_gemm_calls = 0, gemm_calls = 0;
  std::map<std::string, double> groups;
  std::vector<std::string> group_order;
  for (const KernelTraffic& k : kernels) {
    const double s = lower_bound_seconds(k, peak), step_ms = 1e3 * s * static_cast<double>(k.calls);
    const bool memory = k.bytes / peak.bytes_per_second >= k.flops / peak.flops_per_second;
    out += fmt::format("| {} | {} | {} | {:.3f} | {:.3f} | {:.2f} | {:.4f} | {} |\n", k.kernel, k.group, k.calls,
                       k.bytes / 1e6, k.flops / 1e6, 1e6 * s, step_ms, memory ? "memory" : "compute");
    (k.gemm ? gemm : non_gemm) += step_ms;
    (k.gemm ? gemm_calls : non_gemm_calls) += k.calls;
    if (!k.gemm) non_gemm_bytes += k.bytes * static_cast<double>(k.calls);
    if (!groups.contains(k.group)) group_order.push_back(k.group);
    groups[k.group] += step_ms;
  }
  out += fmt::format("| **non-GEMM kernels** | | {} | | | | **{:.3f}** | |\n", non_gemm_calls, non_gemm);
  out += fmt::format("| **GEMMs** | | {} | | | | **{:.3f}** | |\n\n", gemm_calls, gemm);
  out += fmt::format("The non-GEMM kernels move {:.1f} MB per step at least.\n\n", non_gemm_bytes / 1e6);
  out += "| group | bound ms/step | PyTorch fp32 measured, ms/step |\n| --- | ---: | --- |\n";
  for (const std::string& g : group_order) {
    const auto it = std::find_if(c.pytorch_group_ms.begin(), c.pytorch_group_ms.end(),
                                 [&](const auto& p) { return p.first == g; });
    out += fmt::format("| {} | {:.3f} | {} |\n", g, groups[g], it == c.pytorch_group_ms.end() ? "-" : it->second);
  }
  if (c.pytorch_step_ms > 0) {
    out += fmt::format("| whole step | {:.3f} | {:.1f} |\n\n", non_gemm + gemm, c.pytorch_step_ms);
    out += fmt::format("Non-GEMM bound: {:.3f} ms = {:.1f}% of PyTorch fp32's step ({:.1f} ms; target <= 10%).\n",
                       non_gemm, 100 * non_gemm / c.pytorch_step_ms, c.pytorch_step_ms);
  } else {
    out += fmt::format("| whole step | {:.3f} | - |\n", non_gemm + gemm);
  }
  return out;
}

}  // namespace paxocl::bench
