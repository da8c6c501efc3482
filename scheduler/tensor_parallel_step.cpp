#include "scheduler/tensor_parallel_step.h"

#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "common/errors.h"
#include "models/model_factory.h"
#include "scheduler/data_group_average.h"

namespace paxocl::scheduler {

using device::MeshAxis;

TensorParallelStep::TensorParallelStep(const std::vector<device::DeviceInfo>& devices, device::ProgramCache& cache,
                                       const collectives::ProcessWorld& world, const StepOptions& options)
    : StepProgram(options), options_(options), world_(world), rank_(world.rank()) {
  const device::Mesh& mesh = options.mesh;
  if (mesh.size(MeshAxis::kFsdp) > 1) throw std::logic_error("TensorParallelStep on a mesh with an fsdp axis (FsdpStep's)");
  models::validate_tensor_split(options.model, mesh.size(MeshAxis::kTensor));
  const int local = mesh.devices_per_process();
  open_local_devices(devices, local, cache, options);
  tensors_ = std::make_unique<TensorGroups>(mesh, world, StepProgram::devices(), runtimes());

  // Each device's model (its parts), optimizer and norm ranges.
  for (int d = 0; d < local; ++d) {
    Local& l = locals_[static_cast<std::size_t>(d)];
    const models::TensorShard shard = tensors_->shard(static_cast<std::size_t>(d));
    l.model = build_model(*l.runtime, options, 0, shard);
    const models::ParameterLayout& own = l.model->layout();
    l.adam = std::make_unique<models::AdamOptimizer>(*l.runtime, own.total(), own.decayed_end(), options.adam);
    if (!global_layout_) global_layout_ = std::make_unique<models::ParameterLayout>(options.model, own.alignment());
    splits_.push_back(std::make_unique<models::TensorSplit>(options.model, shard, *global_layout_, own));
    counted_.push_back(models::segments_outside(own.total(), splits_.back()->replica_ranges()));
    tensors_->attach(static_cast<std::size_t>(d), *l.model);
  }

  // Data groups: the devices of one tensor rank, averaging their gradients.
  const std::vector<int> data_processes = mesh.dcn_processes(rank_, MeshAxis::kData);
  averager_of_.assign(static_cast<std::size_t>(local), -1);
  if (mesh.size(MeshAxis::kData) > 1) {
    for (int d = 0; d < local; ++d) {
      if (averager_of_[static_cast<std::size_t>(d)] >= 0) continue;
      const std::vector<int> group = mesh.ici_group(mesh.device_id(rank_, d), MeshAxis::kData);
      std::vector<device::Device*> replicas;
      for (int id : group) {
        const int r = mesh.local_index_of(id);
        replicas.push_back(locals_[static_cast<std::size_t>(r)].device.get());
        averager_of_[static_cast<std::size_t>(r)] = static_cast<int>(averagers_.size());
      }
      averagers_.push_back(std::make_unique<collectives::GradientAverager>(replicas, world, data_processes));
    }
  }
}

void TensorParallelStep::load_parameters(std::span<const float> flat) {
  for (std::size_t d = 0; d < locals_.size(); ++d) locals_[d].model->set_parameters(splits_[d]->extract(flat));
}

std::vector<float> TensorParallelStep::read_buffer(std::size_t d, const models::FloatBuffer& b) const {
  std::vector<float> out(locals_[d].model->layout().total());
  locals_[d].device->queue().read(b, std::span<float>(out));
  return out;
}

std::vector<float> TensorParallelStep::assemble(const std::function<std::vector<float>(std::size_t)>& local_image) {
  std::vector<float> flat(global_layout_->total(), 0.0f);
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    if (tensors_->place(d).first_replica) splits_[d]->place(local_image(d), flat);
  }
  tensors_->sum_over_job(flat);  // each element placed by one device of the job
  return flat;
}

std::vector<float> TensorParallelStep::parameters() {
  return assemble([&](std::size_t d) { return locals_[d].model->parameters(); });
}

std::vector<StepProgram::StateSlice> TensorParallelStep::state_slices() {
  // Assembled on the host from every device's parts (a sum over the job), so there is no copy to stage.
  auto p = parameters();
  auto m = assemble([&](std::size_t d) { return read_buffer(d, locals_[d].adam->first_moment()); });
  auto v = assemble([&](std::size_t d) { return read_buffer(d, locals_[d].adam->second_moment()); });
  if (rank_ != 0) return {};
  return {StateSlice::of(0, std::move(p), std::move(m), std::move(v))};
}

