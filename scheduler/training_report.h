// TrainingReport: what a training job tells its user.
//   At start-up (banner): the model, the tokens per step, the mesh, the training state's and the
//   activations' memory per device (with CHECKPOINT_POLICY), and what MFU is measured against (mfu_peaks.h: the best GEMM
//   peak measured on these devices, and the theoretical peak).
//   Every SUMMARY_INTERVAL_STEPS and at the end: TensorBoard scalars (summaries/train: loss,
//   log_pplx, accuracy, learning rate, gradient norms, throughput, MFU, HFU, skipped steps, the
//   float16 loss scale) and the console line (step, loss, lr, tokens/s, MFU, HFU when a checkpoint
//   policy recomputes, elapsed, ETA); on a terminal
//   of a single process a live line every step.
// Rank 0 writes; step_done() is collective at summary steps (the loss totals are all-reduced).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "collectives/process_world.h"
#include "config/job_config.h"
#include "scheduler/mfu_peaks.h"
#include "scheduler/step_program.h"
#include "scheduler/summary_writer.h"

namespace paxocl::scheduler {

class TrainingReport {
 public:
  using Clock = std::chrono::steady_clock;
  // Measures the GEMM peak (every process) and, on rank 0, writes the start-up summaries and banner.
  // The measured peak is stored beside the program cache in `store_dir` (empty: not stored).
  // `first_step`: the step the job starts from (a resumed job's restored step). A resumed job marks
  // its restart (SummaryWriter::session_start at first_step + 1) and does not write the step-0
  // scalars (num_params, global_batch_size, mfu_peak_*) again: the start at step 0 wrote them.
  TrainingReport(const config::JobConfig& job, const collectives::ProcessWorld& world, StepProgram& program,
                 const std::filesystem::path& store_dir, long first_step);

  void step_done(long step, const models::LossStats& stats, const models::OptimizerStepStats& opt, double lr);
  void restart_interval();  // time from now on counts (evaluation is not training throughput)
  // "done in 1:23. Summaries: ..." (rank 0).
  void finish(Clock::time_point job_started) const;

 private:
  void write_summary(long step, const models::LossStats& total, double lr);

  const config::JobConfig& job_;
  const collectives::ProcessWorld& world_;
  StepProgram& program_;
  std::unique_ptr<SummaryWriter> out_;  // rank 0 only
  bool live_ = false;                   // a live line on a terminal
  MfuPeaks peaks_;
  double tokens_per_step_ = 0, flops_per_step_ = 0;
  double recompute_flops_per_step_ = 0;  // rematerialization (models::recompute_flops_per_token)
  Clock::time_point train_start_, interval_start_;
  long steps_done_ = 0;  // in this run (the ETA's rate)
  models::LossStats interval_;
  double grad_norm_sum_ = 0, clipped_norm_sum_ = 0;
  long interval_steps_ = 0;
  // Throughput counts the steps timed since interval_start_: not the run's first step, which also
  // times the GEMM candidates and builds programs (start-up, not throughput: a 30-step run on an
  // H200 read 57K tok/s for 107K). A summary at the first step reports that step's own time.
  long timed_steps_ = 0;
  double first_step_seconds_ = 0;
};

// "1:05" or "1:02:03".
std::string hms(double seconds);

}  // namespace paxocl::scheduler
