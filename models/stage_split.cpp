#include "models/stage_split.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "models/tensor_names.h"

namespace paxocl::models {

namespace {
namespace names = tensor_names;

// Read by the embedding (the first stage): every family's token table, GPT's position table.
bool read_by_embedding(const std::string& name) {
  return name == names::kTokenEmbedding || name == names::kPositionEmbedding || name == names::llama::kTokenEmbedding;
}
// Read by the final norm or the head (the last stage): the rest, and GPT's token table (tied head).
bool read_by_head(const std::string& name) { return !read_by_embedding(name) || name == names::kTokenEmbedding; }

bool held(const TensorDef& d, const StageSpan& stage) {
  if (d.block >= 0) return d.block >= stage.first && d.block < stage.end;
  return (stage.first_stage() && read_by_embedding(d.name)) || (stage.last_stage() && read_by_head(d.name));
}
}  // namespace

std::vector<TensorDef> stage_tensor_defs(const std::vector<TensorDef>& defs, const StageSpan& stage) {
  std::vector<TensorDef> out;
  for (const TensorDef& d : defs) {
    if (!held(d, stage)) continue;
    out.push_back(d);
    if (d.block >= 0) out.back().block = d.block - stage.first;
  }
  return out;
}

StageSplit::StageSplit(const ParameterLayout& whole, const ParameterLayout& local, const StageSpan& stage)
    : whole_total_(whole.total()), local_total_(local.total()) {
  for (const TensorSpec& t : local.tensors()) {
    const TensorSpec& w = whole.at(t.name);
    if (w.count != t.count) {
      throw std::logic_error(fmt::format("StageSplit: {} has {} floats in the stage, {} in the model", t.name, t.count, w.count));
    }
    // Outside the blocks, a tensor both ends hold belongs to the first stage.
    const bool both_ends = t.block < 0 && read_by_embedding(t.name) && read_by_head(t.name) && stage.stages > 1;
    const bool owned = !(both_ends && !stage.first_stage());
    pieces_.push_back({w.offset, t.offset, t.count, owned});
    if (!owned) replicas_.push_back({t.offset, t.count});
    if (both_ends) shared_.push_back({t.offset, t.count});
  }
}

std::vector<float> StageSplit::extract(std::span<const float> whole) const {
  if (whole.size() != whole_total_) {
    throw std::logic_error(fmt::format("StageSplit::extract: {} floats, the model's layout has {}", whole.size(), whole_total_));
  }
  std::vector<float> local(local_total_, 0.0f);
  for (const Piece& p : pieces_) {
    std::copy_n(whole.begin() + static_cast<std::ptrdiff_t>(p.whole_offset), p.count,
                local.begin() + static_cast<std::ptrdiff_t>(p.local_offset));
  }
  return local;
}

void StageSplit::place(std::span<const float> local, std::span<float> whole) const {
  if (local.size() != local_total_ || whole.size() != whole_total_) {
    throw std::logic_error("StageSplit::place: image sizes differ from the layouts'");
  }
  for (const Piece& p : pieces_) {
    if (!p.owned) continue;
    std::copy_n(local.begin() + static_cast<std::ptrdiff_t>(p.local_offset), p.count,
                whole.begin() + static_cast<std::ptrdiff_t>(p.whole_offset));
  }
}

StagePart::StagePart(const ModelConfig& config, TensorShard shard, const StageSpan& stage, const ParameterLayout& whole,
                     const ParameterLayout& local)
    : whole_total_(whole.total()) {
  if (shard.split()) {
    tensor_layout_ = std::make_unique<ParameterLayout>(local_tensor_defs(config, shard), config.num_blocks(), local.alignment());
    tensor_ = std::make_unique<TensorSplit>(config, shard, whole, *tensor_layout_);
  }
  const ParameterLayout& middle = tensor_layout_ ? *tensor_layout_ : whole;
  stage_ = std::make_unique<StageSplit>(middle, local, stage);
  replicas_ = stage_->replica_ranges();
  if (tensor_) {  // the tensor rank's replica ranges, where the stage holds them
    for (const ParameterLayout::Range& r : tensor_->replica_ranges()) {
      for (const TensorSpec& t : local.tensors()) {
        const TensorSpec& m = middle.at(t.name);
        const std::size_t begin = std::max(r.offset, m.offset), end = std::min(r.offset + r.count, m.offset + m.count);
        if (begin < end) replicas_.push_back({t.offset + (begin - m.offset), end - begin});
      }
    }
  }
  std::sort(replicas_.begin(), replicas_.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  std::vector<ParameterLayout::Range> merged;  // disjoint, for the norm's complement
  for (const ParameterLayout::Range& r : replicas_) {
    if (!merged.empty() && r.offset <= merged.back().offset + merged.back().count) {
      merged.back().count = std::max(merged.back().offset + merged.back().count, r.offset + r.count) - merged.back().offset;
    } else {
      merged.push_back(r);
    }
  }
  replicas_ = std::move(merged);
}

std::vector<float> StagePart::extract(std::span<const float> whole) const {
  if (!tensor_) return stage_->extract(whole);
  return stage_->extract(tensor_->extract(whole));
}

void StagePart::add_to(std::span<const float> local, std::span<float> whole) const {
  if (whole.size() != whole_total_) throw std::logic_error("StagePart::add_to: the whole image's size differs");
  std::vector<float> middle(tensor_layout_ ? tensor_layout_->total() : whole_total_, 0.0f);
  stage_->place(local, middle);
  std::vector<float> part;
  if (tensor_) {
    part.assign(whole_total_, 0.0f);
    tensor_->place(middle, part);
  }
  const std::vector<float>& owned = tensor_ ? part : middle;
  for (std::size_t i = 0; i < whole_total_; ++i) whole[i] += owned[i];
}

}  // namespace paxocl::models
