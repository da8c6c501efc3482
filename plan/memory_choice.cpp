#include "plan/memory_choice.h"

#include <string>
#include <vector>

#include "common/errors.h"
#include "models/checkpoint_policy.h"

namespace paxocl::plan {

double recompute_flops_per_token(const LayoutSpec& spec) {
  const bool sp = spec.sequence_parallel && spec.along(device::MeshAxis::kTensor) > 1;
  return models::recompute_flops_per_token(spec.model, models::saved_sites(spec.checkpoint_policy, sp),
                                           spec.model.max_seq_len(), spec.stages() * spec.repeat);
}

std::optional<LayoutSpec> memory_choice(const LayoutSpec& spec, const MemoryLimits& limits) {
  std::vector<models::CheckpointPolicy> policies = {spec.checkpoint_policy};
  if (!spec.checkpoint_policy_given) {
    policies.clear();
    for (const std::string& name : models::checkpoint_policy_names()) {
      policies.push_back(models::checkpoint_policy_from_name(name));
    }
  }
  std::vector<int> counts = {spec.sub_batches};
  if (!spec.sub_batches_given && spec.stages() == 1) {  // a pipeline refuses sub-batches
    counts.clear();
    for (long k = 1; k <= spec.group_sequences(); ++k) {
      if (spec.group_sequences() % k == 0) counts.push_back(static_cast<int>(k));
    }
  }
  std::optional<LayoutSpec> best;
  double best_flops = 0;
  for (const models::CheckpointPolicy policy : policies) {
    for (const int k : counts) {
      LayoutSpec c = spec;
      c.checkpoint_policy = policy;
      c.sub_batches = k;
      try {
        c.validate();  // sub-batches the job refuses (SEQUENCE_PARALLEL's rows per pass)
      } catch (const ConfigError&) {
        continue;
      }
      if (misfit(device_memory(c), limits)) continue;
      const double flops = recompute_flops_per_token(c);
      if (!best || flops < best_flops || (flops == best_flops && k < best->sub_batches)) {
        best = c;
        best_flops = flops;
      }
      break;  // more sub-batches of this policy only add passes
    }
  }
  return best;
}

}  // namespace paxocl::plan
