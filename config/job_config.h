// JobConfig: everything a training or evaluation job needs to know, resolved and validated once
// from the experiment (config/experiment.h), its --fdl overrides and the command line, before any
// device is opened. Every part of the job reads fields from it; no hyper-parameter is looked up
// by name after resolve_job(). Each field names the hyper-parameter it comes from, so
// `grep -rn max_to_keep` finds every consumer of CHECKPOINT_MAX_TO_KEEP.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpointer.h"
#include "config/experiment.h"
#include "device/dtype.h"
#include "device/mesh.h"
#include "inputs/input_params.h"
#include "kernels_cl/gemm.h"
#include "models/adam_optimizer.h"
#include "models/checkpoint_policy.h"
#include "models/loss_scaler.h"
#include "models/pipeline_schedule.h"
#include "models/lr_schedule.h"
#include "models/weights_io.h"

namespace paxocl::config {

// What the command line adds to the experiment (app/train_command.cpp).
struct JobFlags {
  std::filesystem::path job_log_dir;
  std::string devices_spec = "auto";  // --devices / PAX_OCL_DEVICES
  std::string gemm_policy = "auto";   // --gemm / PAX_OCL_GEMM
  std::optional<std::filesystem::path> init_from;     // weights whose architecture replaces the experiment's
  std::optional<std::filesystem::path> save_weights;  // train: the final weights
  // eval: a zero-shot task (lambada | boolq) on a JSON Lines file (scheduler/zero_shot_eval.h), and
  // where its metrics go as JSON.
  std::string zero_shot_task;
  std::filesystem::path zero_shot_data;
  std::optional<std::filesystem::path> output_json;
};

// The mesh: ICI_MESH_SHAPE (devices of a process) x DCN_MESH_SHAPE (processes), [stage, data, fsdp, tensor].
struct MeshConfig {
  device::MeshShape ici{1, 1, 1}, dcn{1, 1, 1};
  int local_devices() const { return device::product(ici); }  // devices this process opens
  int replicas(int processes) const { return local_devices() * processes; }  // devices in the job
  int along(device::MeshAxis axis) const {                    // the global mesh's size along `axis`
    const auto a = static_cast<std::size_t>(axis);
    return ici[a] * dcn[a];
  }
};

// Pipeline parallelism (a stage axis > 1; models/pipeline_schedule.h): each model replica's batch
// runs as `microbatches` microbatches through the stages in `schedule`'s order.
struct PipelineConfig {
  int stages = 1;        // the mesh's stage axis
  int microbatches = 1;  // NUM_MICROBATCHES, or replica_batch / MICROBATCH_SIZE
  models::PipelineSchedule schedule = models::PipelineSchedule::kOneForwardOneBackward;  // PIPELINE_SCHEDULE
  int repeat = 1;  // CIRCULAR_REPEAT: chunks of blocks per stage (circular schedule)
  int microbatch_size(int replica_batch) const { return replica_batch / microbatches; }
};

// How one training step runs on the devices (scheduler/step_program.h).
struct StepConfig {
  // sequences per model replica: a device, or a tensor group or pipeline (its devices share them)
  int replica_batch = 1;
  int sub_batches = 1;    // NUM_SUB_BATCHES: replica_batch runs as this many sub-batches, gradients accumulated
  std::string gemm_policy = "auto";                  // --gemm
  bool overlap = true;                               // OVERLAP_COMMUNICATION
  std::size_t bucket_bytes = 0;                      // GRADIENT_BUCKET_BYTES
  int fsdp_prefetch_depth = 1;                       // FSDP_PREFETCH_DEPTH
  bool ici_ring = true;                              // ICI_ALGORITHM == ring
  bool sequence_parallel = false;                    // SEQUENCE_PARALLEL (tensor axis > 1)
  models::CheckpointPolicy checkpoint_policy = models::CheckpointPolicy::kSaveEverything;  // CHECKPOINT_POLICY
  device::DType fprop_dtype = device::DType::kF32;   // FPROP_DTYPE
  kernels::MatmulPrecision matmul_precision = kernels::MatmulPrecision::kFloat32;  // MATMUL_PRECISION
  models::DynamicLossScaler::Config loss_scale;      // LOSS_SCALE_*; enabled for float16
  PipelineConfig pipeline;                           // the stage axis, NUM_MICROBATCHES, PIPELINE_SCHEDULE
};

// When things happen during training.
struct Cadence {
  long max_steps = 0;              // MAX_STEPS
  long summary_every = 1;          // SUMMARY_INTERVAL_STEPS
  long eval_every = 0;             // EVAL_INTERVAL_STEPS (0: only at the end)
  std::vector<long> trace_steps;   // TRACE_STEPS (1-based steps)
  unsigned preemption_grace_seconds = 60;  // PREEMPTION_GRACE_SECONDS
};

struct JobConfig {
  Experiment experiment{};                 // as resolved (written to experiment.json and checkpoints)
  JobFlags flags{};
  models::ModelConfig model{};             // NUM_LAYERS .. VOCAB_SIZE, INIT_STD (or --init_from's)
  std::shared_ptr<const models::HostWeights> init_weights{};  // --init_from, read once
  models::AdamConfig optimizer{};          // ADAM_*, WEIGHT_DECAY, CLIP_GRADIENT_NORM_TO_VALUE
  models::LrSchedule schedule{};           // LEARNING_RATE, LR_COS_*
  std::string data{};                      // DATA
  inputs::InputParams input{};             // this process's training input (its devices' rows)
  long eval_batches = 0;                 // EVAL_LOOP_NUM_BATCHES
  std::uint64_t seed = 0;                // SEED
  checkpoint::CheckpointPolicy checkpoint{};  // CHECKPOINT_*, ENABLE_CHECKPOINT_SAVING, ASYNC_CHECKPOINTING
  MeshConfig mesh{};
  StepConfig step{};
  Cadence cadence{};
  int processes = 1;                     // the job's processes (DCN)

  // FPROP_DTYPE=auto's start-up line, what it chose and why (empty when the experiment named a
  // dtype); the train and eval commands set it, the job prints it once its configuration is checked.
  std::string fprop_dtype_choice;
  // "data 2 x fsdp 1 (ICI [2,1,1] x DCN [1,1,1])": the layout, for logs and checkpoints.
  std::string sharding() const;
};

// The job `experiment` describes for a world of `processes` processes, this one `rank`; reads
// --init_from's weights when given. Throws ConfigError (one line, naming the field) for anything
// inconsistent: the mesh against the processes, batches that do not divide, a schedule out of order.
// FPROP_DTYPE must be a dtype by then: `auto` is resolved against the devices first (the train and
// eval commands, app/train_command.cpp).
JobConfig resolve_job(Experiment experiment, JobFlags flags, int processes, int rank);

}  // namespace paxocl::config
