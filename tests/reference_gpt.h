// A float64 CPU reference of the GPT training computation: loss, logits and the gradient of every
// parameter, written as plainly as possible. It is the independent reference against which the
// OpenCL kernels (per op) and the full model (end to end) are tested, so it favours obviously
// correct loops over speed, and every backward pass is written out by hand.
//
// Model (pre-LayerNorm GPT-2, weights stored (out, in), y = x · W^T + b):
//   x = wte[ids[b,t]] + wpe[t]                                                    (B*T, C)
//   per layer l:
//     a = LN1(x); qkv = a · Wqkv^T + bqkv                (B*T, 3D) laid out [q | k | v], D = NH*hs
//     o = causal multi-head attention(q, k, v)            (B*T, D), head h on dims [h*hs, h*hs+hs)
//     x = x + o · Wproj^T + bproj
//     m = LN2(x); g = GELU_tanh(m · Wfc^T + bfc)          (B*T, H)
//     x = x + g · Wmproj^T + bmproj
//   (an SSM block, BLOCK_KINDS: x = x + SSM(LN1(x)) in place of the attention lines, tests/reference_ssm.h)
//   logits = LNf(x) · wte^T                                (B*T, Vp); columns [V, Vp) are padding,
//                                                          excluded from the softmax
//   loss = sum_n w_n * (logsumexp(logits[n, 0..V)) - logits[n, target_n]) / sum_n w_n
//          (0, with all gradients 0, when sum_n w_n == 0)
//
// Conventions of the per-op functions: every array is row-major float64 in a std::vector, its
// shape given in the comment as (dim0, dim1, ...) with the dimensions passed explicitly; sizes are
// checked and a mismatch throws std::invalid_argument. Backward functions return the gradients of
// a scalar objective with respect to the forward's inputs, given the gradient `dout` with respect
// to its output (nothing is accumulated into caller state).
#pragma once

#include <vector>

#include "models/gpt_config.h"
#include "models/parameter_layout.h"

