#include "models/parameter_layout.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "common/errors.h"
#include "models/tensor_names.h"

namespace paxocl::models {

namespace names = tensor_names;

std::string ParameterLayout::layer_name(int layer, std::string_view suffix) {
  return fmt::format("{}{}.{}", names::kBlockPrefix, layer, suffix);
}

namespace {
// a * b and a + b, or ConfigError naming `what` when the model's sizes do not fit in size_t.
std::size_t checked_mul(std::size_t a, std::size_t b, const std::string& what) {
  std::size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw ConfigError(fmt::format("the model is too large to address: {} overflows a tensor's or the layout's size", what));
  }
  return r;
}
std::size_t checked_add(std::size_t a, std::size_t b, const std::string& what) {
  std::size_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return checked_mul(~std::size_t{0}, 2, what);  // reports the overflow
  return r;
}
}  // namespace

ParameterLayout::ParameterLayout(const ModelConfig& config, std::size_t alignment)
    : ParameterLayout(config.tensor_defs(), config.num_blocks(), alignment) {}

ParameterLayout::ParameterLayout(const std::vector<TensorDef>& defs, int num_blocks, std::size_t alignment)
    : alignment_(std::max<std::size_t>(1, alignment)), num_blocks_(num_blocks) {
  auto aligned = [&](std::size_t n, const std::string& what) {
    return checked_add(n, alignment_ - 1, what) / alignment_ * alignment_;
  };
  auto add = [&](const TensorDef& d) {
    TensorSpec t;
    t.name = d.name;
    t.count = 1;
    for (auto n : d.shape) t.count = checked_mul(t.count, static_cast<std::size_t>(n), d.name);  // n >= 1
    t.shape = d.shape;
    t.decay = d.decay;
    t.init = d.init;
    t.init_std = d.init_std;
    t.block = d.block;
    t.offset = aligned(total_, d.name);
    total_ = checked_add(t.offset, t.count, d.name);
    index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  };
  for (const TensorDef& d : defs) {
    if (d.decay) add(d);
  }
  total_ = aligned(total_, "the decayed tensors");
  decayed_end_ = total_;
  for (const TensorDef& d : defs) {
    if (!d.decay) add(d);
  }
  total_ = aligned(total_, "the layout");
}

namespace {

// Merges tensors (in layout order) into ranges; tensors separated only by alignment padding join.
std::vector<ParameterLayout::Range> merge(const std::vector<TensorSpec>& tensors, std::size_t alignment,
                                          const std::function<bool(const TensorSpec&)>& take) {
  std::vector<ParameterLayout::Range> ranges;
  for (const TensorSpec& t : tensors) {
    if (!take(t)) continue;
    if (!ranges.empty()) {
      ParameterLayout::Range& last = ranges.back();
      const std::size_t end = (last.offset + last.count + alignment - 1) / alignment * alignment;
      if (end == t.offset) {
        last.count = t.offset + t.count - last.offset;
        continue;
      }
    }
    ranges.push_back({t.offset, t.count});
  }
  return ranges;
}
}  // namespace

std::vector<ParameterLayout::Range> ParameterLayout::ranges_of_blocks(int first, int last) const {
  return merge(tensors_, alignment_, [&](const TensorSpec& t) { return block_of(t) >= first && block_of(t) <= last; });
}

std::vector<ParameterLayout::Range> ParameterLayout::ranges_outside_blocks() const {
  return merge(tensors_, alignment_, [](const TensorSpec& t) { return block_of(t) < 0; });
}

ParameterLayout::Unit ParameterLayout::unit(int block) const {
  if (block < -1 || block >= num_blocks_) {
    throw std::out_of_range(fmt::format("no unit for block {} in a model of {} blocks", block, num_blocks_));
  }
  Unit u;
  u.block = block;
  u.ranges = block < 0 ? ranges_outside_blocks() : ranges_of_blocks(block, block);
  for (const Range& r : u.ranges) {
    u.size = (u.size + alignment_ - 1) / alignment_ * alignment_;
    u.packed_offsets.push_back(u.size);
    if (r.offset < decayed_end_) u.decayed = u.size + std::min(r.count, decayed_end_ - r.offset);
    u.size += r.count;
  }
  // Past the matrices' alignment padding, so shards split there stay sub-buffer aligned (the padding is zero).
  u.decayed = std::min(u.size, (u.decayed + alignment_ - 1) / alignment_ * alignment_);
  return u;
}

std::size_t ParameterLayout::packed_offset(const TensorSpec& t) const {
  const Unit u = unit(block_of(t));
  for (std::size_t i = 0; i < u.ranges.size(); ++i) {
    const Range& r = u.ranges[i];
    if (t.offset >= r.offset && t.offset < r.offset + r.count) return u.packed_offsets[i] + (t.offset - r.offset);
  }
  throw std::logic_error(fmt::format("tensor '{}' lies in no range of its unit", t.name));
}

const TensorSpec& ParameterLayout::at(std::string_view name) const {
  if (const auto it = index_.find(name); it != index_.end()) return tensors_[it->second];
  throw std::out_of_range(fmt::format("no parameter tensor named '{}'", name));
}

std::int64_t ParameterLayout::parameter_count() const {
  std::int64_t n = 0;
  for (const TensorSpec& t : tensors_) n += static_cast<std::int64_t>(t.count);
  return n;
}

}  // namespace paxocl::models
