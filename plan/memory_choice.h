// The memory choice (plan.h): when a layout does not fit and CHECKPOINT_POLICY or NUM_SUB_BATCHES
// was not given (LayoutSpec::*_given), the plan chooses them: among the policies (if not given)
// and the sub-batch counts dividing a group's sequences (if not given; a pipeline keeps 1: its
// microbatches accumulate instead) that the job accepts (LayoutSpec::validate) and that fit, the
// least recompute FLOPs, then the fewest sub-batches. make_plan applies it to the layout asked
// for, smallest_fitting_layout (layout_search.h) to every candidate layout, require_fits names it.
#pragma once

#include <optional>

#include "plan/device_memory.h"
#include "plan/layout_spec.h"

namespace paxocl::plan {

// Rematerialization's recompute FLOPs per token of `spec` (models::recompute_flops_per_token).
double recompute_flops_per_token(const LayoutSpec& spec);

// `spec` with the chosen policy and sub-batch count; nullopt when none fits. Only the settings not
// given are varied (both given: `spec` itself if it fits).
std::optional<LayoutSpec> memory_choice(const LayoutSpec& spec, const MemoryLimits& limits);

}  // namespace paxocl::plan
