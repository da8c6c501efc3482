#include "scheduler/pipeline_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "models/model_factory.h"
#include "scheduler/data_group_average.h"
#include "scheduler/device_threads.h"

namespace paxocl::scheduler {

using device::MeshAxis;

PipelineStep::PipelineStep(const std::vector<device::DeviceInfo>& devices, device::ProgramCache& cache,
                           const collectives::ProcessWorld& world, const StepOptions& options)
    : StepProgram(options), options_(options), world_(world) {
  const device::Mesh& mesh = options.mesh;
  if (mesh.size(MeshAxis::kTensor) > 1) models::validate_tensor_split(options.model, mesh.size(MeshAxis::kTensor));
  const config::PipelineConfig& pipeline = options.step.pipeline;
  const int stages = mesh.size(MeshAxis::kStage), local = mesh.devices_per_process();
  const int microbatch = pipeline.microbatch_size(options.step.replica_batch);
  dims_ = static_cast<std::size_t>(options.model.visit([](const auto& c) { return c.model_dims; }));
  sequence_parallel_ = options.step.sequence_parallel && mesh.size(MeshAxis::kTensor) > 1;
  open_local_devices(devices, local, cache, options);
  if (mesh.size(MeshAxis::kTensor) > 1) tensors_ = std::make_unique<TensorGroups>(mesh, world, StepProgram::devices(), runtimes());
  messages_ = std::make_unique<collectives::StageMessages>(world);
  if (world.size() > 1) {
    std::vector<int> all(static_cast<std::size_t>(world.size()));
    std::iota(all.begin(), all.end(), 0);
    job_ = std::make_unique<collectives::MpiCommunicator>(world, all);
  }

  // Each device's chunks: their blocks, neighbours, model instances and optimizers. Chunk c of the
  // device at stage s is virtual stage v = c*p + s; its neighbours are v-1 and v+1.
  repeat_ = pipeline.repeat;
  const bool sharded = mesh.size(MeshAxis::kFsdp) > 1;
  const int fsdp_ici = mesh.ici_size(MeshAxis::kFsdp), fsdp_dcn = mesh.dcn_size(MeshAxis::kFsdp),
            fsdp_process = mesh.dcn_coord(world.rank(), MeshAxis::kFsdp);
  const int virtual_stages = stages * repeat_;
  auto peer = [&](device::MeshCoords c, int v) {
    c[static_cast<std::size_t>(MeshAxis::kStage)] = v % stages;
    const int id = mesh.device_at(c);
    return Peer{mesh.process_of(id), mesh.local_index_of(id), v / stages};
  };
  stages_.resize(static_cast<std::size_t>(local * repeat_));
  for (int d = 0; d < local; ++d) {
    Local& l = locals_[static_cast<std::size_t>(d)];
    const device::MeshCoords c = mesh.coords(mesh.device_id(world.rank(), d));
    const int s = c[static_cast<std::size_t>(MeshAxis::kStage)];
    for (int chunk = 0; chunk < repeat_; ++chunk) {
      Stage& st = stage(static_cast<std::size_t>(d), chunk);
      const int v = chunk * stages + s;
      st.device = static_cast<std::size_t>(d);
      st.chunk = chunk;
      st.span = models::stage_span(options.model.num_blocks(), virtual_stages, v);
      st.replica = mesh.ici_coord(d, MeshAxis::kData) * fsdp_ici + mesh.ici_coord(d, MeshAxis::kFsdp);
      st.first_replica = c[static_cast<std::size_t>(MeshAxis::kData)] == 0;
      if (v > 0) st.previous = peer(c, v - 1);
      if (v + 1 < virtual_stages) st.next = peer(c, v + 1);
      if (v == 0) st.other_end = peer(c, virtual_stages - 1);
      if (v == virtual_stages - 1) st.other_end = peer(c, 0);

      const models::TensorShard shard = tensors_ ? tensors_->shard(static_cast<std::size_t>(d)) : models::TensorShard{};
      models::ModelOptions model_options = StepProgram::model_options(options, 0, shard);
      model_options.max_batch = static_cast<std::size_t>(microbatch);
      model_options.stage = st.span;
      auto first = models::build_model(*l.runtime, options.model, model_options);
      model_options.shared_parameters = first->parameter_buffers();
      const int slots = models::microbatches_in_flight(pipeline.schedule, stages, s, pipeline.microbatches);
      for (int k = 1; k < slots; ++k) st.more_slots.push_back(models::build_model(*l.runtime, options.model, model_options));
      if (tensors_) {  // every instance sums through the device's member of its tensor group
        tensors_->attach(static_cast<std::size_t>(d), *first);
        for (auto& more : st.more_slots) tensors_->attach(static_cast<std::size_t>(d), *more);
      }
      const models::ParameterLayout& own = first->layout();
      st.shard = models::ShardPlan::Piece{0, own.total()};
      if (sharded) {
        for (int p = 0; p < fsdp_dcn; ++p) {
          const auto chunk_of_process = models::ShardPlan::split_aligned(0, own.total(), own.alignment(), fsdp_dcn, p);
          st.split.chunks.push_back({chunk_of_process.begin, chunk_of_process.end});
        }
        for (int f = 0; f < fsdp_ici; ++f) {  // offsets in the whole buffers, which the collectives read and write
          const auto piece = models::ShardPlan::buffer_shard(own.total(), own.alignment(), fsdp_dcn, fsdp_ici,
                                                             fsdp_process, f);
          st.split.shards.push_back({piece.begin, piece.end});
          st.split.shard_offsets.push_back(piece.begin);
        }
        st.split.size = own.total();
        const auto& mine = st.split.shards[static_cast<std::size_t>(mesh.ici_coord(d, MeshAxis::kFsdp))];
        st.shard = models::ShardPlan::Piece{mine.begin, mine.end};
        if (st.shard.size() == 0) {
          throw ConfigError(fmt::format("pipeline stage {}'s {} parameters do not split over an fsdp axis of {}: "
                                        "choose a smaller fsdp axis",
                                        st.span.stage, own.total(), mesh.size(MeshAxis::kFsdp)));
        }
      }
      // Weight decay covers [0, decayed_end): the shard's part of it is a prefix.
      const std::size_t decayed = std::clamp(own.decayed_end(), st.shard.begin, st.shard.end) - st.shard.begin;
      auto adam = std::make_unique<models::AdamOptimizer>(
          *l.runtime, st.shard.begin, st.shard.size(),
          std::vector<models::AdamOptimizer::Segment>{{0, decayed, true}, {decayed, st.shard.size() - decayed, false}},
          options.adam);
      st.first = first.get();
      st.adam = adam.get();
      if (chunk == 0) {  // the device's Local holds its first chunk's (StepProgram::model() and friends)
        l.model = std::move(first);
        l.adam = std::move(adam);
      } else {
        st.own_first = std::move(first);
        st.own_adam = std::move(adam);
      }
      if (!whole_layout_) whole_layout_ = std::make_unique<models::ParameterLayout>(options.model, own.alignment());
      st.part = std::make_unique<models::StagePart>(options.model, shard, st.span, *whole_layout_, own);
      if (st.part->shared_ranges().empty()) st.other_end = Peer{};  // nothing tied (LLaMA's untied head)
      // The norm's ranges: the shard's, without the replicas other devices count.
      for (const auto& r : models::segments_outside(own.total(), st.part->replica_ranges())) {
        const std::size_t b = std::max(r.offset, st.shard.begin), e = std::min(r.offset + r.count, st.shard.end);
        if (b < e) st.counted.push_back({b, e - b, false});
      }
    }
  }

  // Direct channels: a neighbour on this process in the same context sends device to device.
  const std::size_t staging_bytes = static_cast<std::size_t>(microbatch) * static_cast<std::size_t>(options.model.max_seq_len()) *
                                    dims_ * device::dtype_size(options.step.fprop_dtype) /
                                    (sequence_parallel_ ? static_cast<std::size_t>(mesh.size(MeshAxis::kTensor)) : 1);
  int through_host = 0;
  for (Stage& st : stages_) {
    const device::Context& context = locals_[st.device].device->context();
    auto add_direct = [&](const Peer& from, Carries what) {
      if (!from.exists() || from.process != world.rank()) return;
      if (locals_[static_cast<std::size_t>(from.local)].device->context().get() != context.get()) {
        ++through_host;
        return;
      }
      DirectChannel& direct = direct_[channel(static_cast<int>(st.device), st.chunk, what)];
      for (int j = 0; j < pipeline.microbatches; ++j) {
        direct.staging.emplace_back(context, staging_bytes, fmt::format("pipeline message {}", j));
      }
      direct.filled.resize(direct.staging.size());
      st.staging_bytes += direct.staging.size() * staging_bytes;
    };
    add_direct(st.previous, Carries::kActivation);
    add_direct(st.next, Carries::kGradient);
  }
  if (!direct_.empty() || through_host > 0) {
    spdlog::info("pipeline messages between this process's devices: {} channel(s) device to device (one OpenCL "
                 "context), {} through host memory (ICI_ALGORITHM=host, or devices of different platforms)",
                 direct_.size(), through_host);
  }

  // FSDP groups: one (stage, tensor) index's devices, sharding each of their chunks' optimizers.
  if (sharded) {
    std::vector<int> group_of(static_cast<std::size_t>(local), -1);
    for (int d = 0; d < local; ++d) {
      if (group_of[static_cast<std::size_t>(d)] >= 0) continue;
      ShardGroup group;
      std::vector<device::Device*> devices_of_group;
      for (int e = 0; e < local; ++e) {
        if (mesh.ici_coord(e, MeshAxis::kStage) != mesh.ici_coord(d, MeshAxis::kStage) ||
            mesh.ici_coord(e, MeshAxis::kTensor) != mesh.ici_coord(d, MeshAxis::kTensor)) {
          continue;
        }
        // FsdpCommunicator's member k is fsdp index k % fsdp_ici: local order is row-major.
        if (mesh.ici_coord(e, MeshAxis::kFsdp) != static_cast<int>(group.members.size()) % fsdp_ici) {
          throw std::logic_error("PipelineStep: a stage's devices are not in [data, fsdp] order");
        }
        group_of[static_cast<std::size_t>(e)] = static_cast<int>(shard_groups_.size());
        group.members.push_back(static_cast<std::size_t>(e));
        devices_of_group.push_back(locals_[static_cast<std::size_t>(e)].device.get());
      }
      group.comm = std::make_unique<collectives::FsdpCommunicator>(devices_of_group, world, mesh);
      shard_groups_.push_back(std::move(group));
    }
  }

  // Data groups: the replicas of one chunk of one stage, averaging its gradients.
  averager_of_.assign(stages_.size(), -1);
  if (!sharded && mesh.size(MeshAxis::kData) > 1) {
    const std::vector<int> data_processes = mesh.dcn_processes(world.rank(), MeshAxis::kData);
    for (std::size_t i = 0; i < stages_.size(); ++i) {
      if (averager_of_[i] >= 0) continue;
      std::vector<device::Device*> replicas;
      for (int id : mesh.ici_group(mesh.device_id(world.rank(), static_cast<int>(stages_[i].device)), MeshAxis::kData)) {
        const auto r = static_cast<std::size_t>(mesh.local_index_of(id));
        replicas.push_back(locals_[r].device.get());
        averager_of_[r * static_cast<std::size_t>(repeat_) + static_cast<std::size_t>(stages_[i].chunk)] =
            static_cast<int>(averagers_.size());
      }
      averagers_.push_back(std::make_unique<collectives::GradientAverager>(replicas, world, data_processes));
    }
  }
}

models::Model& PipelineStep::slot(Stage& st, int microbatch) {
  const int k = microbatch % static_cast<int>(st.more_slots.size() + 1);
  return k == 0 ? *st.first : *st.more_slots[static_cast<std::size_t>(k - 1)];
}

void PipelineStep::trace_transfer(Stage& st, const char* direction, Carries what, int microbatch, device::Event event) {
  if (!tracing_) return;
  static constexpr const char* kWhat[kCarries] = {"activation", "gradient", "tied gradient"};
  st.transfers.emplace_back(fmt::format("pipeline {} {} (stage {}, microbatch {})", kWhat[static_cast<int>(what)],
                                        direction, st.span.stage, microbatch),
                            std::move(event));
}

std::size_t PipelineStep::message_bytes(const inputs::Batch& rows, device::DType dtype) const {
  std::size_t n = static_cast<std::size_t>(rows.batch) * static_cast<std::size_t>(rows.seq_len);
  if (sequence_parallel_) n /= static_cast<std::size_t>(tensors_->size());  // the rank's rows of the stream
  return n * dims_ * device::dtype_size(dtype);
}

PipelineStep::DirectChannel* PipelineStep::direct_channel(int channel, int microbatch) {
  const auto it = direct_.find(channel);
  // Both ends ask alike, so a microbatch beyond the staging buffers goes through host memory on both.
  if (it == direct_.end() || static_cast<std::size_t>(microbatch) >= it->second.staging.size()) return nullptr;
  return &it->second;
}

void PipelineStep::send(Stage& st, const Peer& to, Carries what, const models::ActBuffer& x, const inputs::Batch& rows,
                        int microbatch) {
  const std::size_t bytes = message_bytes(rows, x.dtype());
  const int to_channel = channel(to.local, to.chunk, what);
  if (DirectChannel* direct = direct_channel(to_channel, microbatch)) {
    device::Queue& queue = locals_[st.device].device->queue();
    const auto j = static_cast<std::size_t>(microbatch);
    device::Event copied = queue.copy(x.storage(), 0, direct->staging[j], 0, bytes);
    queue.flush();  // the receiver's queue waits on it
    trace_transfer(st, "send", what, microbatch, copied);
    direct->filled[j] = std::move(copied);  // before the mailbox message, which orders it for the receiver
    messages_->send(to.process, to_channel, {});
    return;
  }
  collectives::StageMessages::Message message(bytes);
  // Blocks until the stage's pass has got there.
  trace_transfer(st, "send", what, microbatch,
                 locals_[st.device].device->queue().read(x.storage(), std::span<std::byte>(message)));
  messages_->send(to.process, to_channel, std::move(message));
}

void PipelineStep::receive(Stage& st, const Peer& from, Carries what, models::ActBuffer& into, const inputs::Batch& rows,
                           int microbatch) {
  const std::size_t bytes = message_bytes(rows, into.dtype());
  const int own_channel = channel(static_cast<int>(st.device), st.chunk, what);
  collectives::StageMessages::Message message = messages_->receive(from.process, own_channel);
  if (DirectChannel* direct = direct_channel(own_channel, microbatch)) {
    if (!message.empty()) throw std::logic_error("pipeline: bytes on a device-to-device channel");
    const auto j = static_cast<std::size_t>(microbatch);
    device::Queue& queue = locals_[st.device].device->queue();
    trace_transfer(st, "receive", what, microbatch,
                   queue.copy(direct->staging[j], 0, into.storage(), 0, bytes,
                              std::span<const device::Event>(&direct->filled[j], 1)));
    return;
  }
  if (message.size() != bytes) {
    throw DeviceError(fmt::format("pipeline stage {} received {} bytes from process {} where it expected {} (the "
                                  "stages disagree on the batch)",
                                  st.span.stage, message.size(), from.process, bytes));
  }
  // Written without blocking, in queue order; the message lives until the step has finished.
  trace_transfer(st, "receive", what, microbatch,
                 locals_[st.device].device->queue().write(into.storage(), std::span<const std::byte>(message), false));
  st.held.push_back(std::move(message));
}

models::LossStats PipelineStep::run_device(std::size_t d, const std::vector<inputs::Batch>& micro, double mean_over,
                                           bool training) {
  using Kind = models::PipelineOp::Kind;
  const config::PipelineConfig& pipeline = options_.step.pipeline;
  const int m = static_cast<int>(micro.size()), s = stage(d, 0).span.stage;
  std::vector<models::PipelineOp> ops;
  if (training) {
    ops = models::stage_ops(pipeline.schedule, pipeline.stages, s, m, repeat_);
  } else {
    for (int c = 0; c < repeat_; ++c) {
      for (int j = 0; j < m; ++j) ops.push_back({Kind::kForward, j, c});
    }
  }
  models::LossStats stats;
  // passes[c][j]: microbatch j's pass through chunk c, from its forward to its backward.
  std::vector<std::vector<std::optional<models::Model::Pass>>> passes(
      static_cast<std::size_t>(repeat_), std::vector<std::optional<models::Model::Pass>>(static_cast<std::size_t>(m)));
  for (const models::PipelineOp& op : ops) {
    Stage& st = stage(d, op.chunk);
    const auto j = static_cast<std::size_t>(op.microbatch);
    models::Model& model = slot(st, op.microbatch);
    std::optional<models::Model::Pass>& held = passes[static_cast<std::size_t>(op.chunk)][j];
    const int blocks = model.layout().num_blocks();
    if (op.kind == Kind::kForward) {
      if (!st.span.first_stage()) receive(st, st.previous, Carries::kActivation, model.stage_input(), micro[j], op.microbatch);
      models::Model::Pass& pass = held.emplace(model.begin_pass(micro[j], training && j == 0));
      pass.mean_over = mean_over;
      for (int b = 0; b < blocks; ++b) model.forward_block(pass, b);
      if (st.span.last_stage()) {
        stats += model.forward_loss(pass);
      } else {
        send(st, st.next, Carries::kActivation, *pass.x, micro[j], op.microbatch);
      }
    } else {
      models::Model::Pass& pass = *held;
      if (!st.span.last_stage()) {
        receive(st, st.next, Carries::kGradient, model.stage_output_gradient(), micro[j], op.microbatch);
      }
      model.begin_backward(pass);
      for (int b = blocks - 1; b >= 0; --b) model.backward_block(pass, b);
      model.finish_backward(pass);
      if (!st.span.first_stage()) send(st, st.previous, Carries::kGradient, *pass.x, micro[j], op.microbatch);
      held.reset();
    }
  }
  locals_[d].device->queue().finish();  // the received messages have been written
  for (int c = 0; c < repeat_; ++c) stage(d, c).held.clear();
  return stats;
}

void PipelineStep::run_stages(const std::vector<std::size_t>& devices, const std::function<void(std::size_t)>& work) {
  run_on_threads(devices.size(), [&](std::size_t i) { work(devices[i]); }, [&](std::exception_ptr error) {
    messages_->abort(error);
    if (tensors_) tensors_->abort(error);
  });
}

void PipelineStep::sum_tied_gradients() {
  // Every end sends first (sends never block), then each adds the other end's copy: a + b, the same
  // bits on both ends.
  auto read_tied = [&](Stage& st) {  // the shared ranges only (tensors start aligned: views)
    std::size_t n = 0;
    for (const auto& r : st.part->shared_ranges()) n += r.count;
    std::vector<float> values(n);
    std::size_t at = 0;
    for (const auto& r : st.part->shared_ranges()) {
      locals_[st.device].device->queue().read(st.first->gradient_buffer().view(r.offset, r.count, "tied gradient"),
                                              std::span<float>(values).subspan(at, r.count));
      at += r.count;
    }
    return values;
  };
  std::vector<std::vector<float>> own(stages_.size());
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    Stage& st = stages_[i];
    if (!st.other_end.exists()) continue;
    own[i] = read_tied(st);
    collectives::StageMessages::Message message(own[i].size() * sizeof(float));
    std::memcpy(message.data(), own[i].data(), message.size());
    messages_->send(st.other_end.process, channel(st.other_end.local, st.other_end.chunk, Carries::kTiedGradient),
                    std::move(message));
  }
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    Stage& st = stages_[i];
    if (!st.other_end.exists()) continue;
    const collectives::StageMessages::Message message = messages_->receive(
        st.other_end.process, channel(static_cast<int>(st.device), st.chunk, Carries::kTiedGradient));
    if (message.size() != own[i].size() * sizeof(float)) throw DeviceError("pipeline ends disagree on the tied tensors' size");
    std::vector<float> other(own[i].size());
    std::memcpy(other.data(), message.data(), message.size());
    std::size_t at = 0;
    for (const auto& r : st.part->shared_ranges()) {
      std::vector<float> sum(r.count);
      for (std::size_t k = 0; k < r.count; ++k) sum[k] = own[i][at + k] + other[at + k];
      locals_[st.device].device->queue().write(st.first->gradient_buffer().view(r.offset, r.count, "tied gradient"),
                                               std::span<const float>(sum));
      at += r.count;
    }
  }
}

