// StageSplit: what a pipeline stage (models/pipeline_schedule.h) holds of the model's parameters,
// and how its layout maps to the whole model's.
//
// A stage holds its blocks' tensors; the first stage also those the embedding reads (GPT: wte,
// wpe; LLaMA: embed), the last those the final norm and the head read (GPT: lnf and wte, the tied
// head; LLaMA: norm, lm_head). A stage's layout numbers its blocks from 0 (unit(b) is block
// first + b) but keeps the whole model's names ("h5.mlp.fc.w"), so every name maps one to one.
// GPT's wte is held by both ends: the first stage owns it (parameter images and checkpoints take it
// from there), and the step sums the two copies' gradients so that both apply the same update.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/parameter_layout.h"
#include "models/pipeline_schedule.h"
#include "models/tensor_def.h"
#include "models/tensor_split.h"

namespace paxocl::models {

// `defs` (a whole model's, in its order) cut to `stage`'s tensors, blocks renumbered from 0.
std::vector<TensorDef> stage_tensor_defs(const std::vector<TensorDef>& defs, const StageSpan& stage);

class StageSplit {
 public:
  // `whole`: the model's layout; `local`: the stage's (built from stage_tensor_defs).
  StageSplit(const ParameterLayout& whole, const ParameterLayout& local, const StageSpan& stage);

  std::vector<float> extract(std::span<const float> whole) const;          // whole image -> the stage's
  void place(std::span<const float> local, std::span<float> whole) const;  // the tensors it owns, back
  // Local ranges of tensors another stage owns (the last stage's wte): left out of the norm.
  const std::vector<ParameterLayout::Range>& replica_ranges() const { return replicas_; }
  // Local ranges of the tensors both ends hold (GPT's wte), in name order: the same list on the
  // first and the last stage, whose gradients the step sums.
  const std::vector<ParameterLayout::Range>& shared_ranges() const { return shared_; }

 private:
  struct Piece {
    std::size_t whole_offset, local_offset, count;
    bool owned;
  };
  std::vector<Piece> pieces_;
  std::size_t whole_total_, local_total_;
  std::vector<ParameterLayout::Range> replicas_, shared_;
};

// What one device's pipeline stage holds of the whole model, with or without a tensor axis: images
// go from the whole layout to the tensor rank's parts of every block (TensorSplit; the whole itself
// without a tensor axis) to the stage's tensors (StageSplit), as BlockModel builds its layout.
class StagePart {
 public:
  // `local`: the device's layout (stage_tensor_defs(local_tensor_defs(config, shard), stage)).
  StagePart(const ModelConfig& config, TensorShard shard, const StageSpan& stage, const ParameterLayout& whole,
            const ParameterLayout& local);
  std::vector<float> extract(std::span<const float> whole) const;
  // Adds the elements the device owns into `whole` (the others contribute zeros there): summed
  // over every device of the job, the whole image.
  void add_to(std::span<const float> local, std::span<float> whole) const;
  // Local ranges another device owns (a tied copy, tensor-parallel replicas), sorted and disjoint:
  // left out of the global norm.
  const std::vector<ParameterLayout::Range>& replica_ranges() const { return replicas_; }
  const std::vector<ParameterLayout::Range>& shared_ranges() const { return stage_->shared_ranges(); }

 private:
  std::size_t whole_total_;
  std::unique_ptr<ParameterLayout> tensor_layout_;  // with a tensor axis: the rank's parts of every block
  std::unique_ptr<TensorSplit> tensor_;
  std::unique_ptr<StageSplit> stage_;
  std::vector<ParameterLayout::Range> replicas_;
};

}  // namespace paxocl::models
