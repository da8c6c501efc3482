#include "plan/layout_search.h"

#include <numeric>
#include <tuple>
#include <vector>

#include "common/errors.h"
#include "models/shard_plan.h"
#include "plan/memory_choice.h"
#include "plan/tensor_parallel.h"

namespace paxocl::plan {

using device::MeshAxis;

namespace {
// Beyond any machine anyone plans for; keeps device counts (fsdp x tensor) far inside int.
constexpr long kMostDevices = 1L << 24;
}  // namespace

void assign_mesh(LayoutSpec& spec, int fsdp, int tensor, int devices_per_process) {
  const int tensor_ici = std::gcd(tensor, devices_per_process);
  const int fsdp_ici = std::gcd(fsdp, devices_per_process / tensor_ici);
  spec.ici = {1, fsdp_ici, tensor_ici};
  spec.dcn = {1, fsdp / fsdp_ici, tensor / tensor_ici};
}

void assign_stage_mesh(LayoutSpec& spec, int stages, int devices_per_process, int fsdp) {
  const int fsdp_ici = std::gcd(fsdp, devices_per_process);
  const int stage_ici = std::gcd(stages, devices_per_process / fsdp_ici);
  spec.ici = {stage_ici, 1, fsdp_ici, 1};
  spec.dcn = {stages / stage_ici, 1, fsdp / fsdp_ici, 1};
}

namespace {

// Whether every device of a pipeline with an fsdp axis gets a non-empty optimizer shard of each of
// its chunks (the job refuses a stage whose parameters do not split: scheduler/pipeline_step.cpp).
// The last device of the axis (DCN part, then ICI part) holds the smallest.
bool stage_shards_split(const LayoutSpec& spec) {
  const int dcn = spec.dcn_along(MeshAxis::kFsdp), ici = spec.ici_along(MeshAxis::kFsdp);
  if (dcn * ici == 1) return true;
  for (int v = 0; v < spec.virtual_stages(); ++v) {
    const models::ParameterLayout layout = stage_layout(spec, v);
    if (models::ShardPlan::buffer_shard(layout.total(), layout.alignment(), dcn, ici, dcn - 1, ici - 1).size() == 0) {
      return false;
    }
  }
  return true;
}

// `c` as it would run within the limits: itself when CHECKPOINT_POLICY and NUM_SUB_BATCHES were
// both given, else with the memory choice (memory_choice.h) made for its own sequences per device,
// as make_plan makes it for the layout asked for; nullopt when it does not fit or the job refuses
// it (validate(): e.g. SEQUENCE_PARALLEL's rows per pass). `layout`: c's device layout, if known.
std::optional<LayoutSpec> settle(const LayoutSpec& c, const MemoryLimits& limits,
                                 const models::ParameterLayout* layout = nullptr) {
  if (!c.checkpoint_policy_given || !c.sub_batches_given) return memory_choice(c, limits);
  try {
    c.validate();
  } catch (const ConfigError&) {
    return std::nullopt;
  }
  const DeviceMemory memory = layout != nullptr ? device_memory(c, *layout) : device_memory(c);
  if (misfit(memory, limits)) return std::nullopt;
  return c;
}

}  // namespace

std::optional<LayoutSpec> smallest_fitting_layout(const LayoutSpec& spec, const MemoryLimits& limits) {
  const int per_process = device::product(spec.ici);
  std::vector<int> fsdp_sizes;  // divisors of the global batch (whole sequences per tensor group), ascending
  std::vector<long> large;
  for (long f = 1; f * f <= spec.global_batch; ++f) {
    if (spec.global_batch % f != 0) continue;
    fsdp_sizes.push_back(static_cast<int>(f));
    if (f * f != spec.global_batch) large.push_back(spec.global_batch / f);
  }
  for (auto it = large.rbegin(); it != large.rend(); ++it) {
    if (*it > kMostDevices) break;
    fsdp_sizes.push_back(static_cast<int>(*it));
  }
  const int heads = spec.model.visit([](const auto& c) { return c.num_heads; });

  std::optional<LayoutSpec> best;
  auto better = [&](const LayoutSpec& c) {
    if (!best) return true;
    const auto key = [](const LayoutSpec& s) {
      return std::make_tuple(s.devices(), s.stages() > 1, s.stages(), s.sequence_parallel, s.along(MeshAxis::kTensor));
    };
    return key(c) < key(*best);
  };
  for (const int t : tensor_sizes(spec.model, heads)) {
    std::vector<int> sizes;  // fsdp sizes that keep fsdp x tensor within kMostDevices
    for (const int f : fsdp_sizes) {
      if (static_cast<long>(f) * t <= kMostDevices) sizes.push_back(f);
    }
    if (sizes.empty()) break;
    LayoutSpec shape = spec;
    assign_mesh(shape, 1, t, per_process);
    const models::ParameterLayout layout = device_layout(shape);  // the same for every fsdp size
    std::vector<bool> modes = {spec.sequence_parallel};
    if (!spec.sequence_parallel && t > 1) modes.push_back(true);
    for (const bool sp : modes) {
      // With the spec's policy and sub-batches where given; those left open are chosen anew for
      // the candidate (a pipelined spec's 1 sub-batch is no choice: its stages refuse others).
      auto candidate = [&](int f) {
        LayoutSpec c = spec;
        c.sequence_parallel = sp;
        if (!c.sub_batches_given) c.sub_batches = 1;
        assign_mesh(c, f, t, per_process);
        return settle(c, limits, &layout);
      };
      auto fits = [&](int f) { return candidate(f).has_value(); };
      int found = 0;
      if (fits(1)) {
        found = 1;
      } else if (sizes.size() > 1 && fits(sizes.back())) {
        std::size_t lo = 1, hi = sizes.size() - 1;  // sizes[hi] fits; find the first that does
        while (lo < hi) {
          const std::size_t mid = (lo + hi) / 2;
          if (fits(sizes[mid])) {
            hi = mid;
          } else {
            lo = mid + 1;
          }
        }
        found = sizes[hi];
      }
      if (found > 0 && better(*candidate(found))) best = candidate(found);
    }
  }
  const int blocks = spec.model.num_blocks();
  // Under the circular schedule each stage holds CIRCULAR_REPEAT chunks of whole blocks.
  for (int p = 2; p * spec.repeat <= blocks && !(spec.sub_batches > 1 && spec.sub_batches_given); ++p) {
    if (best && p > best->devices()) break;  // more devices than a fit already found
    if (blocks % (p * spec.repeat) != 0) continue;
    // The smallest fsdp axis inside the stages that fits, tried in order: the job's rules refuse
    // some (microbatches that do not divide a pipeline's sequences), so no bisection.
    for (const int f : fsdp_sizes) {
      const long devices = static_cast<long>(p) * f;
      if (devices > kMostDevices || (best && devices > best->devices())) break;
      LayoutSpec c = spec;
      c.sequence_parallel = false;
      c.sub_batches = 1;
      assign_stage_mesh(c, p, per_process, f);
      try {
        c.validate();  // the microbatch settings against this pipeline's batch (circular: m a multiple of p)
      } catch (const ConfigError&) {
        continue;
      }
      if (!stage_shards_split(c)) break;  // a larger f splits no better
      const std::optional<LayoutSpec> fitted = settle(c, limits);  // an open policy chosen for the stage
      if (!fitted) continue;
      if (better(*fitted)) best = fitted;
      break;  // a larger f only adds devices
    }
  }
  return best;
}

}  // namespace paxocl::plan