device::Event PipelineStep::queue_marker(std::size_t device) {
  device::Queue& queue = locals_[device].device->queue();
  device::Event e = queue.marker();
  queue.flush();  // the communication side waits on it
  return e;
}

std::vector<collectives::Pending> PipelineStep::over_shard_groups(const ShardCollective& issue) {
  std::vector<collectives::Pending> issued;
  for (ShardGroup& group : shard_groups_) {
    for (int c = 0; c < repeat_; ++c) {
      std::vector<Stage*> members;
      for (std::size_t d : group.members) members.push_back(&stage(d, c));
      issued.push_back(issue(*group.comm, members));
    }
  }
  return issued;
}

std::pair<collectives::IciCommunicator::Buffers, std::vector<device::Event>> PipelineStep::buffers_now(
    const std::vector<Stage*>& members, const std::function<models::FloatBuffer(Stage&)>& buffer) {
  std::pair<collectives::IciCommunicator::Buffers, std::vector<device::Event>> out;
  for (Stage* st : members) {
    out.first.push_back(buffer(*st));
    out.second.push_back(queue_marker(st->device));
  }
  return out;
}

void PipelineStep::reduce_gradients() {
  const float scale = 1.0f / static_cast<float>(mesh().size(MeshAxis::kData) * mesh().size(MeshAxis::kFsdp));
  std::vector<collectives::Pending> reductions =
      over_shard_groups([&](collectives::FsdpCommunicator& comm, const std::vector<Stage*>& members) {
        const auto [grads, backward_done] = buffers_now(members, [](Stage& st) { return st.first->gradient_buffer(); });
        return comm.reduce_scatter(members.front()->split, grads, grads, scale, backward_done,
                                   fmt::format("reduce-scatter stage {}", members.front()->span.stage));
      });
  for (collectives::Pending& p : average_data_groups(averagers_, averager_of_, [&](std::size_t i) {
         Stage& st = stages_[i];
         return MemberGradients{st.first->gradient_buffer(), st.first->layout().total(), queue_marker(st.device)};
       })) {
    reductions.push_back(std::move(p));
  }
  for (const collectives::Pending& p : reductions) p.wait();
}

