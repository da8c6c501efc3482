#include "models/layers/rotary_embedding.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "common/errors.h"

namespace paxocl::models {

RotaryEmbedding::RotaryEmbedding(const device::Device& device, std::size_t num_heads, std::size_t num_kv_heads,
                                 std::size_t head_dims, float base, std::size_t max_positions,
                                 const std::string& name)
    : name_(name), heads_(num_heads), kv_heads_(num_kv_heads), hs_(head_dims), max_positions_(max_positions) {
  if (head_dims == 0 || head_dims % 2 != 0) {
    throw ConfigError(fmt::format("{}: rotary embeddings need an even head size, got {}", name, head_dims));
  }
  if (max_positions == 0) throw ConfigError(fmt::format("{}: rotary embeddings need max_positions >= 1", name));
  if (!(base > 1.0f)) throw ConfigError(fmt::format("{}: the rotary base must exceed 1, got {}", name, base));
  const std::size_t half = head_dims / 2;
  std::vector<float> cos_host(max_positions * half), sin_host(max_positions * half);
  for (std::size_t p = 0; p < max_positions; ++p) {
    for (std::size_t i = 0; i < half; ++i) {
      const double inv_freq = std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) /
                                                                      static_cast<double>(head_dims));
      const double angle = static_cast<double>(p) * inv_freq;
      cos_host[p * half + i] = static_cast<float>(std::cos(angle));
      sin_host[p * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  cos_ = make_buffer(device, cos_host.size(), name + ".cos");
  sin_ = make_buffer(device, sin_host.size(), name + ".sin");
  // A queue of its own: the layer receives a const device, and the tables are written once, blocking.
  device::Queue queue = device.make_queue();
  queue.write(cos_, std::span<const float>(cos_host));
  queue.write(sin_, std::span<const float>(sin_host));
}

kernels::RopeShape RotaryEmbedding::shape(const LayerContext& ctx) const {
  return kernels::RopeShape{ctx.rows(), ctx.seq_len, heads_, kv_heads_, hs_};
}

void RotaryEmbedding::forward(LayerContext& ctx, ActBuffer& qkv, std::size_t position_offset) {
  if (position_offset + ctx.seq_len > max_positions_) {
    throw ConfigError(fmt::format("{}: positions {} .. {} exceed the rotary tables' max_positions {}", name_,
                                  position_offset, position_offset + ctx.seq_len - 1, max_positions_));
  }
  offset_ = position_offset;
  ctx.kernels.rope.rotate(qkv, cos_, sin_, shape(ctx), position_offset, false);
}

void RotaryEmbedding::backward(LayerContext& ctx, ActBuffer& dqkv) {
  ctx.kernels.rope.rotate(dqkv, cos_, sin_, shape(ctx), offset_, true);
}

}  // namespace paxocl::models
