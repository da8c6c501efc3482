#include "models/layers/lm_head.h"

#include <algorithm>

namespace paxocl::models {

using kernels::GemmShape;
using kernels::Transpose;

LmHead::LmHead(const device::Device& device, device::DType act, Param wte, std::size_t dims, std::size_t vocab,
               std::size_t padded_vocab, std::size_t max_rows, const std::string& name, VocabShard shard)
    : wte_(std::move(wte)),
      dims_(dims),
      vocab_(vocab),
      padded_vocab_(padded_vocab),
      shard_(shard),
      logits_(make_buffer(device, act, max_rows * padded_vocab, name + ".logits")),
      losses_(make_buffer(device, max_rows, name + ".losses")),
      correct_(make_buffer(device, max_rows, name + ".correct")),
      weights_(make_buffer(device, max_rows, name + ".weights")),
      dy_(make_buffer(device, act, max_rows * dims, name + ".dy")),
      targets_(device.context(), max_rows, name + ".targets"),
      partials_(make_buffer(device, shard.parts > 1 ? static_cast<std::size_t>(shard.parts) * max_rows * 3 : 1,
                            name + ".partials")) {}

LossStats LmHead::forward(LayerContext& ctx, const ActBuffer& y, const std::vector<int>& targets,
                              const std::vector<float>& weights, float gradient_scale, double mean_over) {
  y_ = &y;
  const std::size_t N = ctx.rows();
  double weight_sum = 0;
  for (std::size_t i = 0; i < N; ++i) weight_sum += weights[i];
  auto& q = ctx.device.queue();
  q.write(targets_, std::span<const cl_int>(targets.data(), N));
  q.write(weights_, std::span<const float>(weights.data(), N));
  // logits (N, Vp) = y (N, C) wte^T
  ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, N, padded_vocab_, dims_}, 1.0f, operand(y, 0, dims_),
               operand(wte_.compute, 0, dims_), 0.0f, operand(logits_, 0, padded_vocab_));
  // dlogits of gradient_scale x the weighted mean loss
  const double denominator = mean_over > 0 ? mean_over : weight_sum;
  const float scale_over_weight = denominator > 0 ? static_cast<float>(gradient_scale / denominator) : 0.0f;
  if (shard_.parts > 1) {
    const auto parts = static_cast<std::size_t>(shard_.parts), rank = static_cast<std::size_t>(shard_.rank);
    q.zero(partials_.get(), parts * N * 3 * sizeof(float));
    ctx.kernels.vocab_parallel.partial_stats(logits_, partials_, targets_, N, padded_vocab_, vocab_, shard_.begin, rank);
    ctx.tensor->sum(partials_, parts * N * 3);
    ctx.kernels.vocab_parallel.finish(logits_, partials_, losses_, correct_, targets_, weights_, N, padded_vocab_,
                                      vocab_, shard_.begin, parts, scale_over_weight);
  } else {
    ctx.kernels.cross_entropy.softmax_cross_entropy(logits_, losses_, correct_, targets_, weights_, N, vocab_,
                                                    padded_vocab_, scale_over_weight);
  }
  positions_.losses.resize(N);
  positions_.correct.resize(N);
  q.read(losses_, std::span<float>(positions_.losses));
  q.read(correct_, std::span<float>(positions_.correct));
  LossStats stats;
  stats.weight = weight_sum;
  for (std::size_t i = 0; i < N; ++i) {
    stats.weighted_loss += positions_.losses[i];
    stats.correct += positions_.correct[i];
  }
  return stats;
}

ActBuffer& LmHead::backward(LayerContext& ctx) {
  const std::size_t N = ctx.rows();
  // dwte (Vp, C) += dlogits^T (Vp, N) y (N, C);   dy (N, C) = dlogits (N, Vp) wte (Vp, C)
  ctx.gemm.run(GemmShape{Transpose::kYes, Transpose::kNo, padded_vocab_, dims_, N}, 1.0f,
               operand(logits_, 0, padded_vocab_), operand(*y_, 0, dims_), 1.0f, operand(wte_.grad, 0, dims_));
  ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, N, dims_, padded_vocab_}, 1.0f,
               operand(logits_, 0, padded_vocab_), operand(wte_.compute, 0, dims_), 0.0f, operand(dy_, 0, dims_));
  return dy_;
}

std::vector<float> LmHead::logits(LayerContext& ctx, const ActBuffer& y, std::size_t first_row, std::size_t stride,
                                  std::size_t rows) {
  // logits (rows, Vp) = y[first_row + i * stride] (rows, C) W^T: rows `stride * C` apart in y.
  ctx.gemm.run(GemmShape{Transpose::kNo, Transpose::kYes, rows, padded_vocab_, dims_}, 1.0f,
               operand(y, first_row * dims_, stride * dims_), operand(wte_.compute, 0, dims_), 0.0f,
               operand(logits_, 0, padded_vocab_));
  const std::vector<float> all = logits_.view(0, rows * padded_vocab_, "logits.decode").read(ctx.device.queue());
  std::vector<float> out(rows * vocab_);
  for (std::size_t r = 0; r < rows; ++r) {
    std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(r * padded_vocab_), vocab_,
                out.begin() + static_cast<std::ptrdiff_t>(r * vocab_));
  }
  return out;
}

}  // namespace paxocl::models
