#include "kernels_cl/nn_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "kernels_cl/launch_checks.h"

namespace paxocl::kernels {

namespace {
// Elements [offset, offset + count) must lie inside both buffers of a cast.
void require_range(const char* kernel, std::size_t offset, std::size_t count, std::size_t a, std::size_t b) {
  if (offset + count > a || offset + count > b) {
    throw DeviceError(fmt::format("{}: elements [{}, {}) exceed a buffer of {}", kernel, offset, offset + count,
                                  std::min(a, b)));
  }
}

// A vocabulary block's real columns (the rest padding) cannot outnumber its columns.
void require_real_columns(const char* kernel, std::size_t real, std::size_t Vl) {
  if (real > Vl) {
    throw ConfigError(fmt::format("{}: {} real vocabulary columns exceed the block's {} columns", kernel, real, Vl));
  }
}
// A scratch buffer of the GPU twins, grown to the largest request and kept.
FloatBuffer& grown(FloatBuffer& buffer, const device::Device& device, std::size_t count, const char* name) {
  count = std::max<std::size_t>(1, count);
  if (buffer.count() < count) buffer = FloatBuffer(device.context(), count, name);
  return buffer;
}

// The GPU twins' softmax chunks (group_reduce.cl's PAX_SOFTMAX_CHUNK columns) over `cols` columns.
std::size_t softmax_chunks(const KernelSet& set, std::size_t cols) {
  const std::size_t chunk = set.group_size() * 8;
  return std::max<std::size_t>(1, (cols + chunk - 1) / chunk);
}

// The GPU SwiGLU twin's groups along a row of F columns: 4 columns per work-item.
std::size_t swiglu_chunks(const KernelSet& set, std::size_t F) {
  const std::size_t per_group = set.group_size() * kGpuElementsPerItem;
  return (F + per_group - 1) / per_group;
}

// A kernel over work-groups (chunk j, row n): `chunks` x N groups of group_size() work-items.
template <typename... Args>
void launch_row_chunks(KernelSet& set, std::string_view kernel, std::size_t chunks, std::size_t N, const Args&... args) {
  const std::array<std::size_t, 2> global = {chunks * set.group_size(), N}, local = {set.group_size(), 1};
  set.launch_nd(kernel, global, local, args...);
}
}  // namespace

std::size_t RowBlockSums::rows_per_block(std::size_t N) {
  // At least 32 rows per block (stage 2 stays short), at most 256 blocks (stage 1 fills a big GPU).
  return std::max<std::size_t>(32, (N + 255) / 256);
}

FloatBuffer& RowBlockSums::partials(const device::Device& device, std::size_t planes, std::size_t N, std::size_t C) {
  return grown(partials_, device, planes * blocks(N) * C, "row-block partial sums");
}

void RowBlockSums::add_into(KernelSet& set, FloatBuffer& dst, std::size_t plane, std::size_t N, std::size_t C) {
  set.launch("pax_add_block_sums", C, dst, partials_, u32(plane * blocks(N) * C), u32(blocks(N)), u32(C));
}

EmbeddingKernels::EmbeddingKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "embedding",
                       {"embedding_forward", "embedding_backward_wpe", "embedding_backward_wte"}, act)),
      act_(act) {}

void EmbeddingKernels::forward(ActBuffer& out, const IntBuffer& ids, const ActBuffer& wte, const ActBuffer& wpe,
                               std::size_t B, std::size_t T, std::size_t C, std::size_t pos0, bool positions,
                               std::size_t vocab_begin, std::size_t vocab_rows) {
  require_act(act_, "embedding_forward", out, wte, wpe);
  if (vocab_rows != SIZE_MAX) require_count("embedding_forward", vocab_rows * C, wte);
  const std::size_t n = B * T * C;
  // The whole table (SIZE_MAX rows) as the kernel's uint: every non-negative int id is below it.
  const std::size_t rows = std::min<std::size_t>(vocab_rows, std::numeric_limits<cl_uint>::max());
  // Without positions every row reads wpe's first row (stride 0), which the caller keeps zero.
  // The CPU twin takes a row per work-item, the others elements.
  set_.launch("embedding_forward", set_.cpu_variant() ? B * T : set_.element_items(n), out, ids, wte, wpe, u32(T),
              u32(C), u32(n), u32(pos0), u32(positions ? C : 0), u32(vocab_begin), u32(rows));
}

