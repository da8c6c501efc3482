#include "scheduler/tensor_parallel_step.h"

#include <cmath>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "common/errors.h"
#include "models/model_factory.h"

namespace paxocl::scheduler {

using device::MeshAxis;

namespace {
// The complement of `replicas` in [0, total): the ranges whose squares a device adds to the norm.
std::vector<models::AdamOptimizer::Segment> counted_ranges(std::size_t total,
                                                           const std::vector<models::ParameterLayout::Range>& replicas) {
  std::vector<models::AdamOptimizer::Segment> out;
  std::size_t at = 0;
  for (const auto& r : replicas) {
    if (r.offset > at) out.push_back({at, r.offset - at, false});
    at = r.offset + r.count;
  }
  if (total > at) out.push_back({at, total - at, false});
  return out;
}
}  // namespace

TensorParallelStep::TensorParallelStep(const std::vector<device::DeviceInfo>& devices, device::ProgramCache& cache,
                                       const collectives::ProcessWorld& world, const StepOptions& options)
    : StepProgram(options), options_(options), world_(world), rank_(world.rank()) {
  const device::Mesh& mesh = options.mesh;
  if (mesh.size(MeshAxis::kFsdp) > 1) {
    throw ConfigError(fmt::format("ICI_MESH_SHAPE={} x DCN_MESH_SHAPE={}: tensor parallelism combined with fsdp is "
                                  "not implemented yet; use the data and tensor axes",
                                  device::to_string(mesh.ici()), device::to_string(mesh.dcn())));
  }
  const int tensor = mesh.size(MeshAxis::kTensor);
  models::validate_tensor_split(options.model, tensor);
  const int local = mesh.devices_per_process();
  open_local_devices(devices, local, cache, options);

  // Places, tensor groups and their communicators (in this process: one per local data index).
  std::vector<std::vector<int>> group_devices;  // local indices of each local tensor group, in rank order
  for (int d = 0; d < local; ++d) {
    const int id = mesh.device_id(rank_, d);
    const device::MeshCoords c = mesh.coords(id);
    const std::vector<int> ici = mesh.ici_group(id, MeshAxis::kTensor);
    Place p;
    p.tensor_rank = c[static_cast<std::size_t>(MeshAxis::kTensor)];
    p.member = static_cast<int>(std::find(ici.begin(), ici.end(), id) - ici.begin());
    p.first_replica = c[static_cast<std::size_t>(MeshAxis::kData)] == 0;
    const int first = mesh.local_index_of(ici.front());
    auto g = std::find_if(group_devices.begin(), group_devices.end(), [&](const auto& v) { return v.front() == first; });
    if (g == group_devices.end()) {
      g = group_devices.insert(group_devices.end(), std::vector<int>{});
      for (int member : ici) g->push_back(mesh.local_index_of(member));
    }
    p.group = static_cast<int>(g - group_devices.begin());
    places_.push_back(p);
  }
  const std::vector<int> tensor_processes = mesh.dcn_processes(rank_, MeshAxis::kTensor);
  for (const auto& g : group_devices) {
    std::vector<device::Device*> members;
    for (int d : g) members.push_back(locals_[static_cast<std::size_t>(d)].device.get());
    tensor_comms_.push_back(std::make_unique<collectives::TensorCommunicator>(members, world, tensor_processes));
  }

  // Each device's model (its parts), optimizer, group member and norm ranges.
  for (int d = 0; d < local; ++d) {
    Local& l = locals_[static_cast<std::size_t>(d)];
    const Place& p = places_[static_cast<std::size_t>(d)];
    l.model = models::build_model(
        *l.runtime, options.model,
        models::ModelOptions{static_cast<std::size_t>(options.step.device_batch * mesh.ici_size(MeshAxis::kTensor)), 0,
                             64u << 20, 0, models::TensorShard{p.tensor_rank, tensor}});
    const models::ParameterLayout& own = l.model->layout();
    l.adam = std::make_unique<models::AdamOptimizer>(*l.runtime, own.total(), own.decayed_end(), options.adam);
    if (!global_layout_) global_layout_ = std::make_unique<models::ParameterLayout>(options.model, own.alignment());
    splits_.push_back(std::make_unique<models::TensorSplit>(options.model, models::TensorShard{p.tensor_rank, tensor},
                                                            *global_layout_, own));
    counted_.push_back(counted_ranges(own.total(), splits_.back()->replica_ranges()));
    members_.push_back(std::make_unique<TensorGroupMember>(*tensor_comms_[static_cast<std::size_t>(p.group)], p.member,
                                                           p.tensor_rank, tensor, *l.runtime));
    l.model->set_tensor_group(members_.back().get());
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
  if (world.size() > 1) {
    std::vector<int> all(static_cast<std::size_t>(world.size()));
    std::iota(all.begin(), all.end(), 0);
    job_group_ = std::make_unique<collectives::MpiCommunicator>(world, all);
  }
}

TensorParallelStep::~TensorParallelStep() {
  // The models hold pointers to their group members: nothing may run a pass after this.
  for (Local& l : locals_) {
    if (l.model) l.model->set_tensor_group(nullptr);
  }
}

void TensorParallelStep::on_device_threads(std::size_t count, const std::function<void(std::size_t)>& pass) {
  std::mutex mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (std::size_t d = 0; d < count; ++d) {
    threads.emplace_back([&, d] {
      try {
        pass(d);
      } catch (...) {
        const std::exception_ptr error = std::current_exception();
        {
          std::lock_guard lock(mutex);
          if (!first_error) first_error = error;
        }
        tensor_comms_[static_cast<std::size_t>(places_[d].group)]->abort(error);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
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
    if (places_[d].first_replica) splits_[d]->place(local_image(d), flat);
  }
  if (job_group_) job_group_->all_reduce(flat).wait();  // each element placed by one device of the job
  return flat;
}

std::vector<float> TensorParallelStep::parameters() {
  return assemble([&](std::size_t d) { return locals_[d].model->parameters(); });
}

std::vector<StepProgram::StateSlice> TensorParallelStep::state_slices() {
  StateSlice s{0, parameters(), {}, {}};
  s.m = assemble([&](std::size_t d) { return read_buffer(d, locals_[d].adam->first_moment()); });
  s.v = assemble([&](std::size_t d) { return read_buffer(d, locals_[d].adam->second_moment()); });
  if (rank_ != 0) return {};
  return {std::move(s)};
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
  const std::size_t groups = tensor_comms_.size();
  const int rows = batch.batch / static_cast<int>(groups);
  std::vector<models::LossStats> stats(locals_.size());
  on_device_threads(locals_.size(), [&](std::size_t d) {
    stats[d] = locals_[d].model->train_step_gradients(device_rows(batch, places_[d].group, rows));
  });
  // Data groups: every replica's gradients averaged (after its whole backward).
  std::vector<collectives::Pending> reductions;
  for (std::size_t a = 0; a < averagers_.size(); ++a) {
    collectives::IciCommunicator::Buffers views;
    std::vector<device::Event> ready;
    std::size_t n = 0;
    for (std::size_t d = 0; d < locals_.size(); ++d) {
      if (averager_of_[d] != static_cast<int>(a)) continue;
      views.push_back(locals_[d].model->gradient_buffer());
      n = locals_[d].model->layout().total();
      ready.push_back(locals_[d].device->queue().marker());
      locals_[d].device->queue().flush();
    }
    reductions.push_back(averagers_[a]->average(views, n, ready));
  }
  for (const collectives::Pending& p : reductions) p.wait();
  // The global norm: every element counted once in the job: replica 0's devices (data coordinate
  // 0; the replicas are equal now), each its counted ranges (replicated tensors on tensor rank 0).
  std::vector<double> squares = {0.0};
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    if (places_[d].first_replica) {
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
    if (places_[d].tensor_rank == 0) total += stats[d];
  }
  return total;
}

models::LossStats TensorParallelStep::evaluate(const inputs::Batch& batch) {
  std::vector<models::LossStats> stats(locals_.size());
  std::vector<std::size_t> group0;
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    if (places_[d].group == 0) group0.push_back(d);
  }
  on_device_threads(group0.size(), [&](std::size_t i) { stats[group0[i]] = locals_[group0[i]].model->evaluate(batch); });
  models::LossStats total;
  for (std::size_t d : group0) {
    if (places_[d].tensor_rank == 0) total += stats[d];
  }
  return total;
}

std::size_t TensorParallelStep::state_bytes_per_device() const {
  const models::Model& m = model();
  return 4 * m.layout().total() * sizeof(float) + m.weight_copy_bytes();
}

void TensorParallelStep::set_tracing(bool on) {
  for (Local& l : locals_) l.device->queue().set_tracing(on);
  for (auto& c : tensor_comms_) c->ici().set_tracing(on);
  for (auto& a : averagers_) a->ici().set_tracing(on);
}

std::vector<TraceEvent> TensorParallelStep::take_trace(const std::vector<std::int64_t>& offsets, long step) {
  std::vector<TraceEvent> events = collect_trace(offsets, step, nullptr);
  auto add = [&](collectives::IciCommunicator& ici, const std::string& prefix) {
    ici.set_tracing(false);
    for (const auto& c : ici.take_trace()) {
      events.push_back({fmt::format("{}{} (step {})", prefix, c.name, step), "communication", c.start_ns, c.end_ns});
    }
  };
  for (std::size_t g = 0; g < tensor_comms_.size(); ++g) add(tensor_comms_[g]->ici(), fmt::format("tensor group {} ", g));
  for (auto& a : averagers_) add(a->ici(), "gradient ");
  return events;
}

}  // namespace paxocl::scheduler
