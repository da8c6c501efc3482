// Launchers for the models' non-GEMM kernels (the GPT's; LLaMA's RMSNorm and SwiGLU), one class
// per .cl program. Shapes are row-major; N = B*T rows. Gradient kernels named *_grad /
// backward_params and the norms' weight gradients ACCUMULATE (+=) into parameter
// gradients, so tied weights and several contributions add up; the model zeroes gradients once
// per step. Everything else overwrites its output.
// Mixed precision (device/dtype.h): each program is built for one activation dtype `act`.
// Activations, their gradients and the weights as a step reads them (the model's per-step copy)
// are TypedBuffers of that dtype (a launcher given another dtype throws DeviceError); parameter
// gradients, LayerNorm statistics, attention scores and row statistics, losses and weights stay
// FloatBuffers, and every kernel computes in float32.
#pragma once

#include <cstdint>

#include "device/typed_buffer.h"
#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

using FloatBuffer = device::Buffer<float>;
using IntBuffer = device::Buffer<cl_int>;
using ActBuffer = device::TypedBuffer;

// The GPU twins' parameter gradients as two-stage column sums (kernels_cl/group_reduce.cl): the
// rows are cut into blocks of rows_per_block(N) (a function of N alone, so results never depend on
// the device or the group size); stage 1 writes each block's column sums into `partials`
// (planes x blocks x C floats, a scratch buffer grown to the largest request and kept: at N = 8192,
// C = 768, two planes, 1.5 MiB), stage 2 adds each plane's blocks, in order, into its gradient.
class RowBlockSums {
 public:
  static std::size_t rows_per_block(std::size_t N);
  static std::size_t blocks(std::size_t N) { return N == 0 ? 0 : (N + rows_per_block(N) - 1) / rows_per_block(N); }
  // Stage 1: `kernel` over groups (column strip of group-size columns, row block), then its args.
  template <typename... Args>
  static void run_stage1(KernelSet& set, std::string_view kernel, std::size_t N, std::size_t C, const Args&... args) {
    const std::size_t g = set.group_size();
    const std::array<std::size_t, 2> global = {(C + g - 1) / g * g, blocks(N)}, local = {g, 1};
    set.launch_nd(kernel, global, local, args..., u32(rows_per_block(N)));
  }
  FloatBuffer& partials(const device::Device& device, std::size_t planes, std::size_t N, std::size_t C);
  // dst (C) += the sums of plane `plane`'s blocks.
  void add_into(KernelSet& set, FloatBuffer& dst, std::size_t plane, std::size_t N, std::size_t C);

 private:
  FloatBuffer partials_;
};

class EmbeddingKernels {
 public:
  EmbeddingKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  // out (B*T, C) = wte[ids] + wpe[pos0 + t]               ids (B*T), wte (Vp, C), wpe (maxT, C)
  // positions = false: wpe[0] for every row instead (a zero row: a model without a position table).
  // A vocabulary shard (tensor parallelism): wte (vocab_rows, C) holds rows [vocab_begin,
  // vocab_begin + vocab_rows) of the table, read at ids - vocab_begin; a token outside them adds
  // nothing (its row is the position part alone). The defaults are the whole table.
  void forward(ActBuffer& out, const IntBuffer& ids, const ActBuffer& wte, const ActBuffer& wpe, std::size_t B,
               std::size_t T, std::size_t C, std::size_t pos0 = 0, bool positions = true,
               std::size_t vocab_begin = 0, std::size_t vocab_rows = SIZE_MAX);
  // dwpe (T, C) += sum over the batch of dout (B, T, C)
  void backward_wpe(FloatBuffer& dwpe, const ActBuffer& dout, std::size_t B, std::size_t T, std::size_t C);
  // dwte[tokens[u]] += sum of dout rows positions[starts[u] .. starts[u+1])   (U unique tokens)
  void backward_wte(FloatBuffer& dwte, const ActBuffer& dout, const IntBuffer& tokens, const IntBuffer& starts,
                    const IntBuffer& positions, std::size_t U, std::size_t C);

 private:
  KernelSet set_;
  device::DType act_;
};

