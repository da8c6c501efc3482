// Evaluation as Pax's eval programs: a pass over the training data (eval_train) and over the
// validation split (eval_test), EVAL_LOOP_NUM_BATCHES batches each (-1: one epoch), on one device
// per process; the loss sums are totalled over the job, and rank 0 writes the summaries.
#pragma once

#include <memory>

#include "collectives/process_world.h"
#include "config/job_config.h"
#include "inputs/dataset.h"
#include "scheduler/step_program.h"
#include "scheduler/summary_writer.h"

namespace paxocl::scheduler {

struct EvalInputs {
  std::unique_ptr<inputs::BaseInput> train, test;  // test: null when the data has no validation split
};
EvalInputs make_eval_inputs(const config::JobConfig& job);

// A process's loss statistics summed over the job (collective).
models::LossStats job_total(const collectives::ProcessWorld& world, models::LossStats local);

// One pass of `input` (collective when the program's forward is: FSDP over processes, where every
// process runs as many batches as the one with the most, padding with zero-weight batches).
// Writes loss, log_pplx and accuracy to `out` when given, and logs a line named `name`.
models::LossStats evaluate(const collectives::ProcessWorld& world, StepProgram& program, inputs::BaseInput& input,
                           SummaryWriter* out, long step, const char* name);

}  // namespace paxocl::scheduler
