// TensorParallelStep: tensor parallelism over the mesh's tensor axis (Megatron-LM's column- and
// row-parallel layers, praxis's 'mdl' sharding; models/tensor_split.h says what each device holds),
// combined with data parallelism over the data axis. A tensor group (the devices along the tensor
// axis, inside this process (ICI) and across processes (DCN)) holds one replica of the model and
// runs its rows of the batch together; data groups (the devices with the same tensor rank) average
// their gradients as DataParallelStep's replicas do.
//
// Each local device runs its pass on a host thread of its own: the layers' sums (TensorGroup) make
// a device wait for the others, and blocking calls inside a pass (reading the loss, a GEMM's first
// timing) must not hold up the members that have not reached the sum yet. The collectives of a
// tensor group are issued when its last local member arrives (collectives/tensor_communicator.h).
// Then: the data groups' gradient averages, the global gradient norm (each element counted once:
// replicated tensors on tensor rank 0 only, summed over the tensor group), every device's Adam update.
//
// Checkpoints and parameter images are whole-model (global layout) images: the devices' parts are
// assembled (and, across processes, summed over the job: each element placed by one device only),
// so any mesh restores any checkpoint. Decoding and weight files need the whole model (tensor axis 1).
#pragma once

#include <memory>
#include <vector>

#include "collectives/gradient_averager.h"
#include "models/tensor_split.h"
#include "scheduler/step_program.h"
#include "scheduler/tensor_groups.h"

namespace paxocl::scheduler {

class TensorParallelStep : public StepProgram {
 public:
  TensorParallelStep(const std::vector<device::DeviceInfo>& devices, device::ProgramCache& cache,
                     const collectives::ProcessWorld& world, const StepOptions& options);

  const models::ParameterLayout& layout() const override { return *global_layout_; }
  void load_parameters(std::span<const float> flat) override;
  std::vector<StateSlice> state_slices() override;  // process 0: all of it (collective)
  OptimizerCounts optimizer_counts() const override;
  void load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                  OptimizerCounts counts) override;
  std::vector<float> parameters() override;
  models::LossStats run_step(const inputs::Batch& batch, double lr, double loss_scale,
                             models::OptimizerStepStats& opt) override;
  // Forward on this process's first tensor group; collective when that group spans processes.
  models::LossStats evaluate(const inputs::Batch& batch) override;
  bool evaluation_is_collective() const override { return mesh().dcn_size(device::MeshAxis::kTensor) > 1; }
  // Tensor group 0's first device (its rows' scores are whole on every rank).
  const models::Model& evaluation_model() const override;
  bool communicates() const override { return true; }
  long steps_skipped() const override { return locals_.front().adam->steps_skipped(); }
  std::size_t state_bytes_per_device() const override;
  void set_tracing(bool on) override;
  std::vector<TraceEvent> take_trace(const std::vector<std::int64_t>& offsets, long step) override;

 private:
  // Whole-model images of per-device buffers (parameters or moments), collective.
  std::vector<float> assemble(const std::function<std::vector<float>(std::size_t)>& local_image);
  std::vector<float> read_buffer(std::size_t d, const models::FloatBuffer& b) const;  // on d's layout

  StepOptions options_;
  const collectives::ProcessWorld& world_;
  int rank_ = 0;
  std::unique_ptr<models::ParameterLayout> global_layout_;  // the whole model's (images, checkpoints)
  std::unique_ptr<TensorGroups> tensors_;
  std::vector<std::unique_ptr<models::TensorSplit>> splits_;          // per local device
  std::vector<std::vector<models::AdamOptimizer::Segment>> counted_;  // per device: its norm's ranges
  std::vector<std::unique_ptr<collectives::GradientAverager>> averagers_;  // per local data group
  std::vector<int> averager_of_;  // per local device: index into averagers_, -1 without replicas
};

}  // namespace paxocl::scheduler