void PipelineStep::gather_parameters() {
  const std::vector<collectives::Pending> gathers =
      over_shard_groups([&](collectives::FsdpCommunicator& comm, const std::vector<Stage*>& members) {
        const auto [params, updated] = buffers_now(members, [](Stage& st) { return st.first->parameter_buffer(); });
        return comm.gather(members.front()->split, params, params, updated,
                           fmt::format("all-gather stage {}", members.front()->span.stage));
      });
  for (const collectives::Pending& p : gathers) p.wait();
}

models::LossStats PipelineStep::run_step(const inputs::Batch& batch, double lr, double loss_scale,
                                         models::OptimizerStepStats& opt) {
  const int replica_batch = options_.step.replica_batch, m = options_.step.pipeline.microbatches;
  const int size = replica_batch / m;
  // train_step set the scale on each device's first instance; the others run backwards too.
  for (Stage& st : stages_) {
    st.first->set_loss_scale(static_cast<float>(loss_scale));
    for (auto& more : st.more_slots) more->set_loss_scale(static_cast<float>(loss_scale));
  }
  std::vector<models::LossStats> stats(locals_.size());
  std::vector<std::size_t> all(locals_.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  run_stages(all, [&](std::size_t d) {
    const inputs::Batch rows = device_rows(batch, stage(d, 0).replica, replica_batch);
    std::vector<inputs::Batch> micro;
    for (int j = 0; j < m; ++j) micro.push_back(rows.sequences(j * size, size));
    // Every microbatch's loss is scaled by the whole replica batch's weight: the gradients are
    // those of its mean loss.
    stats[d] = run_device(d, micro, rows.weight_sum(), true);
  });
  sum_tied_gradients();
  reduce_gradients();

  std::vector<double> squares = {0.0};
  for (Stage& st : stages_) {
    if (st.first_replica) squares[0] += st.adam->sum_squares(st.first->gradient_buffer(), st.counted);
  }
  if (world_.size() > 1) world_.all_reduce_sum(squares);
  for (Stage& st : stages_) {
    opt = st.adam->step_with_norm(st.first->parameter_buffer(), st.first->gradient_buffer(), lr, std::sqrt(squares[0]),
                                  loss_scale);
  }
  gather_parameters();
  return losses_of(stats);
}

models::LossStats PipelineStep::losses_of(const std::vector<models::LossStats>& per_device) const {
  // Only last stages compute losses, and every member of a tensor group its rows': count rank 0's.
  models::LossStats total;
  for (std::size_t d = 0; d < per_device.size(); ++d) {
    if (!tensors_ || tensors_->place(d).tensor_rank == 0) total += per_device[d];
  }
  return total;
}

models::LossStats PipelineStep::evaluate(const inputs::Batch& batch) {
  std::vector<std::size_t> first_pipeline;
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    if (stage(d, 0).replica == 0) first_pipeline.push_back(d);
  }
  const int size = static_cast<int>(model().max_batch());
  std::vector<inputs::Batch> micro;
  for (int first = 0; first < batch.batch; first += size) micro.push_back(batch.sequences(first, std::min(size, batch.batch - first)));
  std::vector<models::LossStats> stats(locals_.size());
  run_stages(first_pipeline, [&](std::size_t d) { stats[d] = run_device(d, micro, 0.0, false); });
  return losses_of(stats);
}