class LayerNormKernels {
 public:
  LayerNormKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  // out (N, C) = LN(x) * w + b; mean, rstd (N) saved for backward.
  void forward(ActBuffer& out, FloatBuffer& mean, FloatBuffer& rstd, const ActBuffer& x, const ActBuffer& w,
               const ActBuffer& b, std::size_t N, std::size_t C, float eps);
  // Residual fusion: sum (N, C) = x + delta, and out = LN(sum) of the sum as stored, in the same pass.
  void forward_residual(ActBuffer& out, FloatBuffer& mean, FloatBuffer& rstd, ActBuffer& sum, const ActBuffer& x,
                        const ActBuffer& delta, const ActBuffer& w, const ActBuffer& b, std::size_t N, std::size_t C,
                        float eps);
  // dx (N, C) = d LN / d x applied to dout (+ dresidual when given; overwrites dx);
  // dw, db (C) += parameter gradients. x is the LN's input (the sum, for forward_residual).
  void backward(ActBuffer& dx, FloatBuffer& dw, FloatBuffer& db, const ActBuffer& dout, const ActBuffer& x,
                const ActBuffer& w, const FloatBuffer& mean, const FloatBuffer& rstd, const ActBuffer* dresidual,
                std::size_t N, std::size_t C);

 private:
  KernelSet set_;
  device::DType act_;
  RowBlockSums block_sums_;  // GPU set: the parameter gradients' stage-1 partials
};

// RMSNorm (LLaMA): out = v * rstd * w, rstd = 1 / sqrt(mean_c(v^2) + eps), v = x (+ delta);
// the LayerNorm launcher's shapes and residual fusion without the mean and the bias.
class RmsNormKernels {
 public:
  RmsNormKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  // out (N, C) = RMSNorm(x) * w; rstd (N) saved for backward.
  void forward(ActBuffer& out, FloatBuffer& rstd, const ActBuffer& x, const ActBuffer& w, std::size_t N,
               std::size_t C, float eps);
  // Residual fusion: sum (N, C) = x + delta, and out = RMSNorm(sum) of the sum as stored, in the same pass.
  void forward_residual(ActBuffer& out, FloatBuffer& rstd, ActBuffer& sum, const ActBuffer& x, const ActBuffer& delta,
                        const ActBuffer& w, std::size_t N, std::size_t C, float eps);
  // dx (N, C) = d RMSNorm / d x applied to dout (+ dresidual when given; overwrites dx);
  // dw (C) += the weight gradient. x is the norm's input (the sum, for forward_residual).
  void backward(ActBuffer& dx, FloatBuffer& dw, const ActBuffer& dout, const ActBuffer& x, const ActBuffer& w,
                const FloatBuffer& rstd, const ActBuffer* dresidual, std::size_t N, std::size_t C);

 private:
  KernelSet set_;
  device::DType act_;
  RowBlockSums block_sums_;  // GPU set: the parameter gradients' stage-1 partials
};

class BiasKernels {
 public:
  BiasKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  void add(ActBuffer& out, const ActBuffer& bias, std::size_t N, std::size_t C);         // out (N, C) += bias (C)
  void grad(FloatBuffer& dbias, const ActBuffer& dout, std::size_t N, std::size_t C);    // dbias (C) += colsum(dout)

 private:
  KernelSet set_;
  device::DType act_;
  RowBlockSums block_sums_;  // GPU set: the parameter gradients' stage-1 partials
};

class GeluKernels {
 public:
  GeluKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  void forward(ActBuffer& out, const ActBuffer& x, std::size_t n);                         // out = gelu(x)
  void backward(ActBuffer& dx, const ActBuffer& x, const ActBuffer& dout, std::size_t n);  // dx = dout gelu'(x)
  // Fused bias + GELU: pre (N, C) += bias (kept for backward); out (N, C) = gelu(pre).
  void bias_forward(ActBuffer& pre, ActBuffer& out, const ActBuffer& bias, std::size_t N, std::size_t C);

 private:
  KernelSet set_;
  device::DType act_;
};

// SwiGLU's gate (LLaMA's feed-forward; the projections are GEMMs in models/layers/swiglu_mlp.cpp):
// gu (N, 2F) holds per row [gate (F) | up (F)].
class SwigluKernels {
 public:
  SwigluKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  void forward(ActBuffer& h, const ActBuffer& gu, std::size_t N, std::size_t F);  // h (N, F) = silu(gate) * up
  // dgu (N, 2F) = [dh * up * silu'(gate) | dh * silu(gate)]   dh (N, F)
  void backward(ActBuffer& dgu, const ActBuffer& gu, const ActBuffer& dh, std::size_t N, std::size_t F);