void EmbeddingKernels::backward_wpe(FloatBuffer& dwpe, const ActBuffer& dout, std::size_t B, std::size_t T,
                                    std::size_t C) {
  require_act(act_, "embedding_backward_wpe", dout);
  set_.launch_elements("embedding_backward_wpe", T * C, dwpe, dout, u32(B), u32(T), u32(C));
}

void EmbeddingKernels::backward_wte(FloatBuffer& dwte, const ActBuffer& dout, const IntBuffer& tokens,
                                    const IntBuffer& starts, const IntBuffer& positions, std::size_t U,
                                    std::size_t C) {
  require_act(act_, "embedding_backward_wte", dout);
  set_.launch("embedding_backward_wte", set_.cpu_variant() ? U : set_.element_items(U * C), dwte, dout, tokens, starts,
              positions, u32(U), u32(C));
}

LayerNormKernels::LayerNormKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "layernorm",
                       {"layernorm_forward", "layernorm_backward_dx", "layernorm_backward_params"}, act)),
      act_(act) {}

void LayerNormKernels::forward(ActBuffer& out, FloatBuffer& mean, FloatBuffer& rstd, const ActBuffer& x,
                               const ActBuffer& w, const ActBuffer& b, std::size_t N, std::size_t C, float eps) {
  require_act(act_, "layernorm_forward", out, x, w, b);
  // No residual: x stands in for the unused delta and sum buffers.
  set_.launch_row_teams("layernorm_forward", N, out, mean, rstd, x, x, x, w, b, u32(N), u32(C), eps, cl_uint{0});
}

void LayerNormKernels::forward_residual(ActBuffer& out, FloatBuffer& mean, FloatBuffer& rstd, ActBuffer& sum,
                                        const ActBuffer& x, const ActBuffer& delta, const ActBuffer& w,
                                        const ActBuffer& b, std::size_t N, std::size_t C, float eps) {
  require_act(act_, "layernorm_forward", out, sum, x, delta, w, b);
  set_.launch_row_teams("layernorm_forward", N, out, mean, rstd, sum, x, delta, w, b, u32(N), u32(C), eps, cl_uint{1});
}

void LayerNormKernels::backward(ActBuffer& dx, FloatBuffer& dw, FloatBuffer& db, const ActBuffer& dout,
                                const ActBuffer& x, const ActBuffer& w, const FloatBuffer& mean,
                                const FloatBuffer& rstd, const ActBuffer* dresidual, std::size_t N, std::size_t C) {
  const ActBuffer& resid = dresidual != nullptr ? *dresidual : dout;
  require_act(act_, "layernorm_backward", dx, dout, x, w, resid);
  set_.launch_row_teams("layernorm_backward_dx", N, dx, dout, x, w, mean, rstd, resid, u32(N), u32(C),
              cl_uint{dresidual != nullptr});
  if (set_.gpu_variant()) {
    if (N == 0 || C == 0) return;
    FloatBuffer& partials = block_sums_.partials(set_.device(), 2, N, C);
    RowBlockSums::run_stage1(set_, "layernorm_backward_params", N, C, partials, dout, x, mean, rstd, u32(N), u32(C));
    block_sums_.add_into(set_, dw, 0, N, C);
    block_sums_.add_into(set_, db, 1, N, C);
    return;
  }
  set_.launch("layernorm_backward_params", set_.cpu_variant() ? (C + 15) / 16 : C, dw, db, dout, x, mean, rstd, u32(N),
              u32(C));
}

RmsNormKernels::RmsNormKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "rmsnorm", {"rmsnorm_forward", "rmsnorm_backward_dx", "rmsnorm_backward_scale"},
                       act)),
      act_(act) {}

void RmsNormKernels::forward(ActBuffer& out, FloatBuffer& rstd, const ActBuffer& x, const ActBuffer& w, std::size_t N,
                             std::size_t C, float eps) {
  require_act(act_, "rmsnorm_forward", out, x, w);
  require_count("rmsnorm_forward", N * C, out, x);
  require_count("rmsnorm_forward", C, w);
  require_count("rmsnorm_forward", N, rstd);
  // No residual: x stands in for the unused delta and sum buffers.
  set_.launch_row_teams("rmsnorm_forward", N, out, rstd, x, x, x, w, u32(N), u32(C), eps, cl_uint{0});
}