bool PipelineStep::evaluation_is_collective() const { return mesh().dcn_size(MeshAxis::kStage) > 1; }

const models::Model& PipelineStep::evaluation_model() const {
  for (const Stage& st : stages_) {  // every process refuses alike when the stages span processes
    if (st.replica == 0 && st.span.last_stage() && mesh().dcn_size(MeshAxis::kStage) == 1) return *st.first;
  }
  throw ConfigError("per-position scores (zero-shot evaluation) need the last pipeline stage in every process: put "
                    "the stage axis in ICI_MESH_SHAPE, or evaluate with a mesh without stages");
}

std::vector<float> PipelineStep::assemble(Holds holds, const std::function<const models::FloatBuffer&(Stage&)>& buffer) {
  std::vector<float> whole(whole_layout_->total(), 0.0f), image;
  for (Stage& st : stages_) {
    if (!st.first_replica) continue;
    image.assign(st.first->layout().total(), 0.0f);
    const std::size_t at = holds == Holds::kChunk ? st.shard.begin : 0;
    locals_[st.device].device->queue().read(buffer(st).view(at, st.shard.size(), "image shard"),
                                            std::span<float>(image).subspan(st.shard.begin, st.shard.size()));
    st.part->add_to(image, whole);
  }
  if (job_) job_->all_reduce(whole).wait();  // each element placed by one device of the job
  return whole;
}