StepProgram::OptimizerCounts TensorParallelStep::optimizer_counts() const {
  return {locals_.front().adam->steps_applied(), locals_.front().adam->steps_skipped()};
}

void TensorParallelStep::load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                                    OptimizerCounts counts) {
  load_parameters(params);
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    locals_[d].adam->load_state(splits_[d]->extract(m), splits_[d]->extract(v), counts.applied, counts.skipped);
  }
}

models::LossStats TensorParallelStep::run_step(const inputs::Batch& batch, double lr, double loss_scale,
                                               models::OptimizerStepStats& opt) {
  const std::size_t groups = tensors_->groups();
  const int rows = batch.batch / static_cast<int>(groups);
  std::vector<models::LossStats> stats(locals_.size());
  tensors_->run_threads(locals_.size(), [&](std::size_t d) {
    stats[d] = locals_[d].model->train_step_gradients(device_rows(batch, tensors_->place(d).group, rows));
  });
  // Data groups: every replica's gradients averaged (after its whole backward).
  const std::vector<collectives::Pending> reductions =
      average_data_groups(averagers_, averager_of_, [&](std::size_t d) {
        device::Event backward_done = locals_[d].device->queue().marker();
        locals_[d].device->queue().flush();
        return MemberGradients{locals_[d].model->gradient_buffer(), locals_[d].model->layout().total(),
                               std::move(backward_done)};
      });
  for (const collectives::Pending& p : reductions) p.wait();
  // The global norm: every element counted once in the job: replica 0's devices (data coordinate
  // 0; the replicas are equal now), each its counted ranges (replicated tensors on tensor rank 0).
  std::vector<double> squares = {0.0};
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    if (tensors_->place(d).first_replica) {
      squares[0] += locals_[d].adam->sum_squares(locals_[d].model->gradient_buffer(), counted_[d]);
    }
  }
  if (world_.size() > 1) world_.all_reduce_sum(squares);
  for (Local& l : locals_) {
    opt = l.adam->step_with_norm(l.model->parameter_buffer(), l.model->gradient_buffer(), lr, std::sqrt(squares[0]),
                                 loss_scale);
  }
  // Every member of a tensor group computed its rows' loss: count it once, on tensor rank 0.
  models::LossStats total;
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    if (tensors_->place(d).tensor_rank == 0) total += stats[d];
  }
  return total;
}

const models::Model& TensorParallelStep::evaluation_model() const {
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    if (tensors_->place(d).group == 0) return *locals_[d].model;
  }
  throw std::logic_error("TensorParallelStep: no device of tensor group 0");
}

models::LossStats TensorParallelStep::evaluate(const inputs::Batch& batch) {
  std::vector<models::LossStats> stats(locals_.size());
  std::vector<std::size_t> group0;
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    if (tensors_->place(d).group == 0) group0.push_back(d);
  }
  tensors_->run_threads(group0.size(), [&](std::size_t i) { stats[group0[i]] = locals_[group0[i]].model->evaluate(batch); });
  models::LossStats total;
  for (std::size_t d : group0) {
    if (tensors_->place(d).tensor_rank == 0) total += stats[d];
  }
  return total;
}

std::size_t TensorParallelStep::state_bytes_per_device() const {
  const models::Model& m = model();
  return 4 * m.layout().total() * sizeof(float) + m.weight_copy_bytes();
}

void TensorParallelStep::set_tracing(bool on) {
  for (Local& l : locals_) l.device->queue().set_tracing(on);
  tensors_->set_tracing(on);
  for (auto& a : averagers_) a->ici().set_tracing(on);
}

std::vector<TraceEvent> TensorParallelStep::take_trace(const std::vector<std::int64_t>& offsets, long step) {
  std::vector<TraceEvent> events = collect_trace(offsets, step, nullptr);
  auto add = [&](collectives::IciCommunicator& ici, const std::string& prefix) {
    ici.set_tracing(false);
    for (const auto& c : ici.take_trace()) {
      events.push_back({fmt::format("{}{} (step {})", prefix, c.name, step), kCommunicationTrack, c.start_ns, c.end_ns});
    }
  };
  tensors_->append_trace(events, step);
  for (auto& a : averagers_) add(a->ici(), "gradient ");
  return events;
}

}  // namespace paxocl::scheduler