void RmsNormKernels::forward_residual(ActBuffer& out, FloatBuffer& rstd, ActBuffer& sum, const ActBuffer& x,
                                      const ActBuffer& delta, const ActBuffer& w, std::size_t N, std::size_t C,
                                      float eps) {
  require_act(act_, "rmsnorm_forward", out, sum, x, delta, w);
  require_count("rmsnorm_forward", N * C, out, sum, x, delta);
  require_count("rmsnorm_forward", C, w);
  require_count("rmsnorm_forward", N, rstd);
  set_.launch_row_teams("rmsnorm_forward", N, out, rstd, sum, x, delta, w, u32(N), u32(C), eps, cl_uint{1});
}

void RmsNormKernels::backward(ActBuffer& dx, FloatBuffer& dw, const ActBuffer& dout, const ActBuffer& x,
                              const ActBuffer& w, const FloatBuffer& rstd, const ActBuffer* dresidual, std::size_t N,
                              std::size_t C) {
  const ActBuffer& resid = dresidual != nullptr ? *dresidual : dout;
  require_act(act_, "rmsnorm_backward", dx, dout, x, w, resid);
  require_count("rmsnorm_backward", N * C, dx, dout, x, resid);
  require_count("rmsnorm_backward", C, w, dw);
  require_count("rmsnorm_backward", N, rstd);
  set_.launch_row_teams("rmsnorm_backward_dx", N, dx, dout, x, w, rstd, resid, u32(N), u32(C), cl_uint{dresidual != nullptr});
  if (set_.gpu_variant()) {
    if (N == 0 || C == 0) return;
    FloatBuffer& partials = block_sums_.partials(set_.device(), 1, N, C);
    RowBlockSums::run_stage1(set_, "rmsnorm_backward_scale", N, C, partials, dout, x, rstd, u32(N), u32(C));
    block_sums_.add_into(set_, dw, 0, N, C);
    return;
  }
  set_.launch("rmsnorm_backward_scale", set_.cpu_variant() ? (C + 15) / 16 : C, dw, dout, x, rstd, u32(N), u32(C));
}

BiasKernels::BiasKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "bias", {"bias_add", "bias_grad"}, act)), act_(act) {}

void BiasKernels::add(ActBuffer& out, const ActBuffer& bias, std::size_t N, std::size_t C) {
  require_act(act_, "bias_add", out, bias);
  set_.launch("bias_add", set_.cpu_variant() ? N : N * C, out, bias, u32(N), u32(C));
}

void BiasKernels::grad(FloatBuffer& dbias, const ActBuffer& dout, std::size_t N, std::size_t C) {
  require_act(act_, "bias_grad", dout);
  if (set_.gpu_variant()) {
    if (N == 0 || C == 0) return;
    FloatBuffer& partials = block_sums_.partials(set_.device(), 1, N, C);
    RowBlockSums::run_stage1(set_, "bias_grad", N, C, partials, dout, u32(N), u32(C));
    block_sums_.add_into(set_, dbias, 0, N, C);
    return;
  }
  set_.launch("bias_grad", set_.cpu_variant() ? (C + 15) / 16 : C, dbias, dout, u32(N), u32(C));
}

GeluKernels::GeluKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "gelu", {"gelu_forward", "gelu_backward", "bias_gelu_forward"}, act)),
      act_(act) {}

void GeluKernels::forward(ActBuffer& out, const ActBuffer& x, std::size_t n) {
  require_act(act_, "gelu_forward", out, x);
  set_.launch_elements("gelu_forward", n, out, x, u32(n));
}

void GeluKernels::backward(ActBuffer& dx, const ActBuffer& x, const ActBuffer& dout, std::size_t n) {
  require_act(act_, "gelu_backward", dx, x, dout);
  set_.launch_elements("gelu_backward", n, dx, x, dout, u32(n));
}

void GeluKernels::bias_forward(ActBuffer& pre, ActBuffer& out, const ActBuffer& bias, std::size_t N, std::size_t C) {
  require_act(act_, "bias_gelu_forward", pre, out, bias);
  if (set_.cpu_variant()) {
    set_.launch("bias_gelu_forward", N, pre, out, bias, u32(N), u32(C));  // a row per work-item
  } else {
    set_.launch_elements("bias_gelu_forward", N * C, pre, out, bias, u32(N), u32(C));
  }
}

