#include "kernels_cl/nn_kernels.h"

namespace paxocl::kernels {

EmbeddingKernels::EmbeddingKernels(device::ProgramCache& cache, device::Device& device)
    : set_(cache, device, "embedding", {"embedding_forward", "embedding_backward_wpe", "embedding_backward_wte"}) {}

void EmbeddingKernels::forward(FloatBuffer& out, const IntBuffer& ids, const FloatBuffer& wte, const FloatBuffer& wpe,
                               std::size_t B, std::size_t T, std::size_t C) {
  const std::size_t n = B * T * C;
  set_.launch("embedding_forward", set_.cpu_variant() ? B * T : n, out, ids, wte, wpe, u32(T), u32(C), u32(n));
}

void EmbeddingKernels::backward_wpe(FloatBuffer& dwpe, const FloatBuffer& dout, std::size_t B, std::size_t T,
                                    std::size_t C) {
  set_.launch_elements("embedding_backward_wpe", T * C, dwpe, dout, u32(B), u32(T), u32(C));
}

void EmbeddingKernels::backward_wte(FloatBuffer& dwte, const FloatBuffer& dout, const IntBuffer& tokens,
                                    const IntBuffer& starts, const IntBuffer& positions, std::size_t U,
                                    std::size_t C) {
  set_.launch("embedding_backward_wte", set_.cpu_variant() ? U : U * C, dwte, dout, tokens, starts, positions, u32(U),
              u32(C));
}

LayerNormKernels::LayerNormKernels(device::ProgramCache& cache, device::Device& device)
    : set_(cache, device, "layernorm", {"layernorm_forward", "layernorm_backward_dx", "layernorm_backward_params"}) {}

void LayerNormKernels::forward(FloatBuffer& out, FloatBuffer& mean, FloatBuffer& rstd, const FloatBuffer& x,
                               const FloatBuffer& w, const FloatBuffer& b, std::size_t N, std::size_t C, float eps) {
  // No residual: x stands in for the unused delta and sum buffers.
  set_.launch("layernorm_forward", N, out, mean, rstd, x, x, x, w, b, u32(N), u32(C), eps, cl_uint{0});
}

void LayerNormKernels::forward_residual(FloatBuffer& out, FloatBuffer& mean, FloatBuffer& rstd, FloatBuffer& sum,
                                        const FloatBuffer& x, const FloatBuffer& delta, const FloatBuffer& w,
                                        const FloatBuffer& b, std::size_t N, std::size_t C, float eps) {
  set_.launch("layernorm_forward", N, out, mean, rstd, sum, x, delta, w, b, u32(N), u32(C), eps, cl_uint{1});
}

void LayerNormKernels::backward(FloatBuffer& dx, FloatBuffer& dw, FloatBuffer& db, const FloatBuffer& dout,
                                const FloatBuffer& x, const FloatBuffer& w, const FloatBuffer& mean,
                                const FloatBuffer& rstd, const FloatBuffer* dresidual, std::size_t N, std::size_t C) {
  const FloatBuffer& resid = dresidual != nullptr ? *dresidual : dout;
  set_.launch("layernorm_backward_dx", N, dx, dout, x, w, mean, rstd, resid, u32(N), u32(C),
              cl_uint{dresidual != nullptr});
  set_.launch("layernorm_backward_params", set_.cpu_variant() ? (C + 15) / 16 : C, dw, db, dout, x, mean, rstd, u32(N),
              u32(C));
}

BiasKernels::BiasKernels(device::ProgramCache& cache, device::Device& device)
    : set_(cache, device, "bias", {"bias_add", "bias_grad"}) {}

void BiasKernels::add(FloatBuffer& out, const FloatBuffer& bias, std::size_t N, std::size_t C) {
  set_.launch("bias_add", set_.cpu_variant() ? N : N * C, out, bias, u32(N), u32(C));
}

void BiasKernels::grad(FloatBuffer& dbias, const FloatBuffer& dout, std::size_t N, std::size_t C) {
  set_.launch("bias_grad", set_.cpu_variant() ? (C + 15) / 16 : C, dbias, dout, u32(N), u32(C));
}

GeluKernels::GeluKernels(device::ProgramCache& cache, device::Device& device)
    : set_(cache, device, "gelu", {"gelu_forward", "gelu_backward", "bias_gelu_forward"}) {}

void GeluKernels::forward(FloatBuffer& out, const FloatBuffer& x, std::size_t n) {
  set_.launch_elements("gelu_forward", n, out, x, u32(n));
}

void GeluKernels::backward(FloatBuffer& dx, const FloatBuffer& x, const FloatBuffer& dout, std::size_t n) {
  set_.launch_elements("gelu_backward", n, dx, x, dout, u32(n));
}

void GeluKernels::bias_forward(FloatBuffer& pre, FloatBuffer& out, const FloatBuffer& bias, std::size_t N,
                               std::size_t C) {
  set_.launch("bias_gelu_forward", set_.cpu_variant() ? N : N * C, pre, out, bias, u32(N), u32(C));
}

AttentionKernels::AttentionKernels(device::ProgramCache& cache, device::Device& device)
    : set_(cache, device, "attention",
           {"causal_softmax_forward", "causal_probs_from_lse", "attention_row_dot", "causal_softmax_backward"}) {}

void AttentionKernels::softmax_forward(FloatBuffer& scores, FloatBuffer& lse, std::size_t G, std::size_t T,
                                       float scale, std::size_t lse_offset) {
  set_.launch("causal_softmax_forward", G * T, scores, lse, u32(T), scale, u32(lse_offset), u32(G * T));
}

void AttentionKernels::probs_from_lse(FloatBuffer& scores, const FloatBuffer& lse, std::size_t G, std::size_t T,
                                      float scale, std::size_t lse_offset) {
  set_.launch("causal_probs_from_lse", G * T, scores, lse, u32(T), scale, u32(lse_offset), u32(G * T));
}

void AttentionKernels::row_dot(FloatBuffer& delta, const FloatBuffer& out, const FloatBuffer& dout, std::size_t B,
                               std::size_t T, std::size_t NH, std::size_t hs) {
  const std::size_t rows = B * NH * T;
  set_.launch("attention_row_dot", rows, delta, out, dout, u32(T), u32(NH), u32(hs), u32(rows));
}

void AttentionKernels::softmax_backward(FloatBuffer& dprobs, const FloatBuffer& probs, const FloatBuffer& delta,
                                        std::size_t G, std::size_t T, float scale, std::size_t delta_offset) {
  set_.launch("causal_softmax_backward", G * T, dprobs, probs, delta, u32(T), scale, u32(delta_offset), u32(G * T));
}

CrossEntropyKernels::CrossEntropyKernels(device::ProgramCache& cache, device::Device& device)
    : set_(cache, device, "cross_entropy", {"softmax_cross_entropy"}) {}

void CrossEntropyKernels::softmax_cross_entropy(FloatBuffer& logits, FloatBuffer& losses, FloatBuffer& correct,
                                                const IntBuffer& targets,
                                                const FloatBuffer& weights, std::size_t N, std::size_t V,
                                                std::size_t Vp, float inv_weight_sum) {
  set_.launch("softmax_cross_entropy", N, logits, losses, correct, targets, weights, u32(N), u32(V), u32(Vp),
              inv_weight_sum);
}

OptimizerKernels::OptimizerKernels(device::ProgramCache& cache, device::Device& device)
    : set_(cache, device, "optimizer", {"sum_squares_partial", "adam_update"}) {}

void OptimizerKernels::sum_squares(FloatBuffer& partial, const FloatBuffer& x, std::size_t n, std::size_t chunk) {
  set_.launch("sum_squares_partial", (n + chunk - 1) / chunk, partial, x, u32(n), u32(chunk));
}

void OptimizerKernels::adam(FloatBuffer& params, FloatBuffer& m, FloatBuffer& v, const FloatBuffer& grads,
                            std::size_t n, const AdamArgs& a) {
  set_.launch_elements("adam_update", n, params, m, v, grads, u32(n), a.grad_scale, a.lr, a.decay1, a.decay2, a.eps,
                       a.weight_decay);
}

}  // namespace paxocl::kernels
