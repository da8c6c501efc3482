// TrainJob: the training job of one experiment, as Pax's train_and_evaluate.
//   job_log_dir/experiment.json      the resolved experiment (run it again with --fdl_config_file)
//   job_log_dir/train.log            everything logged
//   job_log_dir/summaries/{train,eval_train,eval_test}/events.out.tfevents.*   TensorBoard
// Per step: batch -> the step program (forward/backward, gradient collectives, clipping, Adam with
// the LR schedule), as the mesh asks (step_program.h). Around it: the report (training_report.h),
// evaluation (evaluation.h), checkpoints (checkpoint/: resume from the newest good one; save at
// step 0 if none, every CHECKPOINT_EVERY_N_STEPS and at the end), traces (trace_recorder.h) and
// preemption (preemption.h: finish the step, save, return kExitPreempted, 75).
#pragma once

#include <filesystem>
#include <string>

#include "collectives/process_world.h"
#include "config/job_config.h"

namespace paxocl::scheduler {

// A fresh directory name under ./runs: runs/<experiment>-<YYYYmmdd-HHMMSS>.
std::filesystem::path default_job_log_dir(const std::string& experiment);

// Trains; returns the process exit code. Throws ConfigError / DataError / DeviceError.
int run_training(const config::JobConfig& job, const collectives::ProcessWorld& world);
// Evaluates the newest checkpoint of job_log_dir (or the initialisation) on eval_train and eval_test.
int run_evaluation(const config::JobConfig& job, const collectives::ProcessWorld& world);

}  // namespace paxocl::scheduler