 private:
  KernelSet set_;
  device::DType act_;
};

// The softmax parts of causal attention (the GEMMs are in models/layers/causal_attention.cpp).
// Scores (from a GEMM with a float C) and probabilities stay float32 at any activation dtype.
// Queries q0 .. q0+rows-1 against their causal range of keys 0 .. keys()-1: the rows of one score
// block.
struct QueryBlock {
  std::size_t q0 = 0, rows = 0;
  std::size_t keys() const { return q0 + rows; }
};
// Where the row statistics (lse, delta: float (B, NH, T)) of a chunk of heads lie: the chunk's
// head g, query t at offset + g * head_stride + t (head_stride T when the chunk's heads are
// consecutive, G*T when they are every G-th head, as grouped-query attention batches them).
struct RowStats {
  std::size_t offset = 0, head_stride = 0;
};

class AttentionKernels {
 public:
  AttentionKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  // scores (G, Q, K) for block q (Q = q.rows, K = q.keys()) -> probabilities in place, zero past
  // each row's causal length; lse at `stats` = row logsumexp.
  void softmax_forward(FloatBuffer& scores, FloatBuffer& lse, std::size_t G, const QueryBlock& q, float scale,
                       const RowStats& stats);
  void probs_from_lse(FloatBuffer& scores, const FloatBuffer& lse, std::size_t G, const QueryBlock& q, float scale,
                      const RowStats& stats);
  // delta (B, NH, T) = per head, the rowwise dot of out and dout, both (B*T, NH*hs)
  void row_dot(FloatBuffer& delta, const ActBuffer& out, const ActBuffer& dout, std::size_t B, std::size_t T,
               std::size_t NH, std::size_t hs);
  // dprobs (G, Q, K) -> dscores in place, using probs and delta at `stats`.
  void softmax_backward(FloatBuffer& dprobs, const FloatBuffer& probs, const FloatBuffer& delta, std::size_t G,
                        const QueryBlock& q, float scale, const RowStats& stats);

 private:
  KernelSet set_;
  device::DType act_;
};

// Rotary position embeddings (kernels_cl/rope.cl; the layer: models/layers/rotary_embedding.h).
// qkv (rows, (heads + 2*kv_heads) * head_dims) rows laid out [q | k | v], rows = B*T of sequences
// of seq_len tokens; row r sits at position r % seq_len + position_offset.
struct RopeShape {
  std::size_t rows = 0, seq_len = 0, heads = 0, kv_heads = 0, head_dims = 0;
  std::size_t width() const { return (heads + 2 * kv_heads) * head_dims; }
};

class RopeKernels {
 public:
  RopeKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  // In place on the q and k heads of qkv: each pair (i, i + hs/2) of a head turned by its row's
  // angle, cos and sin read from the tables (max_positions, hs/2); `inverse` turns by minus the
  // angle (the transpose, which is the backward). v is left alone.
  void rotate(ActBuffer& qkv, const FloatBuffer& cos, const FloatBuffer& sin, const RopeShape& shape,
              std::size_t position_offset, bool inverse);

 private:
  KernelSet set_;
  device::DType act_;
};

class CrossEntropyKernels {
 public:
  CrossEntropyKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  // logits (N, Vp) -> dlogits in place; losses (N) = w * ce; correct (N) = w * [argmax == target].
  // Columns >= V are padding.
  void softmax_cross_entropy(ActBuffer& logits, FloatBuffer& losses, FloatBuffer& correct, const IntBuffer& targets,
                             const FloatBuffer& weights, std::size_t N, std::size_t V, std::size_t Vp,
                             float inv_weight_sum);

 private:
  KernelSet set_;
  device::DType act_;
  FloatBuffer stats_;  // GPU set: chunk statistics (N, chunks, 4), grown and kept (N = 8192, V = 50304: 3.3 MiB)
};

