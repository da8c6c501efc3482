// FsdpStep: fully sharded data parallelism (ZeRO-3) along the mesh's fsdp axis, combined with
// data parallelism along its data axis. Each device keeps only its shard of every parameter, of
// its gradient and of Adam's moments (models::ShardPlan), plus FSDP residency in its model: the
// unit outside the blocks (wte, wpe, lnf; gathered once per step) and `prefetch_depth + 1` block
// slots. The step is a program over the uses of the blocks (forward 0..L-1, then backward L-1..0):
//   - use k's block is all-gathered into its slot while earlier uses compute: up to
//     `prefetch_depth` uses ahead; a gather waits (on the communication side) for the slot's
//     previous block to be done with it, and the compute queue waits (on the device) for the
//     gather, just before the block runs;
//   - the blocks still resident after the forward are not gathered again for the backward;
//   - right after a block's backward its gradient is reduce-scattered into the devices' gradient
//     shards (mean over every device of the job) while earlier blocks' backward runs; a slot's
//     gradient is reused only after its reduce-scatter has read it;
//   - at the end: the global gradient norm from the shards, and Adam on every shard.
// Without overlap every collective is waited for when issued and nothing is prefetched.
// Gradient accumulation (NUM_SUB_BATCHES = k): the program above runs once per sub-batch, the
// blocks gathered again each time; each pass's reduce-scatter lands in the gradient shards, which
// are summed over the passes (a device holds only its slots' gradients, so the reduction cannot wait
// for the last sub-batch as data parallelism's does: k reduce-scatters per step, as praxis's
// ShardedStaticAccumulator under XLA's FSDP).
// The sums run in the same order as DataParallelStep's: the same gradients; only the gradient
// norm's summation order differs (fp32 rounding).
// With a tensor axis (tensor parallelism, models/tensor_split.h) each device holds its tensor
// rank's parts of the model, and FSDP shards those parts: the devices of one tensor index form a
// lane with its own shard plan and FsdpCommunicator, running the program above; the lanes run on
// threads of their own (their devices' passes wait for each other inside, TensorGroups). Images
// and checkpoints are then whole-model images assembled from every lane's shards.
#pragma once

#include <optional>

#include "collectives/fsdp_communicator.h"
#include "models/shard_plan.h"
#include "models/tensor_split.h"
#include "scheduler/step_program.h"
#include "scheduler/tensor_groups.h"

namespace paxocl::scheduler {

class FsdpStep : public StepProgram {
 public:
  FsdpStep(const std::vector<device::DeviceInfo>& devices, device::ProgramCache& cache,
           const collectives::ProcessWorld& world, const StepOptions& options);

  void load_parameters(std::span<const float> flat) override;
  // Processes of DCN data index 0 own their chunks: each local fsdp index's shard, mapped back to
  // flat ranges.
  std::vector<StateSlice> state_slices() override;
  OptimizerCounts optimizer_counts() const override;
  void load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                  OptimizerCounts counts) override;
  std::vector<float> parameters() override;
  models::LossStats run_step(const inputs::Batch& batch, double lr, double loss_scale,
                             models::OptimizerStepStats& opt) override;
  models::LossStats evaluate(const inputs::Batch& batch) override;
  // Each lane's first device runs an evaluation (whole rows' scores, whatever the lane's tensor rank).
  const models::Model& evaluation_model() const override { return *locals_[lanes_.front().devices.front()].model; }
  bool evaluation_is_collective() const override {
    return options_.mesh.dcn_size(device::MeshAxis::kFsdp) > 1 || options_.mesh.dcn_size(device::MeshAxis::kTensor) > 1;
  }
  const models::ParameterLayout& layout() const override {
    return global_layout_ ? *global_layout_ : StepProgram::layout();
  }
  bool communicates() const override { return true; }
  long steps_skipped() const override { return locals_.front().adam->steps_skipped(); }
  // Shards x 4 (parameters, gradients, moments) + the resident units x 2 (parameters, gradients).
  std::size_t state_bytes_per_device() const override;
  void set_tracing(bool on) override;
  std::vector<TraceEvent> take_trace(const std::vector<std::int64_t>& offsets, long step) override;

  const models::ShardPlan& plan() const { return *lanes_.front().plan; }

 private:
  // One tensor index's devices of this process (every device without a tensor axis), sharding
  // their parts of the model over fsdp.
  struct Lane {
    std::vector<std::size_t> devices;  // local indices, [data, fsdp] row-major
    int tensor_rank = 0;
    std::unique_ptr<models::ShardPlan> plan;
    std::vector<collectives::UnitSplit> splits;  // per unit (block + 1)
    std::unique_ptr<collectives::FsdpCommunicator> comm;
    std::unique_ptr<models::TensorSplit> tensor_split;  // tensor axis: whole image <-> the lane's parts
  };
  // The forward (and with `train` the backward) of `rows[k]` on the lane's devices 0 .. rows.size()-1;
  // `mean_over[k]` (gradient accumulation): the weight sum of the whole batch rows[k] is a sub-batch of.
  models::LossStats run_pass(Lane& lane, const std::vector<inputs::Batch>& rows, bool train,
                             const std::vector<double>& mean_over = {});
  // Every lane (on threads of their own with a tensor axis); the loss counted on tensor rank 0.
  models::LossStats run_lanes(const std::function<models::LossStats(Lane&)>& pass);
  collectives::Pending gather(Lane& lane, int block, std::size_t devices, collectives::IciCommunicator::Events wait_for);
  std::vector<device::Event> compute_markers(const Lane& lane, std::size_t devices);  // now, flushed
  // Tensor axis: a whole-model image of per-device shard buffers (parameters or moments), collective.
  std::vector<float> assemble(const std::function<const models::FloatBuffer&(std::size_t)>& shards);

  StepOptions options_;
  const collectives::ProcessWorld& world_;
  int process_ = 0;  // this process's DCN fsdp index
  int slots_ = 1;
  std::vector<Lane> lanes_;
  std::vector<int> fsdp_index_;  // per local device: its ICI fsdp coordinate (its shard of the chunk)
  std::vector<models::FloatBuffer> param_shards_, grad_shards_;  // per local device
  // NUM_SUB_BATCHES > 1: the sum of the sub-batches' gradient shards (each pass reduce-scatters into
  // grad_shards_; FSDP keeps no whole gradient across passes), per local device.
  std::vector<models::FloatBuffer> grad_sums_;
  std::unique_ptr<TensorGroups> tensors_;                     // tensor axis only
  std::unique_ptr<models::ParameterLayout> global_layout_;   // tensor axis only: the whole model's
  std::vector<std::vector<models::AdamOptimizer::Segment>> counted_;  // tensor axis: per device, its norm's
};

}  // namespace paxocl::scheduler
