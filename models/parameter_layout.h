// ParameterLayout: where every parameter tensor of a model lives inside one flat float array
// (built from the architecture's TensorDef list, ModelConfig::tensor_defs()).
// The same layout indexes the device buffers (parameters, gradients, Adam moments) and the host
// image used by weight files and checkpoints, so the optimizer and the global gradient norm run
// over one contiguous range, and weight decay applies to one prefix of it.
//
// Order: every matrix (weight-decayed) first, then every vector (biases, LayerNorm scales and
// biases, not decayed). Each tensor starts at a multiple of `alignment` floats, so it can be
// addressed as an OpenCL sub-buffer; the gaps are zero and stay zero.
//
// Each architecture names its tensors (GptConfig's list: gpt_config.h, tensor_defs_of).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_config.h"
#include "models/tensor_def.h"

namespace paxocl::models {

class ParameterLayout {
 public:
  // `alignment` in floats (>= 1); use the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN for sub-buffers.
  // Validates `config` first (ConfigError), and throws ConfigError when a tensor's or the layout's
  // size does not fit in size_t, so no size below has wrapped.
  ParameterLayout(const ModelConfig& config, std::size_t alignment);
  // Any architecture: the decayed tensors first, then the others, each group in `defs`' order.
  // ConfigError when a size does not fit in size_t.
  ParameterLayout(const std::vector<TensorDef>& defs, int num_blocks, std::size_t alignment);

  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  const TensorSpec& at(std::string_view name) const;  // by name (a map); throws std::out_of_range naming it
  std::size_t total() const { return total_; }          // floats, padding included
  std::size_t decayed_end() const { return decayed_end_; }  // [0, decayed_end) is weight-decayed
  std::size_t alignment() const { return alignment_; }
  std::int64_t parameter_count() const;  // real parameters, padding excluded

  static std::string layer_name(int layer, std::string_view suffix);  // "h3.mlp.fc.w"

  // The contiguous [offset, offset + count) ranges holding the tensors of blocks first..last
  // (inclusive): one for their matrices, one for their vectors (joined when they are all the
  // blocks: the final block's matrices end where block 0's vectors start), as blocks are stored in order.
  struct Range {
    std::size_t offset = 0, count = 0;
  };
  std::vector<Range> ranges_of_blocks(int first, int last) const;
  // The ranges of every tensor outside the transformer blocks (wte, wpe, lnf).
  std::vector<Range> ranges_outside_blocks() const;

  // A unit: what FSDP gathers, shards and reduce-scatters as one piece: one transformer block, or
  // everything outside the blocks (block -1: wte, wpe, lnf; used at both ends of the pass). Its
  // ranges are packed one after another, each starting on an alignment boundary, into `size`
  // floats, matrices first, so weight decay applies to the prefix [0, decayed) (aligned).
  // Blocks of one kind have the same size and internal offsets (a hybrid's attention and SSM blocks differ).
  struct Unit {
    int block = -1;
    std::vector<Range> ranges;               // in the flat layout
    std::vector<std::size_t> packed_offsets;  // where each range starts inside the unit
    std::size_t size = 0, decayed = 0;
  };
  Unit unit(int block) const;  // block in [-1, num_layers)
  int num_blocks() const { return num_blocks_; }
  // Where tensor `t` starts inside its unit (its unit is unit(block_of(t))).
  std::size_t packed_offset(const TensorSpec& t) const;
  static int block_of(const TensorSpec& t) { return t.block; }  // -1 outside the blocks

 private:
  std::vector<TensorSpec> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in tensors_
  std::size_t total_ = 0, decayed_end_ = 0, alignment_ = 1;
  int num_blocks_ = 0;
};

}  // namespace paxocl::models