void PipelineStep::load_parameters(std::span<const float> flat) {
  for (Stage& st : stages_) st.first->set_parameters(st.part->extract(flat));
}

std::vector<float> PipelineStep::parameters() {
  return assemble(Holds::kChunk, [](Stage& st) -> const models::FloatBuffer& { return st.first->parameter_buffer(); });
}

std::vector<StepProgram::StateSlice> PipelineStep::state_slices() {
  auto p = parameters();
  auto m = assemble(Holds::kShard, [](Stage& st) -> const models::FloatBuffer& { return st.adam->first_moment(); });
  auto v = assemble(Holds::kShard, [](Stage& st) -> const models::FloatBuffer& { return st.adam->second_moment(); });
  if (world_.rank() != 0) return {};
  return {StateSlice::of(0, std::move(p), std::move(m), std::move(v))};
}

StepProgram::OptimizerCounts PipelineStep::optimizer_counts() const {
  return {locals_.front().adam->steps_applied(), locals_.front().adam->steps_skipped()};
}

void PipelineStep::load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                              OptimizerCounts counts) {
  load_parameters(params);
  for (Stage& st : stages_) {
    auto shard_of = [&](std::span<const float> whole) {
      const std::vector<float> chunk = st.part->extract(whole);
      return std::vector<float>(chunk.begin() + static_cast<std::ptrdiff_t>(st.shard.begin),
                                chunk.begin() + static_cast<std::ptrdiff_t>(st.shard.end));
    };
    st.adam->load_state(shard_of(m), shard_of(v), counts.applied, counts.skipped);
  }
}

