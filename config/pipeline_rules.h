// Pipeline parallelism's rules over the hyper-parameters, one function for the job
// (config::resolve_job) and the planner (plan::LayoutSpec), so both refuse the same layouts in the
// same words and split a pipeline's batch into the same microbatches:
//   the stage axis p divides NUM_LAYERS (whole blocks per stage, models/pipeline_schedule.h), p x
//   CIRCULAR_REPEAT under the circular schedule (whole blocks per chunk), and CIRCULAR_REPEAT > 1
//   only under it;
//   NUM_SUB_BATCHES 1 (a pipeline accumulates its microbatches' gradients instead);
//   NUM_MICROBATCHES or MICROBATCH_SIZE, not both; the microbatch count m is NUM_MICROBATCHES,
//   else batch / MICROBATCH_SIZE, else batch (one sequence per microbatch), and divides the batch;
//   under the circular schedule m is a multiple of p (the ring stays full).
// Host only: the caller formats the mesh, so this needs no device library.
#pragma once

#include <string>

namespace paxocl::config {

struct PipelineRequest {
  int stages = 1;                 // the mesh's stage axis (ici x dcn)
  int blocks = 1;                 // the model's blocks (NUM_LAYERS)
  long batch = 1;                 // sequences each pipeline runs per step
  double percore_batch = 1;       // PERCORE_BATCH_SIZE, named in the message
  int sub_batches = 1;            // NUM_SUB_BATCHES
  long num_microbatches = 0;      // NUM_MICROBATCHES (0: not set)
  long microbatch_size = 0;       // MICROBATCH_SIZE (0: not set)
  bool circular = false;          // PIPELINE_SCHEDULE=circular
  int repeat = 1;                 // CIRCULAR_REPEAT
};

// The microbatches each pipeline's batch runs as (stages 1: 1, and nothing is checked: the
// microbatch settings have nothing to split). ConfigError, one line naming the numbers, for
// anything the rules above refuse.
int pipeline_microbatches(const PipelineRequest& request);

}  // namespace paxocl::config
