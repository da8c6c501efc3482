// A float64 CPU reference of the LLaMA training computation (loss, logits, the gradient of every
// parameter), as plain as reference_gpt.h and built from its per-op functions where the two
// families share an op (linear, causal attention, cross-entropy). Written from Hugging Face's
// modeling_llama.py:
//   x = embed[ids]                                                                   (B*T, C)
//   per layer l:
//     a = RMSNorm(x) * attn_norm;  qkv = a · Wqkv^T     (B*T, (H + 2 Hkv) hs) rows [q | k | v]
//     q, k = RoPE(q, k) at positions t (half-split pairs (i, i + hs/2), angle t * base^(-2i/hs))
//     o = causal attention(q, repeat_kv(k), repeat_kv(v))   query head h reads kv head h / (H/Hkv)
//     x = x + o · Wproj^T
//     m = RMSNorm(x) * mlp_norm;  [g | u] = m · Wgate_up^T;  x = x + (silu(g) * u) · Wdown^T
//   logits = (RMSNorm(x) * norm) · lm_head^T            (B*T, Vp); softmax over the first V columns
//   loss = the weighted mean cross-entropy, as reference_gpt.h.
// Conventions as reference_gpt.h: row-major float64 vectors, explicit dimensions, sizes checked.
#pragma once

#include <vector>

#include "models/llama_config.h"
#include "models/parameter_layout.h"
#include "tests/reference_gpt.h"

namespace paxocl::testing {

// RMSNorm and SwiGLU: reference_gpt.h.

// Rotary embedding of heads (B, NH, T, hs) at positions offset .. offset+T-1; `inverse` rotates by
// the negative angles, which is the backward (the rotation is orthogonal).
std::vector<double> rope_rotate(const std::vector<double>& heads, int B, int NH, int T, int hs, double base,
                                int position_offset = 0, bool inverse = false);

// The fused projection's rows [q (H heads) | k (Hkv) | v (Hkv)] <-> q (B, H, T, hs), k, v (B, Hkv, T, hs).
QkvHeads split_qkv_grouped(const std::vector<double>& qkv, int B, int T, int H, int Hkv, int hs);
std::vector<double> merge_qkv_grouped(const std::vector<double>& q, const std::vector<double>& k,
                                      const std::vector<double>& v, int B, int T, int H, int Hkv, int hs);
// HF's repeat_kv: (B, Hkv, T, hs) -> (B, H, T, hs), head h = kv head h / (H/Hkv); its backward sums
// each group's gradients back onto the kv head.
std::vector<double> repeat_kv(const std::vector<double>& kv, int B, int Hkv, int H, int T, int hs);
std::vector<double> sum_kv_groups(const std::vector<double>& dkv, int B, int Hkv, int H, int T, int hs);

// The full model; params as the flat float array of `layout` built for `config`.
ReferenceResult reference_forward_backward(const models::LlamaConfig& config, const models::ParameterLayout& layout,
                                           const std::vector<float>& params, const ReferenceBatch& batch);
double reference_loss(const models::LlamaConfig& config, const models::ParameterLayout& layout,
                      const std::vector<double>& params, const ReferenceBatch& batch);

}  // namespace paxocl::testing
