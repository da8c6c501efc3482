#include "models/shard_plan.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::models {

namespace {
std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
}  // namespace

ShardPlan::ShardPlan(const ParameterLayout& layout, int dcn_parts, int ici_parts)
    : layout_(layout), dcn_parts_(dcn_parts), ici_parts_(ici_parts) {
  if (dcn_parts < 1 || ici_parts < 1) {
    throw ConfigError(fmt::format("an FSDP split over {} x {} parts: both must be >= 1", dcn_parts, ici_parts));
  }
  for (int b = -1; b < layout.num_blocks(); ++b) units_.push_back(layout.unit(b));
}

ShardPlan::Piece ShardPlan::split_aligned(std::size_t begin, std::size_t end, std::size_t alignment, int parts,
                                          int index) {
  if (index < 0 || index >= parts) throw std::out_of_range(fmt::format("piece {} of {}", index, parts));
  const std::size_t a = alignment;
  const std::size_t blocks = (end - begin + a - 1) / a, base = blocks / static_cast<std::size_t>(parts),
                    extra = blocks % static_cast<std::size_t>(parts), i = static_cast<std::size_t>(index);
  const std::size_t first = i * base + std::min(i, extra), count = base + (i < extra ? 1 : 0);
  return Piece{std::min(end, begin + first * a), std::min(end, begin + (first + count) * a)};
}

ShardPlan::Piece ShardPlan::buffer_shard(std::size_t floats, std::size_t alignment, int dcn_parts, int ici_parts,
                                         int process, int device) {
  const Piece c = split_aligned(0, floats, alignment, dcn_parts, process);
  return split_aligned(c.begin, c.end, alignment, ici_parts, device);
}

ShardPlan::Piece ShardPlan::split(std::size_t begin, std::size_t end, int parts, int index) const {
  return split_aligned(begin, end, layout_.alignment(), parts, index);
}

ShardPlan::Piece ShardPlan::chunk(int block, int process) const { return split(0, unit(block).size, dcn_parts_, process); }

ShardPlan::Piece ShardPlan::shard(int block, int process, int device) const {
  const Piece c = chunk(block, process);
  return split(c.begin, c.end, ici_parts_, device);
}

std::size_t ShardPlan::shard_offset(int block, int process, int device) const {
  std::size_t offset = 0;
  for (int b = -1; b < block; ++b) offset = align_up(offset + shard(b, process, device).size(), layout_.alignment());
  return offset;
}

std::size_t ShardPlan::shard_floats(int process, int device) const {
  const int last = layout_.num_blocks() - 1;
  return shard_offset(last, process, device) + shard(last, process, device).size();
}

std::vector<ShardPlan::Segment> ShardPlan::decay_segments(int process, int device) const {
  std::vector<Segment> segments;
  for (const ParameterLayout::Unit& u : units_) {
    const Piece s = shard(u.block, process, device);
    const std::size_t at = shard_offset(u.block, process, device), split_at = std::clamp(u.decayed, s.begin, s.end);
    segments.push_back({at, split_at - s.begin, true});
    segments.push_back({at + (split_at - s.begin), s.end - split_at, false});
  }
  return segments;
}

void ShardPlan::pack(int block, std::span<const float> flat, std::span<float> packed) const {
  const ParameterLayout::Unit& u = unit(block);
  std::fill(packed.begin(), packed.end(), 0.0f);
  for (std::size_t i = 0; i < u.ranges.size(); ++i) {
    std::copy_n(flat.begin() + static_cast<std::ptrdiff_t>(u.ranges[i].offset), u.ranges[i].count,
                packed.begin() + static_cast<std::ptrdiff_t>(u.packed_offsets[i]));
  }
}

void ShardPlan::unpack(int block, std::span<const float> packed, std::span<float> flat) const {
  const ParameterLayout::Unit& u = unit(block);
  for (std::size_t i = 0; i < u.ranges.size(); ++i) {
    std::copy_n(packed.begin() + static_cast<std::ptrdiff_t>(u.packed_offsets[i]), u.ranges[i].count,
                flat.begin() + static_cast<std::ptrdiff_t>(u.ranges[i].offset));
  }
}

std::vector<float> ShardPlan::extract(std::span<const float> flat, int process, int device) const {
  std::vector<float> shards(shard_floats(process, device), 0.0f), packed;
  for (const ParameterLayout::Unit& u : units_) {
    packed.resize(u.size);
    pack(u.block, flat, packed);
    const Piece s = shard(u.block, process, device);
    std::copy(packed.begin() + static_cast<std::ptrdiff_t>(s.begin), packed.begin() + static_cast<std::ptrdiff_t>(s.end),
              shards.begin() + static_cast<std::ptrdiff_t>(shard_offset(u.block, process, device)));
  }
  return shards;
}

void ShardPlan::place(std::span<const float> shards, int process, int device, std::span<float> flat) const {
  std::vector<float> packed;
  for (const ParameterLayout::Unit& u : units_) {
    packed.resize(u.size);
    pack(u.block, flat, packed);
    const Piece s = shard(u.block, process, device);
    std::copy_n(shards.begin() + static_cast<std::ptrdiff_t>(shard_offset(u.block, process, device)), s.size(),
                packed.begin() + static_cast<std::ptrdiff_t>(s.begin));
    unpack(u.block, packed, flat);
  }
}

}  // namespace paxocl::models
