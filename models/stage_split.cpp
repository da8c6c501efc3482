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

}  // namespace paxocl::models