// The device holding the most: the sum over its chunks.
std::size_t PipelineStep::per_device_most(const std::function<std::size_t(const Stage&)>& bytes) const {
  std::vector<std::size_t> per_device(locals_.size(), 0);
  for (const Stage& st : stages_) per_device[st.device] += bytes(st);
  return *std::max_element(per_device.begin(), per_device.end());
}

std::size_t PipelineStep::state_bytes_per_device() const {
  return per_device_most(
      [](const Stage& st) {  // parameters and gradients whole, Adam's moments over the shard
        return (2 * st.first->layout().total() + 2 * st.shard.size()) * sizeof(float) + st.first->weight_copy_bytes();
      });
}

std::size_t PipelineStep::activation_bytes(const Stage& st) const {
  return (st.more_slots.size() + 1) * st.first->activation_bytes() + st.staging_bytes;
}

std::size_t PipelineStep::activation_bytes_per_device() const {
  return per_device_most([this](const Stage& st) { return activation_bytes(st); });
}

std::size_t PipelineStep::most_activations_device() const {
  std::vector<std::size_t> per_device(locals_.size(), 0);
  for (const Stage& st : stages_) per_device[st.device] += activation_bytes(st);
  return static_cast<std::size_t>(std::max_element(per_device.begin(), per_device.end()) - per_device.begin());
}

