// Plan: memory, FLOPs, communication and step time of a layout, before any device work
// (`pax-ocl plan`, app/plan_command.cpp), and the check training runs before it allocates.
//   memory per device   device_memory.h: parameters, gradients, Adam moments (float32; shards
//                       under FSDP, only Adam's inside pipeline stages), FSDP's resident units,
//                       the 16-bit weight copy, activations
//                       (activation_memory.h) with and without sequence parallelism;
//   FLOPs per device    ModelConfig::flops_per_token(T) x the global batch's tokens / devices
//                       (every axis: stage x data x fsdp x tensor; model FLOPs: 6 x matmul
//                       parameters + 12 L T x attention width per token), and the
//                       rematerialization's recompute (models::recompute_flops_per_token);
//   communication       communication.h: bytes per device per step of each collective, ICI and DCN;
//   step time           compute = (model + recompute FLOPs) per device / (peak x MFU), the peak for
//                       FPROP_DTYPE (bfloat16 / float16: its BF16 figure) and MFU assumed (default
//                       the accelerator's: 0.5 for a GPU); each collective operation takes
//                       ICI bytes / ICI bandwidth + DCN bytes / DCN bandwidth; the operations that
//                       overlap compute (communication.h: data-parallel block gradients, FSDP's
//                       prefetched gathers and its reduce-scatters but the first / last) are hidden
//                       while they take less than the compute:
//                         step = max(compute + bubble, hidden communication) + exposed communication;
//                       a pipeline (p stages, m microbatches, r = CIRCULAR_REPEAT chunks per
//                       stage under the circular schedule, else 1) stretches its compute by
//                       (r m + p - 1) / (r m): bubble = compute x (p - 1) / (r m), the idle
//                       fraction of the step (p - 1) / (r m + p - 1) (models::bubble_fraction; 0
//                       without stages).
//                       The optimizer update, kernel launches and input are not counted.
//   memory choice       when the layout does not fit and CHECKPOINT_POLICY or NUM_SUB_BATCHES was
//                       not given (LayoutSpec), the plan chooses them: among the policies (if not
//                       given) and the sub-batch counts dividing a group's sequences (if not given;
//                       a pipeline keeps 1: its microbatches accumulate instead)
//                       that fit, the least recompute FLOPs, then the fewest sub-batches; it plans
//                       that choice and says so (Plan::choice; memory_choice.h, which the layout
//                       search applies to each candidate too);
//   verdict             fits when memory.total() <= the device's memory and the largest buffer
//                       <= its largest allocation; otherwise the smallest layout that fits
//                       (layout_search.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/accelerator.h"
#include "plan/communication.h"
#include "plan/device_memory.h"
#include "plan/layout_spec.h"

namespace paxocl::plan {

struct PlanOptions {
  std::optional<double> mfu;       // default: the accelerator's
  std::optional<double> ici_gbps;  // override the accelerator's link figures (GB/s each way)
  std::optional<double> dcn_gbps;
};

struct StepTime {
  double peak_gflops = 0, mfu = 0;
  double ici_gbps = 0, dcn_gbps = 0;
  double compute_s = 0;
  double bubble_s = 0;   // a pipeline's idle time: compute_s x (p - 1) / (r m)
  double hidden_s = 0;   // communication that overlaps compute
  double exposed_s = 0;  // communication on the critical path
  double step_s = 0;
  std::vector<std::string> unknown;  // "ICI", "DCN" (bytes but no bandwidth), "peak FLOP rate": left out of step_s
};

struct Plan {
  LayoutSpec spec;
  Accelerator accelerator;
  DeviceMemory memory;
  double flops_per_token = 0, tokens_per_step = 0, flops_per_device = 0;
  double recompute_flops_per_device = 0;  // rematerialization: hardware FLOPs beside the model's
  std::optional<std::string> choice;      // the memory choice made, one line
  std::vector<Collective> collectives;
  double bubble_fraction = 0;  // a pipeline's idle fraction of the step, (p - 1) / (r m + p - 1)
  StepTime time;
  bool fits = false;
  std::string verdict;                  // one line: "fits: ..." / "does not fit: ..."
  std::optional<LayoutSpec> smallest;   // when it does not fit: the fewest devices that fit
  std::optional<DeviceMemory> smallest_memory;
};

Plan make_plan(const LayoutSpec& spec, const Accelerator& accelerator, const PlanOptions& options = {});

// Training's guard (scheduler/train_job.cpp), before any buffer exists: ConfigError in one line
// naming what the layout needs, what `device_name` has, the checkpoint policy and sub-batches that
// would fit this layout (the memory choice) and the smallest layout that fits.
void require_fits(const LayoutSpec& spec, const MemoryLimits& limits, const std::string& device_name);

}  // namespace paxocl::plan