SwigluKernels::SwigluKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "swiglu", {"swiglu_forward", "swiglu_backward"}, act)), act_(act) {}

void SwigluKernels::forward(ActBuffer& h, const ActBuffer& gu, std::size_t N, std::size_t F) {
  require_act(act_, "swiglu_forward", h, gu);
  require_count("swiglu_forward", N * F, h);
  require_count("swiglu_forward", u32(N * 2 * F), gu);
  if (set_.gpu_variant()) {
    if (N == 0 || F == 0) return;
    launch_row_chunks(set_, "swiglu_forward", swiglu_chunks(set_, F), N, h, gu, u32(N), u32(F));
    return;
  }
  set_.launch("swiglu_forward", set_.cpu_variant() ? N : N * F, h, gu, u32(N), u32(F));
}

void SwigluKernels::backward(ActBuffer& dgu, const ActBuffer& gu, const ActBuffer& dh, std::size_t N, std::size_t F) {
  require_act(act_, "swiglu_backward", dgu, gu, dh);
  require_count("swiglu_backward", N * F, dh);
  require_count("swiglu_backward", u32(N * 2 * F), dgu, gu);
  if (set_.gpu_variant()) {
    if (N == 0 || F == 0) return;
    launch_row_chunks(set_, "swiglu_backward", swiglu_chunks(set_, F), N, dgu, gu, dh, u32(N), u32(F));
    return;
  }
  set_.launch("swiglu_backward", set_.cpu_variant() ? N : N * F, dgu, gu, dh, u32(N), u32(F));
}

AttentionKernels::AttentionKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "attention",
                       {"causal_softmax_forward", "causal_probs_from_lse", "attention_row_dot",
                        "causal_softmax_backward"},
                       act)),
      act_(act) {}

void AttentionKernels::softmax_forward(FloatBuffer& scores, FloatBuffer& lse, std::size_t G, const QueryBlock& q,
                                       float scale, const RowStats& stats) {
  const std::size_t rows = G * q.rows;
  set_.launch("causal_softmax_forward", rows, scores, lse, u32(q.rows), u32(q.keys()), u32(q.q0),
              u32(stats.head_stride), scale, u32(stats.offset), u32(rows));
}

void AttentionKernels::probs_from_lse(FloatBuffer& scores, const FloatBuffer& lse, std::size_t G, const QueryBlock& q,
                                      float scale, const RowStats& stats) {
  const std::size_t rows = G * q.rows;
  set_.launch("causal_probs_from_lse", rows, scores, lse, u32(q.rows), u32(q.keys()), u32(q.q0),
              u32(stats.head_stride), scale, u32(stats.offset), u32(rows));
}

void AttentionKernels::row_dot(FloatBuffer& delta, const ActBuffer& out, const ActBuffer& dout, std::size_t B,
                               std::size_t T, std::size_t NH, std::size_t hs) {
  require_act(act_, "attention_row_dot", out, dout);
  const std::size_t rows = B * NH * T;
  set_.launch("attention_row_dot", rows, delta, out, dout, u32(T), u32(NH), u32(hs), u32(rows));
}

void AttentionKernels::softmax_backward(FloatBuffer& dprobs, const FloatBuffer& probs, const FloatBuffer& delta,
                                        std::size_t G, const QueryBlock& q, float scale, const RowStats& stats) {
  const std::size_t rows = G * q.rows;
  set_.launch("causal_softmax_backward", rows, dprobs, probs, delta, u32(q.rows), u32(q.keys()), u32(q.q0),
              u32(stats.head_stride), scale, u32(stats.offset), u32(rows));
}

RopeKernels::RopeKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "rope", {"rope_rotate"}, act)), act_(act) {}

