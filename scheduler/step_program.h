// StepProgram: how one training step runs on this process's devices and between the mesh's
// processes: the compute of every device, the collectives between them, and the optimizer
// update. TrainJob drives it; the programs are
//   DataParallelStep (data_parallel_step.h): a full replica per device, gradients all-reduced;
//   FsdpStep (fsdp_step.h): parameters, gradients and Adam state sharded along fsdp (ZeRO-3), with
//     a tensor axis too (each lane of one tensor index sharding its parts);
//   TensorParallelStep (tensor_parallel_step.h): every tensor split over the tensor axis, data
//     parallel along data;
//   PipelineStep (pipeline_step.h): the blocks split over the stage axis, microbatches pipelined
//     through the stages, data parallel along data.
// Every program gives the same losses for the same global batch, up to fp32 reduction order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/training_state.h"
#include "collectives/fsdp_communicator.h"
#include "collectives/process_world.h"
#include "config/job_config.h"
#include "device/program_cache.h"
#include "models/adam_optimizer.h"
#include "models/model.h"
#include "models/loss_scaler.h"
#include "scheduler/snapshot_staging.h"
#include "scheduler/step_trace.h"

namespace paxocl::scheduler {

struct StepOptions {
  models::ModelConfig model;
  models::AdamConfig adam;
  config::StepConfig step;     // batch per device, GEMM, overlap, buckets, prefetch, ICI ring, dtype, loss scale
  device::Mesh mesh;           // the job's: this process's devices and the processes
  static StepOptions of(const config::JobConfig& job, const device::Mesh& mesh);
};

class StepProgram {
 public:
  virtual ~StepProgram() = default;

  // Sets the parameters everywhere from a flat ParameterLayout image (layout().total() floats),
  // the same on every process; Adam's state starts at zero.
  virtual void load_parameters(std::span<const float> flat) = 0;

  // The training state for checkpoints, in flat-layout coordinates. state_slices(): the part this
  // process owns (each element owned by exactly one process of the job), copied to the host.
  // load_state(): the whole state (every process passes the same), re-sharded for this mesh.
  using StateSlice = checkpoint::StateSlice;
  struct OptimizerCounts {
    long applied = 0, skipped = 0;
  };
  virtual std::vector<StateSlice> state_slices() = 0;
  virtual OptimizerCounts optimizer_counts() const = 0;
  virtual void load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                          OptimizerCounts counts) = 0;
  // The full parameters as a flat image. Collective: every process calls it.
  virtual std::vector<float> parameters() = 0;
  // One step on this process's rows of the global batch (its model replicas x replica_batch rows), at
  // the loss scale of the scaler, which then learns whether the step overflowed.
  models::LossStats train_step(const inputs::Batch& batch, double lr, models::OptimizerStepStats& opt);
  models::DynamicLossScaler& loss_scaler() { return loss_scaler_; }
  // Forward only, on this process's first device. Collective when evaluation_is_collective().
  virtual models::LossStats evaluate(const inputs::Batch& batch) = 0;
  virtual bool evaluation_is_collective() const = 0;
  // evaluate(batch) (at most the model's max_batch() sequences), then what it said of each of the
  // batch's positions (models/model.h: whole rows under tensor parallelism). Collective as evaluate.
  const models::PositionScores& score(const inputs::Batch& batch) {
    evaluate(batch);
    return evaluation_model().position_scores();
  }
  virtual bool communicates() const = 0;
  virtual long steps_skipped() const = 0;
  // Device memory of the training state (parameters, gradients, Adam's two moments, and with
  // 16-bit FPROP_DTYPE the weights' 16-bit copy) on one device.
  virtual std::size_t state_bytes_per_device() const = 0;
  // Device memory of the activations on this process's device holding the most (a pipeline stage
  // keeps microbatches_held() model instances' worth; a tensor rank without GPT's position table
  // a zero row instead).
  virtual std::size_t activation_bytes_per_device() const;
  virtual int microbatches_held() const { return 1; }

  // Tracing of a step: on, run it, then collect its kernels and collectives on the host clock
  // (offsets: per device, host ns - device ns).
  virtual void set_tracing(bool on) = 0;
  virtual std::vector<TraceEvent> take_trace(const std::vector<std::int64_t>& offsets, long step) = 0;

  // The model whose LM head holds the last evaluation's per-position scores.
  virtual const models::Model& evaluation_model() const = 0;

  std::vector<device::Device*> devices() const;
  device::Device& device() const { return *locals_.front().device; }
  kernels::DeviceRuntime& runtime() const { return *locals_.front().runtime; }
  models::Model& model() const { return *locals_.front().model; }
  // The whole model's layout: parameter images and checkpoints (a tensor-parallel device's model
  // holds only its parts).
  virtual const models::ParameterLayout& layout() const { return model().layout(); }
  const device::Mesh& mesh() const { return mesh_; }

 protected:
  explicit StepProgram(const StepOptions& options) : mesh_(options.mesh), loss_scaler_(options.step.loss_scale) {}
  // The step itself: gradients of loss_scale x the loss (the models' set_loss_scale is already
  // called), then the optimizer with that loss_scale.
  virtual models::LossStats run_step(const inputs::Batch& batch, double lr, double loss_scale,
                                     models::OptimizerStepStats& opt) = 0;
  // Opens the first `count` of `selected` (sharing contexts for the ICI ring when asked), each with
  // its runtime for the options' dtype and GEMM policy.
  void open_local_devices(const std::vector<device::DeviceInfo>& selected, int count, device::ProgramCache& cache,
                          const StepOptions& options);
  // One device of this process with its runtime (kernels, GEMM), model instance and optimizer.
  struct Local {
    std::unique_ptr<device::Device> device;
    std::unique_ptr<kernels::DeviceRuntime> runtime;
    std::unique_ptr<models::Model> model;
    std::unique_ptr<models::AdamOptimizer> adam;
  };
  // Kernels of every local device and the communicator's collectives, on the host clock.
  // `prefix` names what the communicator's operations are for ("gradient ").
  std::vector<TraceEvent> collect_trace(const std::vector<std::int64_t>& offsets, long step,
                                        collectives::IciCommunicator* communicator, const std::string& prefix = "");
  void trace_queues(bool on, collectives::IciCommunicator* communicator);
  // The model of the options' architecture on `runtime` (FSDP residency: `resident_block_slots`;
  // tensor parallelism: the shard's parts, and with SEQUENCE_PARALLEL sequence parallelism), for
  // replica_batch rows.
  static std::unique_ptr<models::Model> build_model(kernels::DeviceRuntime& runtime, const StepOptions& options,
                                                    int resident_block_slots = 0, models::TensorShard shard = {});
  static models::ModelOptions model_options(const StepOptions& options, int resident_block_slots = 0,
                                            models::TensorShard shard = {});
  std::vector<kernels::DeviceRuntime*> runtimes() const;
  // Rows [replica * replica_batch, +replica_batch) of this process's batch.
  static inputs::Batch device_rows(const inputs::Batch& batch, int replica, int replica_batch);

  std::vector<Local> locals_;
  SnapshotStaging snapshot_staging_;  // state_slices()' host copies, reused from save to save

 private:
  device::Mesh mesh_;
  models::DynamicLossScaler loss_scaler_;
};

// The program for the options' mesh, on the selected devices (the first
// mesh.devices_per_process() of them).
std::unique_ptr<StepProgram> make_step_program(const std::vector<device::DeviceInfo>& selected,
                                               device::ProgramCache& cache, const collectives::ProcessWorld& world,
                                               const StepOptions& options);

}  // namespace paxocl::scheduler
