// SequenceParallel: Megatron-LM's sequence parallelism (Korthikanti et al. 2022) on top of tensor
// parallelism (ModelOptions::sequence_parallel). The residual stream of a tensor group's
// N = B*T rows is split by rows: tensor rank r holds rows [r N/t, (r+1) N/t) of the (N, C)
// activations outside the column- and row-parallel layers: the blocks' inputs and outputs, the
// residual sums and the norms (their inputs, outputs, statistics and input gradients), which is
// the activation memory it saves (those buffers are t times smaller). Where tensor parallelism
// alone sums a partial (N, C) result over the group (after a row-parallel projection or the
// vocabulary-parallel embedding; the column-parallel projections' and the LM head's input
// gradients) it reduce-scatters it into the shard; a column-parallel layer's input, the LM head's
// input and the gradient arriving at a row-parallel layer are all-gathered from the shards: the
// same bytes per member as the all-reduce (itself a reduce-scatter and an all-gather).
//
// The layers see it through LayerContext::sequence. The gathered (N, C) buffers here are
// workspaces shared by every block (and the model's embedding and head): a block's backward
// gathers its norms' outputs again rather than keeping N rows of them per block (the paper's
// choice), overlapped with the backward before them. The norms' parameters stay replicated, but
// each member's gradient covers its rows only: sum_gradients adds them up over the group. A step
// may run several backward passes into the same gradients (sub-batches, pipeline microbatches), so
// only each pass's own contribution is summed: begin_gradients sets the earlier passes' (already
// summed) total aside and zeroes the gradients, sum_gradients sums what this pass added and adds
// the total back. Summing the accumulated gradients instead would count every earlier pass again
// once per member.
#pragma once

#include <vector>

#include "models/layers/layer_context.h"

namespace paxocl::models {

class SequenceParallel {
 public:
  // Buffers for up to max_rows rows of width `dims` (the shards: max_rows / size, rounded up),
  // and room for four (dims) parameter gradients in one sum (a block's two LayerNorms).
  SequenceParallel(const device::Device& device, device::DType act, std::size_t max_rows, std::size_t dims, int size);

  static std::size_t shard_rows(std::size_t rows, int size) {
    return (rows + static_cast<std::size_t>(size) - 1) / static_cast<std::size_t>(size);
  }

  ActBuffer gathered_input;     // (N, C): a column-parallel layer's (or the LM head's) input, all-gathered
  ActBuffer gathered_gradient;  // (N, C): the gradient at a row-parallel layer's (or embedding's) output, gathered
  ActBuffer stream_input;       // (N/t, C): the first block's input, the embedding's sum reduce-scattered
  ActBuffer delta;              // (N/t, C): a reduce-scattered partial sum, consumed at once

  // Around one pass's backward through layers with replicated parameters (float32 gradient views,
  // at most 4 C floats in all), called in pairs with the same views and nothing in between that
  // touches other replicated gradients: begin_gradients keeps their current values (the earlier
  // passes' sums) and zeroes them; sum_gradients then sums this pass's gradients over the tensor
  // group in one collective and adds the kept values back: g = earlier + sum over members.
  void begin_gradients(LayerContext& ctx, const std::vector<FloatBuffer>& gradients);
  void sum_gradients(LayerContext& ctx, const std::vector<FloatBuffer>& gradients);
  // shard[0, n) <- full[rank n, (rank + 1) n): this member's rows of a whole (not partial) result
  // every member computed alike (a replicated layer's output, e.g. the SSM's).
  static void take_own_rows(LayerContext& ctx, const ActBuffer& full, ActBuffer& shard, std::size_t n);

 private:
  FloatBuffer packed_gradients_;  // (4 C): this pass's gradients, summed in place
  FloatBuffer earlier_gradients_;  // (4 C): begin_gradients' kept values, in the same packing
};

}  // namespace paxocl::models