// Softmax cross-entropy over a vocabulary split by columns over P devices (tensor parallelism):
// device `rank` holds the logits of columns [vocab_begin, vocab_begin + Vl) of the padded
// vocabulary, the first `real` of them real tokens, the rest padding. Two passes around one
// collective reproduce CrossEntropyKernels::softmax_cross_entropy on the whole row without any
// device holding it: partial_stats writes this device's (max, sum of exp, target logit) per row
// into its row block of partials (P, N, 3); the caller sums partials over the P devices (each
// block is zero elsewhere, so the sum is an all-gather); finish combines them into the logsumexp
// and turns this device's logits into their gradient. One difference: a target that ties the
// row's maximum counts as correct (the single-device kernel takes the first maximum).
// Bad sizes (real > Vl, a rank past partials' row blocks, P = 0) throw ConfigError.
class VocabParallelKernels {
 public:
  VocabParallelKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  // logits (N, Vl); partials (P, N, 3) float, only block `rank` written: for each row n
  //   [rank, n, 0] = max over the real local columns (-FLT_MAX when real == 0)
  //   [rank, n, 1] = sum over them of exp(logit - that max) (0 when real == 0)
  //   [rank, n, 2] = the target's logit if vocab_begin <= targets[n] < vocab_begin + real, else 0
  void partial_stats(const ActBuffer& logits, FloatBuffer& partials, const IntBuffer& targets, std::size_t N,
                     std::size_t Vl, std::size_t real, std::size_t vocab_begin, std::size_t rank);
  // With every device's partials (P, N, 3): M = max_r m_r, S = sum_r s_r exp(m_r - M),
  // lse = M + log S, t = sum_r t_r (the target's logit: exactly one device holds it);
  //   losses (N)  = w * (lse - t),   correct (N) = w if t >= M, else 0
  //   logits (N, Vl) <- w * inv_weight_sum * (exp(logit - lse) - [vocab_begin + v == target]) for
  //   v < real, 0 for v >= real        (in place: dlogits)
  void finish(ActBuffer& logits, const FloatBuffer& partials, FloatBuffer& losses, FloatBuffer& correct,
              const IntBuffer& targets, const FloatBuffer& weights, std::size_t N, std::size_t Vl, std::size_t real,
              std::size_t vocab_begin, std::size_t P, float inv_weight_sum);

 private:
  KernelSet set_;
  device::DType act_;
  FloatBuffer stats_;  // GPU set: partial_stats' chunk statistics (N, chunks, 4), grown and kept
};

// The residual add of a transformer block: out (n) = a + b, summed in float, rounded once.
class ResidualKernels {
 public:
  ResidualKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  void add(ActBuffer& out, const ActBuffer& a, const ActBuffer& b, std::size_t n);

 private:
  KernelSet set_;
  device::DType act_;
};

// Casts between float32 buffers and act buffers holding the same elements at the same offsets
// (the parameters and the step's copy of them; float images of activations). Elements
// [offset, offset + count); without them, the whole of `out`. Casting a buffer onto itself (a
// float32 act buffer sharing the float one's memory) does nothing.
class CastKernels {
 public:
  CastKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  void to_act(ActBuffer& out, const FloatBuffer& in, std::size_t offset, std::size_t count);
  void to_act(ActBuffer& out, const FloatBuffer& in) { to_act(out, in, 0, out.count()); }
  void to_float(FloatBuffer& out, const ActBuffer& in, std::size_t offset, std::size_t count);
  void to_float(FloatBuffer& out, const ActBuffer& in) { to_float(out, in, 0, out.count()); }
  // in (rows, cols) float -> out[out_offset + r*out_ld + c]: a column block of rows out_ld apart.
  void rows_to_act(ActBuffer& out, std::size_t out_offset, std::size_t out_ld, const FloatBuffer& in,
                   std::size_t rows, std::size_t cols);

 private:
  KernelSet set_;
  device::DType act_;
};

// Float32 throughout (parameters, gradients and Adam state never change dtype).
class OptimizerKernels {
 public:
  OptimizerKernels(device::ProgramCache& cache, device::Device& device);
  // partial (ceil(n / chunk)) = per-chunk sums of squares of x (n)
  void sum_squares(FloatBuffer& partial, const FloatBuffer& x, std::size_t n, std::size_t chunk);
  struct AdamArgs {
    float grad_scale, lr, decay1, decay2, eps, weight_decay;
  };
  void adam(FloatBuffer& params, FloatBuffer& m, FloatBuffer& v, const FloatBuffer& grads, std::size_t n,
            const AdamArgs& a);

 private:
  KernelSet set_;
};

}  // namespace paxocl::kernels