void RopeKernels::rotate(ActBuffer& qkv, const FloatBuffer& cos, const FloatBuffer& sin, const RopeShape& shape,
                         std::size_t position_offset, bool inverse) {
  require_act(act_, "rope_rotate", qkv);
  const std::size_t half = shape.head_dims / 2, heads = shape.heads + shape.kv_heads;
  if (shape.head_dims % 2 != 0) throw DeviceError(fmt::format("rope_rotate: head size {} is odd", shape.head_dims));
  if (qkv.count() < shape.rows * shape.width()) {
    throw DeviceError(fmt::format("rope_rotate: qkv holds {} elements, fewer than {} rows of {}", qkv.count(),
                                  shape.rows, shape.width()));
  }
  const std::size_t table = (position_offset + shape.seq_len) * half;
  if (cos.count() < table || sin.count() < table) {
    throw DeviceError(fmt::format("rope_rotate: positions up to {} exceed the cos/sin tables of {} positions",
                                  position_offset + shape.seq_len, std::min(cos.count(), sin.count()) / half));
  }
  if (shape.rows == 0 || half == 0) return;
  // A row per work-item (CPU twin), 4 pairs of a head (GPU twin), or one pair.
  const std::size_t pairs_per_item = set_.gpu_variant() ? kGpuElementsPerItem : 1;
  const std::size_t items =
      set_.cpu_variant() ? shape.rows : shape.rows * heads * ((half + pairs_per_item - 1) / pairs_per_item);
  set_.launch("rope_rotate", items, qkv, cos, sin, u32(shape.seq_len), u32(heads), u32(shape.width()), u32(half),
              u32(position_offset), inverse ? -1.0f : 1.0f, u32(items));
}

CrossEntropyKernels::CrossEntropyKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "cross_entropy", {"softmax_cross_entropy"}, act)), act_(act) {}

void CrossEntropyKernels::softmax_cross_entropy(ActBuffer& logits, FloatBuffer& losses, FloatBuffer& correct,
                                                const IntBuffer& targets, const FloatBuffer& weights, std::size_t N,
                                                std::size_t V, std::size_t Vp, float inv_weight_sum) {
  require_act(act_, "softmax_cross_entropy", logits);
  if (set_.gpu_variant()) {
    if (N == 0) return;
    const std::size_t chunks = softmax_chunks(set_, Vp);
    FloatBuffer& stats = grown(stats_, set_.device(), N * chunks * 4, "cross-entropy chunk statistics");
    launch_row_chunks(set_, "pax_softmax_chunk_stats", chunks, N, logits, stats, targets, u32(N), u32(Vp), u32(V),
                      cl_uint{0});
    launch_row_chunks(set_, "softmax_cross_entropy", chunks, N, logits, stats, losses, correct, targets, weights,
                      u32(N), u32(V), u32(Vp), inv_weight_sum);
    return;
  }
  set_.launch("softmax_cross_entropy", N, logits, losses, correct, targets, weights, u32(N), u32(V), u32(Vp),
              inv_weight_sum);
}

VocabParallelKernels::VocabParallelKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "vocab_parallel", {"vocab_parallel_partial_stats", "vocab_parallel_finish"},
                       act)),
      act_(act) {}

void VocabParallelKernels::partial_stats(const ActBuffer& logits, FloatBuffer& partials, const IntBuffer& targets,
                                         std::size_t N, std::size_t Vl, std::size_t real, std::size_t vocab_begin,
                                         std::size_t rank) {
  constexpr const char* kKernel = "vocab_parallel_partial_stats";
  require_act(act_, kKernel, logits);
  require_real_columns(kKernel, real, Vl);
  // P is not an argument here: partials' length says how many row blocks it has.
  const std::size_t blocks = N == 0 ? rank + 1 : partials.count() / (3 * N);
  if (rank >= blocks) {
    throw ConfigError(fmt::format("{}: rank {} is past the {} row blocks of partials ({} floats for {} rows)", kKernel,
                                  rank, blocks, partials.count(), N));
  }
  require_count(kKernel, N * Vl, logits);
  require_count(kKernel, N, targets);
  if (set_.gpu_variant()) {
    if (N == 0) return;
    const std::size_t chunks = softmax_chunks(set_, real);
    FloatBuffer& stats = grown(stats_, set_.device(), N * chunks * 4, "vocabulary-parallel chunk statistics");
    launch_row_chunks(set_, "pax_softmax_chunk_stats", chunks, N, logits, stats, targets, u32(N), u32(Vl), u32(real),
                      u32(vocab_begin));
    set_.launch(kKernel, N, stats, partials, u32(N), u32(chunks), u32(rank));
    return;
  }
  set_.launch(kKernel, N, logits, partials, targets, u32(N), u32(Vl), u32(real), u32(vocab_begin), u32(rank));
}

