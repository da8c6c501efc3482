// Launchers for the GPT's non-GEMM kernels, one class per .cl program. Shapes are row-major;
// N = B*T rows. Gradient kernels named *_grad / backward_params ACCUMULATE (+=) into parameter
// gradients, so tied weights and several contributions add up; the model zeroes gradients once
// per step. Everything else overwrites its output.
#pragma once

#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

using FloatBuffer = device::Buffer<float>;
using IntBuffer = device::Buffer<cl_int>;

class EmbeddingKernels {
 public:
  EmbeddingKernels(device::ProgramCache& cache, device::Device& device);
  // out (B*T, C) = wte[ids] + wpe[t]                      ids (B*T), wte (Vp, C), wpe (maxT, C)
  void forward(FloatBuffer& out, const IntBuffer& ids, const FloatBuffer& wte, const FloatBuffer& wpe, std::size_t B,
               std::size_t T, std::size_t C);
  // dwpe (T, C) += sum over the batch of dout (B, T, C)
  void backward_wpe(FloatBuffer& dwpe, const FloatBuffer& dout, std::size_t B, std::size_t T, std::size_t C);
  // dwte[tokens[u]] += sum of dout rows positions[starts[u] .. starts[u+1])   (U unique tokens)
  void backward_wte(FloatBuffer& dwte, const FloatBuffer& dout, const IntBuffer& tokens, const IntBuffer& starts,
                    const IntBuffer& positions, std::size_t U, std::size_t C);

 private:
  KernelSet set_;
};

class LayerNormKernels {
 public:
  LayerNormKernels(device::ProgramCache& cache, device::Device& device);
  // out (N, C) = LN(x) * w + b; mean, rstd (N) saved for backward.
  void forward(FloatBuffer& out, FloatBuffer& mean, FloatBuffer& rstd, const FloatBuffer& x, const FloatBuffer& w,
               const FloatBuffer& b, std::size_t N, std::size_t C, float eps);
  // Residual fusion: sum (N, C) = x + delta, and out = LN(sum) in the same pass.
  void forward_residual(FloatBuffer& out, FloatBuffer& mean, FloatBuffer& rstd, FloatBuffer& sum, const FloatBuffer& x,
                        const FloatBuffer& delta, const FloatBuffer& w, const FloatBuffer& b, std::size_t N,
                        std::size_t C, float eps);
  // dx (N, C) = d LN / d x applied to dout (+ dresidual when given; overwrites dx);
  // dw, db (C) += parameter gradients. x is the LN's input (the sum, for forward_residual).
  void backward(FloatBuffer& dx, FloatBuffer& dw, FloatBuffer& db, const FloatBuffer& dout, const FloatBuffer& x,
                const FloatBuffer& w, const FloatBuffer& mean, const FloatBuffer& rstd, const FloatBuffer* dresidual,
                std::size_t N, std::size_t C);

 private:
  KernelSet set_;
};

class BiasKernels {
 public:
  BiasKernels(device::ProgramCache& cache, device::Device& device);
  void add(FloatBuffer& out, const FloatBuffer& bias, std::size_t N, std::size_t C);        // out (N, C) += bias (C)
  void grad(FloatBuffer& dbias, const FloatBuffer& dout, std::size_t N, std::size_t C);     // dbias (C) += colsum(dout)

 private:
  KernelSet set_;
};

class GeluKernels {
 public:
  GeluKernels(device::ProgramCache& cache, device::Device& device);
  void forward(FloatBuffer& out, const FloatBuffer& x, std::size_t n);                          // out = gelu(x)
  void backward(FloatBuffer& dx, const FloatBuffer& x, const FloatBuffer& dout, std::size_t n);  // dx = dout gelu'(x)
  // Fused bias + GELU: pre (N, C) += bias (kept for backward); out (N, C) = gelu(pre).
  void bias_forward(FloatBuffer& pre, FloatBuffer& out, const FloatBuffer& bias, std::size_t N, std::size_t C);

 private:
  KernelSet set_;
};

// The softmax parts of causal attention (the GEMMs are in models/layers/causal_attention.cpp).
class AttentionKernels {
 public:
  AttentionKernels(device::ProgramCache& cache, device::Device& device);
  // scores (G, T, T) -> probabilities in place; lse[lse_offset + g*T + t] = row logsumexp.
  void softmax_forward(FloatBuffer& scores, FloatBuffer& lse, std::size_t G, std::size_t T, float scale,
                       std::size_t lse_offset);
  void probs_from_lse(FloatBuffer& scores, const FloatBuffer& lse, std::size_t G, std::size_t T, float scale,
                      std::size_t lse_offset);
  // delta (B, NH, T) = per head, the rowwise dot of out and dout, both (B*T, NH*hs)
  void row_dot(FloatBuffer& delta, const FloatBuffer& out, const FloatBuffer& dout, std::size_t B, std::size_t T,
               std::size_t NH, std::size_t hs);
  // dprobs (G, T, T) -> dscores in place, using probs and delta[delta_offset + g*T + t].
  void softmax_backward(FloatBuffer& dprobs, const FloatBuffer& probs, const FloatBuffer& delta, std::size_t G,
                        std::size_t T, float scale, std::size_t delta_offset);

 private:
  KernelSet set_;
};

class CrossEntropyKernels {
 public:
  CrossEntropyKernels(device::ProgramCache& cache, device::Device& device);
  // logits (N, Vp) -> dlogits in place; losses (N) = w * ce; correct (N) = w * [argmax == target].
  // Columns >= V are padding.
  void softmax_cross_entropy(FloatBuffer& logits, FloatBuffer& losses, FloatBuffer& correct, const IntBuffer& targets,
                             const FloatBuffer& weights, std::size_t N, std::size_t V, std::size_t Vp,
                             float inv_weight_sum);

 private:
  KernelSet set_;
};

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