// Per chunk (a chunk's instance holds only its blocks), of the device whose activations are reported:
// the most held anywhere (1F1B: stage 0's) is not that device's when a later stage's instances are
// larger (the last stage's LM head), and a count beside another device's bytes misdescribes both.
int PipelineStep::microbatches_held() const {
  const std::size_t device = most_activations_device();
  std::size_t most = 0;
  for (const Stage& st : stages_) {
    if (st.device == device) most = std::max(most, st.more_slots.size() + 1);
  }
  return static_cast<int>(most);
}

void PipelineStep::set_tracing(bool on) {
  tracing_ = on;
  for (Local& l : locals_) l.device->queue().set_tracing(on);
  if (tensors_) tensors_->set_tracing(on);
  for (auto& a : averagers_) a->ici().set_tracing(on);
}

std::vector<TraceEvent> PipelineStep::take_trace(const std::vector<std::int64_t>& offsets, long step) {
  tracing_ = false;
  std::vector<TraceEvent> events = collect_trace(offsets, step, nullptr);
  for (Stage& st : stages_) {
    for (auto& [name, event] : st.transfers) {
      event.wait();
      events.push_back({fmt::format("{} (step {})", name, step), kCommunicationTrack,
                        static_cast<std::int64_t>(event.profile_ns(CL_PROFILING_COMMAND_START)) + offsets[st.device],
                        static_cast<std::int64_t>(event.profile_ns(CL_PROFILING_COMMAND_END)) + offsets[st.device]});
    }
    st.transfers.clear();
  }
  if (tensors_) tensors_->append_trace(events, step);
  for (auto& a : averagers_) {
    a->ici().set_tracing(false);
    for (const auto& c : a->ici().take_trace()) {
      events.push_back({fmt::format("gradient {} (step {})", c.name, step), kCommunicationTrack, c.start_ns, c.end_ns});
    }
  }
  return events;
}

}  // namespace paxocl::scheduler
