// Zero-shot evaluation (`pax-ocl eval --task=lambada|boolq --data=FILE`, Pax's lambada_eval and
// CustomMetricsLM's metrics) on a job's step program: the examples' scoring batches
// (inputs/zero_shot_scoring.h), as many rows as the model holds, dealt to the job's infeed hosts
// (batch i to host i mod hosts; the processes of a tensor group share a host's batches); each
// scored by the step program's forward (StepProgram::score); every candidate's score summed over
// the job, counted once per host (its first process), so every process computes the same metrics.
// Where evaluation is collective (FSDP or tensor parallelism over processes) every process runs as
// many batches as the busiest host, the extra ones weighted 0.
#pragma once

#include <vector>

#include "collectives/process_world.h"
#include "config/job_config.h"
#include "inputs/zero_shot_examples.h"
#include "inputs/zero_shot_scoring.h"
#include "scheduler/step_program.h"

namespace paxocl::scheduler {

struct ZeroShotResult {
  inputs::ZeroShotMetrics metrics;
  std::vector<std::vector<inputs::CandidateScore>> scores;  // per example, per candidate (the job's)
};

ZeroShotResult zero_shot_evaluation(const collectives::ProcessWorld& world, StepProgram& program,
                                    const config::JobConfig& job, inputs::ZeroShotTask task,
                                    const std::vector<inputs::ZeroShotExample>& examples);

}  // namespace paxocl::scheduler
