// TrainJob: the training job of one experiment, as Pax's train_and_evaluate.
//   job_log_dir/experiment.json      the resolved experiment (run it again with --fdl_config_file)
//   job_log_dir/train.log            everything logged
//   job_log_dir/summaries/{train,eval_train,eval_test}/events.out.tfevents.*   TensorBoard
// Per step: batch -> forward/backward -> global-norm clipping -> Adam update with the LR schedule.
// Every SUMMARY_INTERVAL_STEPS: summaries and a console line; every EVAL_INTERVAL_STEPS and at
// the end: evaluation on training data (eval_train) and on the validation split (eval_test).
// The step runs as the mesh asks (step_program.h): data parallelism and/or FSDP over ICI devices
// and DCN processes; the tensor axis must be 1.
// Checkpoints (checkpoint/): resumes from the newest good one in job_log_dir/checkpoints, saves at
// step 0 (if none), every CHECKPOINT_EVERY_N_STEPS, at the end; SIGTERM / SIGUSR1: finish the step,
// save, return kExitPreempted (75).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "collectives/process_world.h"
#include "models/experiment.h"
#include "models/weights_io.h"

namespace paxocl::scheduler {

struct JobOptions {
  std::filesystem::path job_log_dir;
  std::string devices_spec = "auto";
  std::string gemm_policy = "auto";
  std::shared_ptr<const models::HostWeights> init_weights;  // from --init_from (its architecture already applied)
  std::optional<std::filesystem::path> save_weights;  // written at the end of training
};

// A fresh directory name under ./runs: runs/<experiment>-<YYYYmmdd-HHMMSS>.
std::filesystem::path default_job_log_dir(const std::string& experiment);

// Trains; returns the process exit code. Throws ConfigError / DataError / DeviceError.
int run_training(const models::Experiment& experiment, const JobOptions& options, const collectives::ProcessWorld& world);
// Evaluates the experiment's initial model (checkpoints arrive later) on eval_train and eval_test.
int run_evaluation(const models::Experiment& experiment, const JobOptions& options,
                   const collectives::ProcessWorld& world);

}  // namespace paxocl::scheduler
