// DataParallelStep: data parallelism over the mesh's data axis: a full model replica on every
// device (ICI) of every process (DCN), each on its rows of the batch; gradients averaged over all
// replicas (collectives::GradientAverager: host sum over the devices, MPI all-reduce over the
// processes); every replica applies the same Adam update.
// With overlap, finished blocks' gradients are averaged as soon as the last local replica's
// backward has produced them (a marker on its queue gates the staging), so the reduction of block
// l runs while blocks l-1 .. 0 still compute; bucket_bytes combines consecutive finished blocks
// into one reduction, as XLA's all-reduce combiner does. Without overlap, one reduction follows
// the whole backward. With ICI_ALGORITHM=host, or up to 2 devices per process, every variant adds
// in the same order: identical results; the ring's chunks follow the reduced ranges, so with 3 or
// more devices the variants differ in fp32 rounding.
#pragma once

#include "collectives/gradient_averager.h"
#include "scheduler/step_program.h"

namespace paxocl::scheduler {

class DataParallelStep : public StepProgram {
 public:
  DataParallelStep(const std::vector<device::DeviceInfo>& devices, device::ProgramCache& cache,
                   const collectives::ProcessWorld& world, const StepOptions& options);

  void load_parameters(std::span<const float> flat) override;
  std::vector<StateSlice> state_slices() override;  // process 0: all of it; the others: nothing
  OptimizerCounts optimizer_counts() const override;
  void load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                  OptimizerCounts counts) override;
  std::vector<float> parameters() override;
  models::LossStats run_step(const inputs::Batch& batch, double lr, double loss_scale,
                             models::OptimizerStepStats& opt) override;
  models::LossStats evaluate(const inputs::Batch& batch) override { return model().evaluate(batch); }
  bool evaluation_is_collective() const override { return false; }
  const models::Model& evaluation_model() const override { return model(); }
  bool communicates() const override { return averager_ != nullptr; }
  long steps_skipped() const override { return locals_.front().adam->steps_skipped(); }
  std::size_t state_bytes_per_device() const override {
    return 4 * layout().total() * sizeof(float) + model().weight_copy_bytes();
  }
  void set_tracing(bool on) override;
  std::vector<TraceEvent> take_trace(const std::vector<std::int64_t>& offsets, long step) override;

 private:
  StepOptions options_;
  int rank_ = 0;
  std::unique_ptr<collectives::GradientAverager> averager_;  // null with a single replica
};

}  // namespace paxocl::scheduler
