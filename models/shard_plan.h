// ShardPlan: how FSDP (ZeRO-3) splits the parameters over the mesh's fsdp axis.
// Every unit (ParameterLayout::Unit: the part outside the blocks, then each block) is split on
// alignment boundaries first over the axis's DCN part (processes: chunk p), then each chunk over
// its ICI part (the process's devices: shard d of chunk p), as Pax's hybrid mesh orders the axis
// (global fsdp index = p * ici_parts + d). Sizes need not divide: the first pieces get one
// alignment block more, and trailing pieces may be empty.
// A device keeps its shards of all units one after another, each starting aligned, in one
// buffer of shard_floats(p, d): its parameters, gradients and Adam moments all use that layout.
// FSDP inside a pipeline stage (scheduler/pipeline_step.h) splits a stage's whole flat buffer the
// same way, as one unit (buffer_shard): a device's shard is then one contiguous, aligned range.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "models/parameter_layout.h"

namespace paxocl::models {

class ShardPlan {
 public:
  ShardPlan(const ParameterLayout& layout, int dcn_parts, int ici_parts);

  struct Piece {
    std::size_t begin = 0, end = 0;  // [begin, end) inside a packed unit
    std::size_t size() const { return end - begin; }
  };
  struct Segment {
    std::size_t offset = 0, count = 0;  // in a device's shard buffer
    bool decay = false;
  };

  // Piece `index` of [begin, end) split on `alignment` blocks into `parts`.
  static Piece split_aligned(std::size_t begin, std::size_t end, std::size_t alignment, int parts, int index);
  // [0, floats) as one unit: the chunk of `process` (of dcn_parts), then its piece `device` (of ici_parts).
  static Piece buffer_shard(std::size_t floats, std::size_t alignment, int dcn_parts, int ici_parts, int process,
                            int device);

  const std::vector<ParameterLayout::Unit>& units() const { return units_; }  // unit(-1), unit(0), ...
  const ParameterLayout::Unit& unit(int block) const { return units_.at(static_cast<std::size_t>(block + 1)); }
  int dcn_parts() const { return dcn_parts_; }
  int ici_parts() const { return ici_parts_; }

  Piece chunk(int block, int process) const;             // process's chunk of the unit
  Piece shard(int block, int process, int device) const;  // device's shard of the unit (inside the chunk)
  std::size_t shard_offset(int block, int process, int device) const;  // where it sits in the shard buffer
  std::size_t shard_floats(int process, int device) const;
  std::vector<Segment> decay_segments(int process, int device) const;  // weight decay over the shard buffer

  // Host images. pack/unpack: a unit <-> its ranges of the flat layout (ParameterLayout::total()).
  void pack(int block, std::span<const float> flat, std::span<float> packed) const;
  void unpack(int block, std::span<const float> packed, std::span<float> flat) const;
  // A device's shard buffer <-> the flat layout.
  std::vector<float> extract(std::span<const float> flat, int process, int device) const;
  void place(std::span<const float> shards, int process, int device, std::span<float> flat) const;

 private:
  Piece split(std::size_t begin, std::size_t end, int parts, int index) const;  // on alignment blocks
  const ParameterLayout& layout_;
  std::vector<ParameterLayout::Unit> units_;
  int dcn_parts_, ici_parts_;
};

}  // namespace paxocl::models
