#include "scheduler/step_program.h"

#include <algorithm>

#include <fmt/format.h>

#include "models/model_factory.h"
#include "scheduler/data_parallel_step.h"
#include "scheduler/fsdp_step.h"
#include "scheduler/pipeline_step.h"
#include "scheduler/tensor_parallel_step.h"

namespace paxocl::scheduler {

void StepProgram::open_local_devices(const std::vector<device::DeviceInfo>& selected, int count,
                                     device::ProgramCache& cache, const StepOptions& options) {
  const std::vector<device::DeviceInfo> mine(selected.begin(), selected.begin() + count);
  for (auto& d : device::open_devices(mine, options.step.ici_ring)) {
    auto runtime = std::make_unique<kernels::DeviceRuntime>(*d, cache, options.step.fprop_dtype, options.step.gemm_policy,
                                                            options.step.matmul_precision);
    locals_.push_back(Local{std::move(d), std::move(runtime), nullptr, nullptr});
  }
}

models::LossStats StepProgram::train_step(const inputs::Batch& batch, double lr, models::OptimizerStepStats& opt) {
  const double scale = loss_scaler_.scale();
  for (Local& l : locals_) l.model->set_loss_scale(static_cast<float>(scale));
  const models::LossStats stats = run_step(batch, lr, scale, opt);
  loss_scaler_.update(opt.applied);  // the norm is global: every process and device agrees
  return stats;
}

std::size_t StepProgram::activation_bytes_per_device() const {
  std::size_t most = 0;
  for (const Local& l : locals_) most = std::max(most, l.model->activation_bytes());
  return most;
}

std::vector<device::Device*> StepProgram::devices() const {
  std::vector<device::Device*> out;
  for (const Local& l : locals_) out.push_back(l.device.get());
  return out;
}

void StepProgram::trace_queues(bool on, collectives::IciCommunicator* communicator) {
  for (Local& l : locals_) l.device->queue().set_tracing(on);
  if (communicator != nullptr) communicator->set_tracing(on);
}

std::vector<TraceEvent> StepProgram::collect_trace(const std::vector<std::int64_t>& offsets, long step,
                                                   collectives::IciCommunicator* communicator,
                                                   const std::string& prefix) {
  std::vector<TraceEvent> events;
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    device::Queue& q = locals_[d].device->queue();
    q.set_tracing(false);
    for (const auto& k : q.take_trace()) {
      events.push_back({k.kernel, fmt::format("device {} compute", d), static_cast<std::int64_t>(k.start_ns) + offsets[d],
                        static_cast<std::int64_t>(k.end_ns) + offsets[d]});
    }
  }
  if (communicator != nullptr) {
    communicator->set_tracing(false);
    for (const auto& c : communicator->take_trace()) {
      events.push_back({fmt::format("{}{} (step {})", prefix, c.name, step), kCommunicationTrack, c.start_ns, c.end_ns});
    }
  }
  return events;
}

models::ModelOptions StepProgram::model_options(const StepOptions& options, int resident_block_slots,
                                                models::TensorShard shard) {
  // Gradient accumulation: the model holds one sub-batch; larger batches run as sub-batches (model.h).
  const int rows = options.step.replica_batch / options.step.sub_batches;
  return models::ModelOptions{static_cast<std::size_t>(rows), 0, 64u << 20, resident_block_slots, shard,
                              shard.split() && options.step.sequence_parallel, options.step.checkpoint_policy};
}

std::unique_ptr<models::Model> StepProgram::build_model(kernels::DeviceRuntime& runtime, const StepOptions& options,
                                                       int resident_block_slots, models::TensorShard shard) {
  return models::build_model(runtime, options.model, model_options(options, resident_block_slots, shard));
}

std::vector<kernels::DeviceRuntime*> StepProgram::runtimes() const {
  std::vector<kernels::DeviceRuntime*> out;
  for (const Local& l : locals_) out.push_back(l.runtime.get());
  return out;
}

inputs::Batch StepProgram::device_rows(const inputs::Batch& batch, int replica, int replica_batch) {
  return batch.sequences(replica * replica_batch, replica_batch);
}

StepOptions StepOptions::of(const config::JobConfig& job, const device::Mesh& mesh) {
  return StepOptions{job.model, job.optimizer, job.step, mesh};
}

std::unique_ptr<StepProgram> make_step_program(const std::vector<device::DeviceInfo>& selected,
                                               device::ProgramCache& cache, const collectives::ProcessWorld& world,
                                               const StepOptions& options) {
  if (options.mesh.size(device::MeshAxis::kStage) > 1) {
    return std::make_unique<PipelineStep>(selected, cache, world, options);
  }
  if (options.mesh.size(device::MeshAxis::kFsdp) > 1) return std::make_unique<FsdpStep>(selected, cache, world, options);
  if (options.mesh.size(device::MeshAxis::kTensor) > 1) {
    return std::make_unique<TensorParallelStep>(selected, cache, world, options);
  }
  return std::make_unique<DataParallelStep>(selected, cache, world, options);
}

}  // namespace paxocl::scheduler
