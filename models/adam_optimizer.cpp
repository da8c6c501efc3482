#include "models/adam_optimizer.h"

#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

namespace paxocl::models {

AdamOptimizer::AdamOptimizer(kernels::DeviceRuntime& runtime, std::size_t total, std::size_t decayed_end,
                             AdamConfig config)
    : AdamOptimizer(runtime, total,
                    std::vector<Segment>{{0, decayed_end, true}, {decayed_end, total - decayed_end, false}}, config) {}

AdamOptimizer::AdamOptimizer(kernels::DeviceRuntime& runtime, std::size_t total, std::vector<Segment> segments,
                             AdamConfig config)
    : AdamOptimizer(runtime, 0, total, std::move(segments), config) {}

AdamOptimizer::AdamOptimizer(kernels::DeviceRuntime& runtime, std::size_t origin, std::size_t total,
                             std::vector<Segment> segments, AdamConfig config)
    : runtime_(runtime),
      origin_(origin),
      total_(total),
      config_(config),
      m_(make_buffer(runtime.device(), total, "adam.m")),
      v_(make_buffer(runtime.device(), total, "adam.v")),
      partial_(make_buffer(runtime.device(), (total + kNormChunk - 1) / kNormChunk, "adam.norm_partials")) {
  runtime_.kernels().elementwise.fill(m_, 0.0f);
  runtime_.kernels().elementwise.fill(v_, 0.0f);
  // Adjacent segments of the same decay become one launch; empty ones none.
  for (const Segment& s : segments) {
    if (s.count == 0) continue;
    if (s.offset + s.count > total_) throw std::logic_error("AdamOptimizer: a segment lies outside the buffers");
    if (!segments_.empty() && segments_.back().decay == s.decay && segments_.back().offset + segments_.back().count == s.offset) {
      segments_.back().count += s.count;
    } else {
      segments_.push_back(s);
    }
  }
}

void AdamOptimizer::load_state(std::span<const float> m, std::span<const float> v, long applied, long skipped) {
  if (m.size() != total_ || v.size() != total_) {
    throw std::logic_error("AdamOptimizer::load_state: moments of the wrong size");
  }
  runtime_.queue().write(m_, m);
  runtime_.queue().write(v_, v);
  count_ = applied;
  skipped_ = skipped;
}

double AdamOptimizer::sum_squares(const FloatBuffer& grads) {
  if (origin_ != 0) {
    const Segment shard{origin_, total_, false};
    return sum_squares(grads, std::span<const Segment>(&shard, 1));
  }
  runtime_.kernels().optimizer.sum_squares(partial_, grads, total_, kNormChunk);
  std::vector<float> partial(partial_.count());
  runtime_.queue().read(partial_, std::span<float>(partial));
  double sum = 0;
  for (float p : partial) sum += p;
  return sum;
}

double AdamOptimizer::sum_squares(const FloatBuffer& grads, std::span<const Segment> ranges) {
  double sum = 0;
  for (const Segment& r : ranges) {
    if (r.count == 0) continue;
    runtime_.kernels().optimizer.sum_squares(partial_, grads.view(r.offset, r.count, "norm range"), r.count, kNormChunk);
    std::vector<float> partial((r.count + kNormChunk - 1) / kNormChunk);
    runtime_.queue().read(partial_, std::span<float>(partial));
    for (float p : partial) sum += p;
  }
  return sum;
}

double AdamOptimizer::grad_norm(const FloatBuffer& grads) { return std::sqrt(sum_squares(grads)); }

OptimizerStepStats AdamOptimizer::step(FloatBuffer& params, const FloatBuffer& grads, double lr, double loss_scale) {
  return step_with_norm(params, grads, lr, grad_norm(grads), loss_scale);
}

OptimizerStepStats AdamOptimizer::step_with_norm(FloatBuffer& params, const FloatBuffer& grads, double lr,
                                                 double grad_norm, double loss_scale) {
  OptimizerStepStats stats;
  stats.grad_norm = grad_norm / loss_scale;
  if (!std::isfinite(stats.grad_norm)) {
    ++skipped_;
    return stats;
  }
  if (config_.clip_gradient_norm > 0 && stats.grad_norm > config_.clip_gradient_norm) {
    stats.grad_scale = config_.clip_gradient_norm / stats.grad_norm;
  }
  ++count_;
  // praxis bias_corrected_decay: beta (1 - beta^(t-1)) / (1 - beta^t); 0 at t = 1.
  const double t = static_cast<double>(count_);
  auto decay = [t](double beta) { return beta * (1.0 - std::pow(beta, t - 1)) / (1.0 - std::pow(beta, t)); };
  kernels::OptimizerKernels::AdamArgs args{static_cast<float>(stats.grad_scale / loss_scale), static_cast<float>(lr),
                                           static_cast<float>(decay(config_.beta1)),
                                           static_cast<float>(decay(config_.beta2)),
                                           static_cast<float>(config_.epsilon),
                                           static_cast<float>(config_.weight_decay)};
  // One launch per segment, over views of the buffers.
  for (const Segment& s : segments_) {
    FloatBuffer p = params.view(origin_ + s.offset, s.count, "params"), m = m_.view(s.offset, s.count, "m"),
                v = v_.view(s.offset, s.count, "v"), g = grads.view(origin_ + s.offset, s.count, "grads");
    args.weight_decay = s.decay ? static_cast<float>(config_.weight_decay) : 0.0f;
    runtime_.kernels().optimizer.adam(p, m, v, g, s.count, args);
  }
  stats.applied = true;
  return stats;
}

OptimizerStepStats sharded_adam_step(std::span<const AdamShard> shards, double lr, double loss_scale,
                                     const std::function<void(std::vector<double>&)>& all_reduce_sum) {
  std::vector<double> sum_squares = {0.0};
  for (const AdamShard& s : shards) {
    if (!s.counted) continue;
    sum_squares[0] += s.counted_ranges.empty() ? s.adam->sum_squares(*s.grads)
                                               : s.adam->sum_squares(*s.grads, s.counted_ranges);
  }
  all_reduce_sum(sum_squares);
  const double norm = std::sqrt(sum_squares[0]);
  OptimizerStepStats stats;
  for (const AdamShard& s : shards) stats = s.adam->step_with_norm(*s.params, *s.grads, lr, norm, loss_scale);
  return stats;
}

std::vector<AdamOptimizer::Segment> segments_outside(std::size_t total, const std::vector<ParameterLayout::Range>& excluded) {
  std::vector<AdamOptimizer::Segment> out;
  std::size_t at = 0;
  for (const auto& r : excluded) {
    if (r.offset > at) out.push_back({at, r.offset - at, false});
    at = r.offset + r.count;
  }
  if (total > at) out.push_back({at, total - at, false});
  return out;
}

}  // namespace paxocl::models