void VocabParallelKernels::finish(ActBuffer& logits, const FloatBuffer& partials, FloatBuffer& losses,
                                  FloatBuffer& correct, const IntBuffer& targets, const FloatBuffer& weights,
                                  std::size_t N, std::size_t Vl, std::size_t real, std::size_t vocab_begin,
                                  std::size_t P, float inv_weight_sum) {
  constexpr const char* kKernel = "vocab_parallel_finish";
  require_act(act_, kKernel, logits);
  require_real_columns(kKernel, real, Vl);
  if (P == 0) throw ConfigError(fmt::format("{}: P = 0 devices; the vocabulary needs at least one", kKernel));
  require_count(kKernel, N * Vl, logits);
  require_count(kKernel, P * N * 3, partials);
  require_count(kKernel, N, losses, correct, targets, weights);
  if (set_.gpu_variant()) {
    if (N == 0) return;
    launch_row_chunks(set_, kKernel, softmax_chunks(set_, Vl), N, logits, partials, losses, correct, targets, weights,
                      u32(N), u32(Vl), u32(real), u32(vocab_begin), u32(P), inv_weight_sum);
    return;
  }
  set_.launch(kKernel, N, logits, partials, losses, correct, targets, weights, u32(N), u32(Vl), u32(real),
              u32(vocab_begin), u32(P), inv_weight_sum);
}

ResidualKernels::ResidualKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "residual", {"residual_add"}, act)), act_(act) {}

void ResidualKernels::add(ActBuffer& out, const ActBuffer& a, const ActBuffer& b, std::size_t n) {
  require_act(act_, "residual_add", out, a, b);
  if (out.count() < n || a.count() < n || b.count() < n) {
    throw DeviceError(fmt::format("residual_add: a buffer is shorter than the {} elements asked for", n));
  }
  set_.launch_elements("residual_add", n, out, a, b, u32(n));
}

CastKernels::CastKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : set_(act_program(cache, device, "cast", {"cast_to_act", "cast_to_float", "cast_rows_to_act"}, act)), act_(act) {}

void CastKernels::to_act(ActBuffer& out, const FloatBuffer& in, std::size_t offset, std::size_t count) {
  require_act(act_, "cast_to_act", out);
  require_range("cast_to_act", offset, count, out.count(), in.count());
  if (out.get() == in.get() || count == 0) return;  // a float32 view of `in` itself
  set_.launch_elements("cast_to_act", count, out, in, u32(offset), u32(count));
}

void CastKernels::to_float(FloatBuffer& out, const ActBuffer& in, std::size_t offset, std::size_t count) {
  require_act(act_, "cast_to_float", in);
  require_range("cast_to_float", offset, count, out.count(), in.count());
  if (out.get() == in.get() || count == 0) return;
  set_.launch_elements("cast_to_float", count, out, in, u32(offset), u32(count));
}

void CastKernels::rows_to_act(ActBuffer& out, std::size_t out_offset, std::size_t out_ld, const FloatBuffer& in,
                              std::size_t rows, std::size_t cols) {
  require_act(act_, "cast_rows_to_act", out);
  if (rows == 0 || cols == 0) return;
  if (cols > out_ld || in.count() < rows * cols || out.count() < out_offset + (rows - 1) * out_ld + cols) {
    throw DeviceError(fmt::format("cast_rows_to_act: {} rows of {} at element {}, {} apart, exceed the buffers", rows,
                                  cols, out_offset, out_ld));
  }
  set_.launch_elements("cast_rows_to_act", rows * cols, out, in, u32(out_offset), u32(out_ld), u32(cols), u32(rows * cols));
}

OptimizerKernels::OptimizerKernels(device::ProgramCache& cache, device::Device& device)
    : set_(cache, device, "optimizer", {"sum_squares_partial", "adam_update"}) {}

void OptimizerKernels::sum_squares(FloatBuffer& partial, const FloatBuffer& x, std::size_t n, std::size_t chunk) {
  // A work-item per chunk, or in the GPU set a work-group per chunk.
  set_.launch_rows("sum_squares_partial", (n + chunk - 1) / chunk, partial, x, u32(n), u32(chunk));
}

void OptimizerKernels::adam(FloatBuffer& params, FloatBuffer& m, FloatBuffer& v, const FloatBuffer& grads,
                            std::size_t n, const AdamArgs& a) {
  set_.launch_elements("adam_update", n, params, m, v, grads, u32(n), a.grad_scale, a.lr, a.decay1, a.decay2, a.eps,
                       a.weight_decay);
}

}  // namespace paxocl::kernels