namespace paxocl::testing {

inline constexpr double kLayerNormEps = 1e-5;

// ---------------------------------------------------------------------------------------------
// Linear layer: y = x · W^T + b.
// x (N, in), W (out, in), b (out) or empty for no bias -> y (N, out).
std::vector<double> linear_forward(const std::vector<double>& x, const std::vector<double>& w,
                                   const std::vector<double>& b, int N, int in, int out);
struct LinearGrads {
  std::vector<double> dx;  // (N, in)   = dy · W
  std::vector<double> dw;  // (out, in) = dy^T · x
  std::vector<double> db;  // (out)     = column sums of dy
};
// dy (N, out); x and W as in the forward.
LinearGrads linear_backward(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& dy,
                            int N, int in, int out);

// ---------------------------------------------------------------------------------------------
// LayerNorm over the last dimension with biased variance:
//   out = (x - mean) * rstd * w + b,  rstd = 1 / sqrt(var + eps).
// x (N, C), w (C), b (C) -> out (N, C), mean (N), rstd (N).
struct LayerNormResult {
  std::vector<double> out, mean, rstd;
};
LayerNormResult layernorm_forward(const std::vector<double>& x, const std::vector<double>& w,
                                  const std::vector<double>& b, int N, int C, double eps = kLayerNormEps);
struct LayerNormGrads {
  std::vector<double> dx;  // (N, C)
  std::vector<double> dw;  // (C)
  std::vector<double> db;  // (C)
};
// dout (N, C), x (N, C), w (C), mean and rstd (N) from the forward.
LayerNormGrads layernorm_backward(const std::vector<double>& dout, const std::vector<double>& x,
                                  const std::vector<double>& w, const std::vector<double>& mean,
                                  const std::vector<double>& rstd, int N, int C);

// ---------------------------------------------------------------------------------------------
// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), element-wise.
std::vector<double> gelu_forward(const std::vector<double>& x);
// dx = dout * GELU'(x); x and dout of equal size.
std::vector<double> gelu_backward(const std::vector<double>& x, const std::vector<double>& dout);

// ---------------------------------------------------------------------------------------------
// LLaMA's ops (for its layers' tests and a LLaMA reference built from them).
// RMSNorm over the last dimension: out = x * rstd * w,  rstd = 1 / sqrt(mean_c(x^2) + eps).
// x (N, C), w (C) -> out (N, C), rstd (N).
struct RmsNormResult {
  std::vector<double> out, rstd;
};
RmsNormResult rmsnorm_forward(const std::vector<double>& x, const std::vector<double>& w, int N, int C,
                              double eps = kLayerNormEps);
struct RmsNormGrads {
  std::vector<double> dx;  // (N, C)
  std::vector<double> dw;  // (C)
};
// dout (N, C), x (N, C), w (C), rstd (N) from the forward.
RmsNormGrads rmsnorm_backward(const std::vector<double>& dout, const std::vector<double>& x,
                              const std::vector<double>& w, const std::vector<double>& rstd, int N, int C);

// SwiGLU's gate: gu (N, 2F) laid out [gate (F) | up (F)] per row -> h (N, F) = silu(gate) * up,
// silu(g) = g * sigmoid(g).
std::vector<double> swiglu_forward(const std::vector<double>& gu, int N, int F);
// dh (N, F) -> dgu (N, 2F): [dh * up * silu'(gate) | dh * silu(gate)].
std::vector<double> swiglu_backward(const std::vector<double>& gu, const std::vector<double>& dh, int N, int F);

// ---------------------------------------------------------------------------------------------
// Causal scaled-dot-product attention, per (batch, head):
//   s[t][u] = q_t · k_u / sqrt(hs) for u <= t;  p[t][.] = softmax_{u <= t}(s[t][.]);
//   out_t = sum_{u <= t} p[t][u] v_u;  lse_t = log sum_{u <= t} exp(s[t][u]) (natural log).
// q, k, v (B, NH, T, hs) -> out (B, NH, T, hs), lse (B, NH, T).
struct AttentionResult {
  std::vector<double> out, lse;
};
AttentionResult attention_forward(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, int B, int NH, int T, int hs);
struct AttentionGrads {
  std::vector<double> dq, dk, dv;  // each (B, NH, T, hs)
};
// out is the forward's output (used for the row term sum_u p dp = dout_t · out_t); dout (B, NH, T, hs).
AttentionGrads attention_backward(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, const std::vector<double>& out,
                                  const std::vector<double>& dout, int B, int NH, int T, int hs);

// Between the fused projection and the heads: qkv (B*T, 3D) laid out [q | k | v] per row, head h
// on dims [h*hs, h*hs+hs) of each part <-> q, k, v (B, NH, T, hs); and the heads' output
// (B, NH, T, hs) <-> concatenated (B*T, D). Pure permutations: each one's backward is its inverse.
struct QkvHeads {
  std::vector<double> q, k, v;  // each (B, NH, T, hs)
};
QkvHeads split_qkv(const std::vector<double>& qkv, int B, int T, int NH, int hs);
std::vector<double> merge_qkv(const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, int B, int T, int NH, int hs);
std::vector<double> merge_heads(const std::vector<double>& heads, int B, int T, int NH, int hs);  // -> (B*T, D)
std::vector<double> split_heads(const std::vector<double>& merged, int B, int T, int NH, int hs);  // -> (B,NH,T,hs)
// Grouped-query attention's fused rows, qkv (B*T, (H + 2*Hkv)*hs) laid out [q | k | v], split
// into per-head arrays (B, H, T, hs) with the kv heads repeated: query head h reads kv head
// h / (H / Hkv) (Hugging Face's repeat_kv); with Hkv = H, split_qkv itself. And its backward:
// gradients (B, H, T, hs) -> dqkv (B*T, (H + 2*Hkv)*hs), each kv head's gradient the sum over the
// query heads that read it.
QkvHeads split_grouped_qkv(const std::vector<double>& qkv, int B, int T, int H, int Hkv, int hs);
std::vector<double> merge_grouped_qkv(const AttentionGrads& d, int B, int T, int H, int Hkv, int hs);

// ---------------------------------------------------------------------------------------------
// Softmax cross-entropy over the first V of Vp columns; columns [V, Vp) are padding and take no
// probability (as if -infinity). logits (N, Vp), targets (N), weights (N) with w >= 0.
// loss = sum_n w_n ce_n / sum_n w_n, ce_n = logsumexp(logits[n, 0..V)) - logits[n, targets[n]].
// Rows with w_n == 0 are ignored entirely (their target is not read, so it may be anything, -1
// included); a row with w_n > 0 needs 0 <= target < V. If sum w == 0: loss 0, dlogits all 0.
struct CrossEntropyResult {
  double loss = 0.0;
  std::vector<double> dlogits;  // (N, Vp): d loss / d logits, 0 in padding columns and in w == 0 rows
  std::vector<double> probs;    // (N, Vp): softmax over [0, V), 0 in padding columns
  std::vector<double> row_ce;   // (N): ce_n, 0 for rows with w_n == 0
};
CrossEntropyResult softmax_cross_entropy(const std::vector<double>& logits, int N, int Vp, int V,
                                         const std::vector<int>& targets, const std::vector<double>& weights);

// ---------------------------------------------------------------------------------------------
// Embeddings: out[b,t] = wte[ids[b,t]] + wpe[t].
// ids (B, T) with 0 <= id < Vp, wte (Vp, C), wpe (maxT, C) with T <= maxT -> out (B*T, C).
std::vector<double> embedding_forward(const std::vector<int>& ids, int B, int T, const std::vector<double>& wte,
                                      const std::vector<double>& wpe, int Vp, int maxT, int C);
struct EmbeddingGrads {
  std::vector<double> dwte;  // (Vp, C): row r gets the sum of dout over the positions with id r
  std::vector<double> dwpe;  // (maxT, C): row t gets the sum of dout over the batch; rows >= T zero
};
// dout (B*T, C).
EmbeddingGrads embedding_backward(const std::vector<int>& ids, int B, int T, const std::vector<double>& dout, int Vp,
                                  int maxT, int C);

// ---------------------------------------------------------------------------------------------
// The full model.
struct ReferenceBatch {
  int B = 0, T = 0;            // T <= MAX_SEQ_LEN
  std::vector<int> ids;        // (B*T), 0 <= id < V
  std::vector<int> targets;    // (B*T), 0 <= target < V where the weight is > 0
  std::vector<float> weights;  // (B*T), >= 0; 0 marks padding
};

struct ReferenceResult {
  double loss = 0.0;
  std::vector<double> grads;   // d loss / d params in the flat layout (layout.total()); gaps zero
  std::vector<double> logits;  // (B*T, Vp); padding columns as computed (y · wte[r] for r >= V)
};

// params: the flat float array of `layout` (layout.total() floats), built for `config`.
ReferenceResult reference_forward_backward(const models::GptConfig& config, const models::ParameterLayout& layout,
                                           const std::vector<float>& params, const ReferenceBatch& batch);

// Forward only, with double parameters (for finite differences); the same computation.
double reference_loss(const models::GptConfig& config, const models::ParameterLayout& layout,
                      const std::vector<double>& params, const ReferenceBatch& batch);

}  // namespace paxocl::testing
