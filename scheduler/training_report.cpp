#include "scheduler/training_report.h"

#include <unistd.h>

#include <iostream>

#include <fmt/format.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

#include "scheduler/evaluation.h"

namespace paxocl::scheduler {

namespace {

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

std::string hms(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60) : fmt::format("{}:{:02}", s / 60, s % 60);
}

TrainingReport::TrainingReport(const config::JobConfig& job, const collectives::ProcessWorld& world, StepProgram& program,
                               const std::filesystem::path& store_dir, long first_step)
    : job_(job), world_(world), program_(program), peaks_(program, job, world, store_dir) {
  const int replicas = job.mesh.replicas(world.size());
  // Each infeed host reads its own rows (processes along the tensor axis share theirs).
  tokens_per_step_ = static_cast<double>(job.input.batch_size) * job.model.max_seq_len() * job.input.num_infeed_hosts;
  flops_per_step_ = job.model.flops_per_token(job.model.max_seq_len()) * tokens_per_step_;
  const bool sequence_parallel = job.step.sequence_parallel && job.mesh.along(device::MeshAxis::kTensor) > 1;
  recompute_flops_per_step_ =
      models::recompute_flops_per_token(job.model, models::saved_sites(job.step.checkpoint_policy, sequence_parallel),
                                        job.model.max_seq_len(), job.step.pipeline.stages * job.step.pipeline.repeat) *
      tokens_per_step_;
  train_start_ = interval_start_ = Clock::now();
  if (world.rank() != 0) return;
  // A live line only on a real terminal of a single process (launchers forward output through a pty).
  live_ = world.size() == 1 && ::isatty(STDOUT_FILENO) != 0;
  out_ = std::make_unique<SummaryWriter>(job.flags.job_log_dir / "summaries" / "train");
  if (first_step > 0) {
    out_->session_start(first_step + 1);
  } else {
    out_->scalar("num_params", static_cast<double>(program.layout().parameter_count()), 0);
    out_->scalar("global_batch_size", static_cast<double>(job.input.batch_size) * job.input.num_infeed_hosts, 0);
    out_->scalar("mfu_peak_gflops_measured", peaks_.measured(), 0);
    if (peaks_.theoretical() > 0) out_->scalar("mfu_peak_gflops_theoretical", peaks_.theoretical(), 0);
  }
  const int fsdp = job.mesh.along(device::MeshAxis::kFsdp), tensor = job.mesh.along(device::MeshAxis::kTensor),
            data = job.mesh.along(device::MeshAxis::kData);
  const config::PipelineConfig& pipeline = job.step.pipeline;
  std::string layout = "data parallel";
  // What one device holds activations for: one sub-batch of the replica's batch, or the microbatches
  // in flight on the pipeline device whose bytes are reported (plan's "at most N in flight").
  std::string held = fmt::format("{} x {} tokens{}", job.step.replica_batch / job.step.sub_batches, job.model.max_seq_len(),
                                 job.step.sub_batches > 1
                                     ? fmt::format(", one of NUM_SUB_BATCHES={} sub-batches", job.step.sub_batches)
                                     : std::string());
  if (pipeline.stages > 1) {
    layout = fmt::format("pipeline parallel (stage {} x data {}{}{}, {}{}, {} microbatches of {})", pipeline.stages, data,
                         fsdp > 1 ? fmt::format(" x fsdp {}", fsdp) : "",
                         tensor > 1 ? fmt::format(" x tensor {}", tensor) : "",
                         models::pipeline_schedule_name(pipeline.schedule),
                         pipeline.repeat > 1 ? fmt::format(" x {}", pipeline.repeat) : "", pipeline.microbatches,
                         pipeline.microbatch_size(job.step.replica_batch));
    const int in_flight = program.microbatches_held();
    held = fmt::format("at most {} microbatch{} of {} x {} tokens in flight{}, on the device holding the most", in_flight,
                       in_flight == 1 ? "" : "es", pipeline.microbatch_size(job.step.replica_batch),
                       job.model.max_seq_len(),
                       pipeline.repeat > 1 ? fmt::format(" per chunk, x {} chunks", pipeline.repeat) : std::string());
  } else if (tensor > 1 && fsdp > 1) {
    layout = fmt::format("FSDP and tensor parallel (fsdp {} x tensor {} x data {})", fsdp, tensor, data);
  } else if (tensor > 1) {
    layout = fmt::format("tensor parallel (tensor {} x data {})", tensor, data);
  } else if (fsdp > 1) {
    layout = fmt::format("FSDP (fsdp {} x data {})", fsdp, data);
  }
  const std::string dtype(device::dtype_name(job.step.fprop_dtype));
  std::cout << fmt::format(
                   "experiment {}: {:.2f}M parameters, {} x {} tokens per step, {} steps, {} over {} "
                   "device(s) ({} per process) on {}\n"
                   "model: {}\n"
                   "training state: {:.1f} MiB per device (parameters, gradients, Adam moments{})\n"
                   "activations: {:.1f} MiB per device ({}, {}, CHECKPOINT_POLICY={})\n"
                   "MFU is measured against the best GEMM peak measured on these devices: {:.1f} GFLOP/s in all (now: "
                   "{:.1f}), and against the theoretical peak: {}\n"
                   "job directory: {}\n",
                   job.experiment.name(), static_cast<double>(program.layout().parameter_count()) / 1e6,
                   job.input.batch_size * job.input.num_infeed_hosts, job.model.max_seq_len(), job.cadence.max_steps,
                   layout,
                   replicas, job.mesh.local_devices(), program.device().info().name, job.model.describe(),
                   mib(program.state_bytes_per_device()),
                   job.step.fprop_dtype == device::DType::kF32 ? "" : ", " + dtype + " weight copy",
                   mib(program.activation_bytes_per_device()), dtype, held,
                   models::checkpoint_policy_name(job.step.checkpoint_policy), peaks_.measured(),
                   peaks_.measured_now(),
                   peaks_.theoretical() > 0
                       ? fmt::format("{:.1f} GFLOP/s ({})", peaks_.theoretical(), peaks_.theoretical_basis())
                       : "unknown (" + peaks_.theoretical_basis() + ")",
                   job.flags.job_log_dir.string())
            << std::flush;
}

void TrainingReport::restart_interval() {
  interval_start_ = Clock::now();
  timed_steps_ = 0;
}

void TrainingReport::step_done(long step, const models::LossStats& stats, const models::OptimizerStepStats& opt, double lr) {
  interval_ += stats;
  grad_norm_sum_ += opt.grad_norm;
  clipped_norm_sum_ += opt.grad_norm * opt.grad_scale;
  ++interval_steps_;
  ++steps_done_;
  if (steps_done_ == 1) {  // the rate starts after the first step
    const Clock::time_point now = Clock::now();
    first_step_seconds_ = std::chrono::duration<double>(now - interval_start_).count();
    interval_start_ = now;
  } else {
    ++timed_steps_;
  }
  if (step % job_.cadence.summary_every == 0 || step == job_.cadence.max_steps) {
    write_summary(step, job_total(world_, interval_), lr);
    interval_ = {};
    grad_norm_sum_ = clipped_norm_sum_ = 0;
    interval_steps_ = timed_steps_ = 0;
    interval_start_ = Clock::now();
  } else if (live_) {
    std::cout << fmt::format("\r\033[Kstep {:>6}/{}  loss {:.4f}", step, job_.cadence.max_steps, stats.mean_loss())
              << std::flush;
  }
}

void TrainingReport::write_summary(long step, const models::LossStats& total, double lr) {
  if (!out_) return;
  const bool timed = timed_steps_ > 0;
  const double secs = timed ? std::chrono::duration<double>(Clock::now() - interval_start_).count() : first_step_seconds_;
  const double steps_per_sec = (timed ? timed_steps_ : 1) / secs, tokens_per_sec = steps_per_sec * tokens_per_step_;
  const double tflops = steps_per_sec * flops_per_step_ / 1e12;
  // Hardware FLOPs: the model's and the rematerialization's recompute (HFU; MFU counts the model's).
  const double hardware_tflops = steps_per_sec * (flops_per_step_ + recompute_flops_per_step_) / 1e12;
  peaks_.observe(hardware_tflops * 1e3);  // a peak below the achieved rate is raised: HFU <= 100%
  const double mfu = peaks_.mfu(tflops * 1e3), mfu_theoretical = peaks_.mfu_theoretical(tflops * 1e3);
  const double hfu = peaks_.mfu(hardware_tflops * 1e3);
  const double elapsed = std::chrono::duration<double>(Clock::now() - train_start_).count();
  const double eta = elapsed / static_cast<double>(steps_done_) * static_cast<double>(job_.cadence.max_steps - step);
  out_->scalar("loss", total.mean_loss(), step);
  out_->scalar("log_pplx", total.mean_loss(), step);
  out_->scalar("fraction_of_correct_next_step_preds", total.accuracy(), step);
  out_->scalar("learning_rate", lr, step);
  out_->scalar("grad_norm", grad_norm_sum_ / interval_steps_, step);
  out_->scalar("grad_norm_clipped", clipped_norm_sum_ / interval_steps_, step);
  out_->scalar("steps_per_sec", steps_per_sec, step);
  out_->scalar("tokens_per_sec", tokens_per_sec, step);
  out_->scalar("tflops_per_sec", tflops, step);
  out_->scalar("mfu", mfu, step);
  out_->scalar("hfu", hfu, step);
  if (peaks_.theoretical() > 0) out_->scalar("mfu_theoretical", mfu_theoretical, step);
  const models::DynamicLossScaler& scaler = program_.loss_scaler();
  if (scaler.enabled()) {
    out_->scalar("loss_scale", scaler.scale(), step);
    out_->scalar("loss_scale_overflows", static_cast<double>(scaler.overflows()), step);
  }
  out_->scalar("steps_skipped", static_cast<double>(program_.steps_skipped()), step);
  const std::string line =
      fmt::format("step {:>6}/{}  loss {:.4f}  log_pplx {:.4f}  lr {:.2e}  {:.0f} tok/s  MFU {:.1f}%{}{}  elapsed {}  ETA {}",
                  step, job_.cadence.max_steps, total.mean_loss(), total.mean_loss(), lr, tokens_per_sec, 100 * mfu,
                  peaks_.theoretical() > 0 ? fmt::format(" ({:.1f}% of theoretical)", 100 * mfu_theoretical) : "",
                  models::rematerializes(job_.step.checkpoint_policy) ? fmt::format("  HFU {:.1f}%", 100 * hfu) : "",
                  hms(elapsed), hms(eta));
  std::cout << (live_ ? "\r\033[K" : "") << line << "\n" << std::flush;
  spdlog::default_logger()->sinks().back()->log(
      spdlog::details::log_msg(spdlog::source_loc{}, "pax-ocl", spdlog::level::info, line));
}

void TrainingReport::finish(Clock::time_point job_started) const {
  if (!out_) return;
  const std::filesystem::path summaries = job_.flags.job_log_dir / "summaries";
  std::cout << fmt::format("done in {}. Summaries: {}\nView them with: tensorboard --logdir {}\n",
                           hms(std::chrono::duration<double>(Clock::now() - job_started).count()), summaries.string(),
                           summaries.string());
}

}  // namespace paxocl::scheduler
