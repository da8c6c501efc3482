#include "models/adam_optimizer.h"

#include <cmath>
#include <vector>

namespace paxocl::models {

AdamOptimizer::AdamOptimizer(device::Device& device, kernels::KernelLibrary& kernels, std::size_t total,
                             std::size_t decayed_end, AdamConfig config)
    : device_(device),
      kernels_(kernels),
      total_(total),
      decayed_end_(decayed_end),
      config_(config),
      m_(make_buffer(device, total, "adam.m")),
      v_(make_buffer(device, total, "adam.v")),
      partial_(make_buffer(device, (total + kNormChunk - 1) / kNormChunk, "adam.norm_partials")) {
  kernels_.elementwise.fill(m_, 0.0f);
  kernels_.elementwise.fill(v_, 0.0f);
}

double AdamOptimizer::grad_norm(const FloatBuffer& grads) {
  kernels_.optimizer.sum_squares(partial_, grads, total_, kNormChunk);
  std::vector<float> partial(partial_.count());
  device_.queue().read(partial_, std::span<float>(partial));
  double sum = 0;
  for (float p : partial) sum += p;
  return std::sqrt(sum);
}

OptimizerStepStats AdamOptimizer::step(FloatBuffer& params, const FloatBuffer& grads, double lr) {
  OptimizerStepStats stats;
  stats.grad_norm = grad_norm(grads);
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
  kernels::OptimizerKernels::AdamArgs args{static_cast<float>(stats.grad_scale), static_cast<float>(lr),
                                           static_cast<float>(decay(config_.beta1)),
                                           static_cast<float>(decay(config_.beta2)),
                                           static_cast<float>(config_.epsilon),
                                           static_cast<float>(config_.weight_decay)};
  // Matrices (decayed), then vectors (no decay): two launches over views of the flat buffers.
  auto views = [&](std::size_t begin, std::size_t count) {
    return std::array<FloatBuffer, 4>{params.view(begin, count, "params"), m_.view(begin, count, "m"),
                                      v_.view(begin, count, "v"), grads.view(begin, count, "grads")};
  };
  if (decayed_end_ > 0) {
    auto [p, m, v, g] = views(0, decayed_end_);
    kernels_.optimizer.adam(p, m, v, g, decayed_end_, args);
  }
  if (total_ > decayed_end_) {
    auto [p, m, v, g] = views(decayed_end_, total_ - decayed_end_);
    args.weight_decay = 0.0f;
    kernels_.optimizer.adam(p, m, v, g, total_ - decayed_end_, args);
  }
  stats.applied = true;
  return stats;
}

}  // namespace paxocl::models
