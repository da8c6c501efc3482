#include "scheduler/fsdp_step.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::scheduler {

using device::MeshAxis;

using collectives::IciCommunicator;
using collectives::Pending;

using ParameterLayoutUnit = models::ParameterLayout::Unit;

namespace {
std::vector<models::AdamOptimizer::Segment> adam_segments(const std::vector<models::ShardPlan::Segment>& segments) {
  std::vector<models::AdamOptimizer::Segment> out;
  for (const auto& s : segments) out.push_back({s.offset, s.count, s.decay});
  return out;
}

collectives::UnitSplit unit_split(const models::ShardPlan& plan, int block, int process) {
  collectives::UnitSplit split;
  split.size = plan.unit(block).size;
  for (int p = 0; p < plan.dcn_parts(); ++p) split.chunks.push_back({plan.chunk(block, p).begin, plan.chunk(block, p).end});
  for (int d = 0; d < plan.ici_parts(); ++d) {
    const models::ShardPlan::Piece s = plan.shard(block, process, d);
    split.shards.push_back({s.begin, s.end});
    split.shard_offsets.push_back(plan.shard_offset(block, process, d));
  }
  return split;
}

std::string unit_name(int block) { return block < 0 ? "wte/wpe/lnf" : fmt::format("h{}", block); }

// Tensor axis: the runs of a device's shard buffer that its norm counts: everything but the
// replicas of tensors another tensor rank owns (a mask of the lane's parts, sharded as the values are).
std::vector<models::AdamOptimizer::Segment> counted_shard_segments(const models::ShardPlan& plan,
                                                                   const models::TensorSplit& split, int process,
                                                                   int fsdp_index, std::size_t parts_total) {
  // -1 marks replicas; alignment gaps (0 after extract) hold zero gradients and may be counted, so
  // the runs stay few.
  std::vector<float> mask(parts_total, 1.0f);
  for (const auto& r : split.replica_ranges()) std::fill_n(mask.begin() + static_cast<std::ptrdiff_t>(r.offset), r.count, -1.0f);
  const std::vector<float> sharded = plan.extract(mask, process, fsdp_index);
  std::vector<models::AdamOptimizer::Segment> out;
  for (std::size_t i = 0; i < sharded.size(); ++i) {
    if (sharded[i] < 0.0f) continue;
    if (!out.empty() && out.back().offset + out.back().count == i) {
      ++out.back().count;
    } else {
      out.push_back({i, 1, false});
    }
  }
  if (out.empty()) out.push_back({0, 0, false});  // all replicas: counts nothing (empty would mean all)
  return out;
}
}  // namespace

FsdpStep::FsdpStep(const std::vector<device::DeviceInfo>& devices, device::ProgramCache& cache,
                   const collectives::ProcessWorld& world, const StepOptions& options)
    : StepProgram(options), options_(options), world_(world), process_(options.mesh.dcn_coord(world.rank(), MeshAxis::kFsdp)) {
  const device::Mesh& mesh = options.mesh;
  if (options.step.fsdp_prefetch_depth < 0) {
    throw ConfigError(fmt::format("FSDP_PREFETCH_DEPTH={}: use 0 (gather each block just in time) or more",
                                  options.step.fsdp_prefetch_depth));
  }
  slots_ = 1 + (options.step.overlap ? std::min(options.step.fsdp_prefetch_depth, options.model.num_blocks() - 1) : 0);
  const int local = mesh.devices_per_process(), tensor_lanes = mesh.ici_size(MeshAxis::kTensor);
  open_local_devices(devices, local, cache, options);
  if (mesh.size(MeshAxis::kTensor) > 1) {
    models::validate_tensor_split(options.model, mesh.size(MeshAxis::kTensor));
    tensors_ = std::make_unique<TensorGroups>(mesh, world, StepProgram::devices(), runtimes());
  }
  lanes_.resize(static_cast<std::size_t>(tensor_lanes));
  for (int d = 0; d < local; ++d) {
    Local& l = locals_[static_cast<std::size_t>(d)];
    const models::TensorShard shard = tensors_ ? tensors_->shard(static_cast<std::size_t>(d)) : models::TensorShard{};
    l.model = build_model(*l.runtime, options, slots_, shard);
    if (tensors_) tensors_->attach(static_cast<std::size_t>(d), *l.model);
    Lane& lane = lanes_[static_cast<std::size_t>(mesh.ici_coord(d, MeshAxis::kTensor))];
    lane.devices.push_back(static_cast<std::size_t>(d));
    lane.tensor_rank = shard.rank;
    fsdp_index_.push_back(mesh.ici_coord(d, MeshAxis::kFsdp));
  }
  for (Lane& lane : lanes_) {
    const models::ParameterLayout& parts = locals_[lane.devices.front()].model->layout();
    lane.plan = std::make_unique<models::ShardPlan>(parts, mesh.dcn_size(MeshAxis::kFsdp), mesh.ici_size(MeshAxis::kFsdp));
    for (int b = -1; b < options.model.num_blocks(); ++b) lane.splits.push_back(unit_split(*lane.plan, b, process_));
    std::vector<device::Device*> members;
    for (std::size_t d : lane.devices) members.push_back(locals_[d].device.get());
    lane.comm = std::make_unique<collectives::FsdpCommunicator>(members, world, mesh);
    if (tensors_) {
      if (!global_layout_) global_layout_ = std::make_unique<models::ParameterLayout>(options.model, parts.alignment());
      lane.tensor_split = std::make_unique<models::TensorSplit>(
          options.model, models::TensorShard{lane.tensor_rank, tensors_->size()}, *global_layout_, parts);
    }
  }
  param_shards_.resize(static_cast<std::size_t>(local));
  grad_shards_.resize(static_cast<std::size_t>(local));
  counted_.resize(static_cast<std::size_t>(local));
  for (const Lane& lane : lanes_) {
    for (std::size_t d : lane.devices) {
      Local& l = locals_[d];
      const int f = fsdp_index_[d];
      const std::size_t floats = lane.plan->shard_floats(process_, f);
      param_shards_[d] = models::make_buffer(*l.device, floats, "parameter shard");
      grad_shards_[d] = models::make_buffer(*l.device, floats, "gradient shard");
      l.runtime->kernels().elementwise.fill(param_shards_[d], 0.0f);  // alignment gaps stay zero
      l.runtime->kernels().elementwise.fill(grad_shards_[d], 0.0f);
      if (options.step.sub_batches > 1) {
        grad_sums_.resize(static_cast<std::size_t>(local));
        grad_sums_[d] = models::make_buffer(*l.device, floats, "gradient shard sum");
      }
      l.adam = std::make_unique<models::AdamOptimizer>(*l.runtime, floats,
                                                       adam_segments(lane.plan->decay_segments(process_, f)), options.adam);
      if (lane.tensor_split) {
        counted_[d] = counted_shard_segments(*lane.plan, *lane.tensor_split, process_, f, l.model->layout().total());
      }
    }
  }
}

std::size_t FsdpStep::state_bytes_per_device() const {
  const std::size_t sums = grad_sums_.empty() ? 0 : grad_sums_.front().count();
  return (4 * param_shards_.front().count() + sums + 2 * model().parameter_buffer().count()) * sizeof(float) +
         model().weight_copy_bytes();
}

void FsdpStep::load_parameters(std::span<const float> flat) {
  for (const Lane& lane : lanes_) {
    const std::vector<float> parts = lane.tensor_split ? lane.tensor_split->extract(flat) : std::vector<float>();
    const std::span<const float> image = lane.tensor_split ? std::span<const float>(parts) : flat;
    for (std::size_t d : lane.devices) {
      const std::vector<float> shards = lane.plan->extract(image, process_, fsdp_index_[d]);
      locals_[d].device->queue().write(param_shards_[d], std::span<const float>(shards));
    }
  }
}

std::vector<float> FsdpStep::assemble(const std::function<const models::FloatBuffer&(std::size_t)>& shards) {
  std::vector<float> whole(global_layout_->total(), 0.0f), mine;
  for (const Lane& lane : lanes_) {
    std::vector<float> parts(lane.plan->units().empty() ? 0 : locals_[lane.devices.front()].model->layout().total(), 0.0f);
    for (std::size_t d : lane.devices) {
      if (!tensors_->place(d).first_replica) continue;  // a data replica of another device's shard
      mine.resize(shards(d).count());
      locals_[d].device->queue().read(shards(d), std::span<float>(mine));
      lane.plan->place(mine, process_, fsdp_index_[d], parts);
    }
    std::vector<float> lane_whole(whole.size(), 0.0f);
    lane.tensor_split->place(parts, lane_whole);  // this lane's owned elements (zeros where shards are elsewhere)
    for (std::size_t i = 0; i < whole.size(); ++i) whole[i] += lane_whole[i];
  }
  tensors_->sum_over_job(whole);  // every element nonzero on the one device that owns its shard
  return whole;
}

std::vector<StepProgram::StateSlice> FsdpStep::state_slices() {
  if (tensors_) {  // collective: every process assembles, process 0 saves
    auto p = assemble([&](std::size_t d) -> const models::FloatBuffer& { return param_shards_[d]; });
    auto m = assemble([&](std::size_t d) -> const models::FloatBuffer& { return locals_[d].adam->first_moment(); });
    auto v = assemble([&](std::size_t d) -> const models::FloatBuffer& { return locals_[d].adam->second_moment(); });
    if (world_.rank() != 0) return {};
    return {StateSlice::of(0, std::move(p), std::move(m), std::move(v))};
  }
  if (options_.mesh.dcn_coord(world_.rank(), MeshAxis::kData) != 0) return {};  // a data replica of another process's shards
  const models::ShardPlan& plan = *lanes_.front().plan;
  std::vector<StateSlice> slices;
  for (int f = 0; f < options_.mesh.ici_size(MeshAxis::kFsdp); ++f) {
    Local& l = locals_[static_cast<std::size_t>(f)];
    const std::size_t floats = param_shards_[static_cast<std::size_t>(f)].count();
    const auto staged = snapshot_staging_.copy(static_cast<std::size_t>(f), *l.device, floats,
                                               param_shards_[static_cast<std::size_t>(f)], l.adam->first_moment(),
                                               l.adam->second_moment());
    for (const ParameterLayoutUnit& u : plan.units()) {
      const models::ShardPlan::Piece s = plan.shard(u.block, process_, f);
      const std::size_t base = plan.shard_offset(u.block, process_, f);
      for (std::size_t i = 0; i < u.ranges.size(); ++i) {  // the shard's overlap with each packed range
        const std::size_t b = std::max(s.begin, u.packed_offsets[i]);
        const std::size_t e = std::min(s.end, u.packed_offsets[i] + u.ranges[i].count);
        if (b >= e) continue;
        slices.push_back(SnapshotStaging::slice(staged, base + (b - s.begin), e - b, u.ranges[i].offset + (b - u.packed_offsets[i])));
      }
    }
  }
  return slices;
}

StepProgram::OptimizerCounts FsdpStep::optimizer_counts() const {
  return {locals_.front().adam->steps_applied(), locals_.front().adam->steps_skipped()};
}

void FsdpStep::load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                          OptimizerCounts counts) {
  load_parameters(params);
  for (const Lane& lane : lanes_) {
    auto parts = [&](std::span<const float> whole) {
      return lane.tensor_split ? lane.tensor_split->extract(whole) : std::vector<float>(whole.begin(), whole.end());
    };
    const std::vector<float> lm = parts(m), lv = parts(v);
    for (std::size_t d : lane.devices) {
      locals_[d].adam->load_state(lane.plan->extract(lm, process_, fsdp_index_[d]),
                                  lane.plan->extract(lv, process_, fsdp_index_[d]), counts.applied, counts.skipped);
    }
  }
}

std::vector<device::Event> FsdpStep::compute_markers(const Lane& lane, std::size_t devices) {
  std::vector<device::Event> m;
  for (std::size_t k = 0; k < devices; ++k) {
    device::Queue& q = locals_[lane.devices[k]].device->queue();
    m.push_back(q.marker());
    q.flush();
  }
  return m;
}

std::vector<float> FsdpStep::parameters() {
  if (tensors_) return assemble([&](std::size_t d) -> const models::FloatBuffer& { return param_shards_[d]; });
  Lane& lane = lanes_.front();
  const std::vector<device::Event> updated = compute_markers(lane, lane.devices.size());
  std::vector<float> flat(layout().total(), 0.0f), unit;
  for (int b = -1; b < options_.model.num_blocks(); ++b) {
    unit.assign(lane.plan->unit(b).size, 0.0f);
    lane.comm->gather(lane.splits[static_cast<std::size_t>(b + 1)], param_shards_,
                      IciCommunicator::Buffers(lane.devices.size()), updated, "all-gather " + unit_name(b) + " (to host)",
                      unit)
        .wait();
    lane.plan->unpack(b, unit, flat);
  }
  return flat;
}

Pending FsdpStep::gather(Lane& lane, int block, std::size_t devices, IciCommunicator::Events wait_for) {
  IciCommunicator::Buffers slots(lane.devices.size()), shards;
  for (std::size_t k = 0; k < devices; ++k) slots[k] = locals_[lane.devices[k]].model->unit_parameters(block);
  for (std::size_t d : lane.devices) shards.push_back(param_shards_[d]);
  Pending p = lane.comm->gather(lane.splits[static_cast<std::size_t>(block + 1)], std::move(shards), std::move(slots),
                                std::move(wait_for), "all-gather " + unit_name(block));
  if (!options_.step.overlap) p.wait();
  return p;
}

models::LossStats FsdpStep::run_pass(Lane& lane, const std::vector<inputs::Batch>& rows, bool train,
                                     const std::vector<double>& mean_over) {
  const int L = options_.model.num_blocks();
  const std::size_t n = rows.size();
  // Lane member k is local device lane.devices[k]; the loops below run over k.
  auto local = [&](std::size_t k) -> Local& { return locals_[lane.devices[k]]; };
  auto wait_on_device = [&](std::size_t k, const Pending& p) {
    const device::Event e = p.device_event(local(k).device->context());
    local(k).device->queue().wait_for(std::span<const device::Event>(&e, 1));
  };
  auto markers = [&] { return compute_markers(lane, n); };

  // Gathers read the parameter shards on the communication queues: after the last Adam update.
  const std::vector<device::Event> updated = compute_markers(lane, lane.devices.size());
  // The unit outside the blocks serves the embedding, the LM head and their backward.
  const Pending rest = gather(lane, -1, n, updated);
  std::vector<models::Model::Pass> passes;
  for (std::size_t d = 0; d < n; ++d) {
    wait_on_device(d, rest);
    passes.push_back(local(d).model->begin_pass(rows[d], train));
    if (!mean_over.empty()) passes.back().mean_over = mean_over[d];
  }

  // Uses of the blocks in order: forward 0..L-1, then (training) backward L-1..0.
  struct Use {
    int block;
    bool backward;
  };
  std::vector<Use> uses;
  for (int l = 0; l < L; ++l) uses.push_back({l, false});
  if (train) {
    for (int l = L - 1; l >= 0; --l) uses.push_back({l, true});
  }
  const int S = slots_;
  std::vector<int> slot_block(static_cast<std::size_t>(S), -1), slot_last_use(static_cast<std::size_t>(S), -1);
  std::vector<std::vector<device::Event>> slot_free(static_cast<std::size_t>(S), updated);  // after the slot's last use
  std::vector<std::optional<Pending>> gathered(uses.size()), slot_reduction(static_cast<std::size_t>(S));
  std::vector<Pending> reductions;
  IciCommunicator::Buffers lane_grad_shards;
  for (std::size_t d : lane.devices) lane_grad_shards.push_back(grad_shards_[d]);
  std::size_t issued = 0;  // uses whose gather (if any) has been issued
  const std::size_t ahead = options_.step.overlap ? static_cast<std::size_t>(S - 1) : 0;
  // The mean over the model's replicas: every device of the job holding this tensor rank's parts.
  const float scale = 1.0f / static_cast<float>(options_.mesh.num_devices() / options_.mesh.size(MeshAxis::kTensor));
  models::LossStats loss;

  for (std::size_t k = 0; k < uses.size(); ++k) {
    for (; issued < uses.size() && issued <= k + ahead; ++issued) {
      const int b = uses[issued].block;
      const auto s = static_cast<std::size_t>(b % S);
      if (slot_block[s] == b) continue;  // still resident from the forward
      if (slot_last_use[s] >= static_cast<int>(k)) throw std::logic_error("FSDP schedule: a slot is evicted before its last use");
      gathered[issued] = gather(lane, b, n, slot_free[s]);
      slot_block[s] = b;
    }
    const Use use = uses[k];
    const auto s = static_cast<std::size_t>(use.block % S);
    if (use.backward && k == static_cast<std::size_t>(L)) {  // the turn: loss, then the head's backward
      for (std::size_t d = 0; d < n; ++d) {
        loss += local(d).model->forward_loss(passes[d]);
        local(d).model->begin_backward(passes[d]);
      }
    }
    for (std::size_t d = 0; d < n; ++d) {
      models::Model& model = *local(d).model;
      if (gathered[k]) wait_on_device(d, *gathered[k]);
      if (!use.backward) {
        model.forward_block(passes[d], use.block);
        continue;
      }
      if (slot_reduction[s]) {  // the slot's gradient was the previous block's: reduced, then cleared
        wait_on_device(d, *slot_reduction[s]);
        models::FloatBuffer g = model.unit_gradients(use.block);
        local(d).runtime->kernels().elementwise.fill(g, 0.0f);
      }
      model.backward_block(passes[d], use.block);
    }
    slot_free[s] = markers();
    slot_last_use[s] = static_cast<int>(k);
    if (use.backward) {
      IciCommunicator::Buffers grads;
      for (std::size_t d = 0; d < n; ++d) grads.push_back(local(d).model->unit_gradients(use.block));
      slot_reduction[s] = lane.comm->reduce_scatter(lane.splits[static_cast<std::size_t>(use.block + 1)],
                                                    std::move(grads), lane_grad_shards, scale, slot_free[s],
                                                    "reduce-scatter " + unit_name(use.block));
      if (!options_.step.overlap) slot_reduction[s]->wait();
      reductions.push_back(*slot_reduction[s]);
    }
  }
  if (!train) {
    for (std::size_t d = 0; d < n; ++d) loss += local(d).model->forward_loss(passes[d]);
    return loss;
  }
  for (std::size_t d = 0; d < n; ++d) local(d).model->finish_backward(passes[d]);
  IciCommunicator::Buffers grads;
  for (std::size_t d = 0; d < n; ++d) grads.push_back(local(d).model->unit_gradients(-1));
  reductions.push_back(lane.comm->reduce_scatter(lane.splits.front(), std::move(grads), lane_grad_shards, scale,
                                                 markers(), "reduce-scatter " + unit_name(-1)));
  for (const Pending& p : reductions) p.wait();
  return loss;
}

models::LossStats FsdpStep::run_lanes(const std::function<models::LossStats(Lane&)>& pass) {
  std::vector<models::LossStats> stats(lanes_.size());
  if (tensors_) {
    tensors_->run_threads(lanes_.size(), [&](std::size_t i) { stats[i] = pass(lanes_[i]); });
  } else {
    stats[0] = pass(lanes_[0]);
  }
  models::LossStats loss;  // every lane computed the same rows' loss: counted once, on tensor rank 0
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    if (lanes_[i].tensor_rank == 0) loss += stats[i];
  }
  return loss;
}

models::LossStats FsdpStep::run_step(const inputs::Batch& batch, double lr, double loss_scale,
                                     models::OptimizerStepStats& opt) {
  const models::LossStats loss = run_lanes([&](Lane& lane) {
    // Lane member k runs rows group k of this process's batch (with a tensor axis, the rows of
    // tensor group k, which the other lanes' member k shares).
    std::vector<inputs::Batch> rows;
    const int per = batch.batch / static_cast<int>(lane.devices.size());
    for (std::size_t k = 0; k < lane.devices.size(); ++k) rows.push_back(device_rows(batch, static_cast<int>(k), per));
    const int sub_batches = options_.step.sub_batches;
    if (sub_batches == 1) return run_pass(lane, rows, true);
    // Gradient accumulation: each sub-batch's pass reduce-scatters into the shards, summed here.
    std::vector<double> mean_over;
    for (const inputs::Batch& r : rows) mean_over.push_back(r.weight_sum());
    const int sub = per / sub_batches;
    models::LossStats total;
    for (int i = 0; i < sub_batches; ++i) {
      std::vector<inputs::Batch> part;
      for (const inputs::Batch& r : rows) part.push_back(r.sequences(i * sub, sub));
      total += run_pass(lane, part, true, mean_over);
      for (std::size_t d : lane.devices) {
        device::Queue& q = locals_[d].device->queue();
        if (i == 0) {
          q.copy(grad_shards_[d], 0, grad_sums_[d], 0, grad_shards_[d].count());
        } else {
          locals_[d].runtime->kernels().elementwise.axpy(grad_sums_[d], grad_shards_[d], 1.0f);
        }
      }
    }
    for (std::size_t d : lane.devices) {
      locals_[d].device->queue().copy(grad_sums_[d], 0, grad_shards_[d], 0, grad_shards_[d].count());
    }
    return total;
  });
  // The norm counts each shard once: devices of ICI data index 0 on processes of DCN data index 0
  // (with a tensor axis, without the replicated tensors of ranks other than 0: counted_).
  const bool counting_process = options_.mesh.dcn_coord(world_.rank(), MeshAxis::kData) == 0;
  std::vector<models::AdamShard> shards;
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    const bool counted = counting_process && options_.mesh.ici_coord(static_cast<int>(d), MeshAxis::kData) == 0;
    shards.push_back({locals_[d].adam.get(), &param_shards_[d], &grad_shards_[d], counted, counted_[d]});
  }
  opt = models::sharded_adam_step(shards, lr, loss_scale, [this](std::vector<double>& v) { world_.all_reduce_sum(v); });
  return loss;
}

models::LossStats FsdpStep::evaluate(const inputs::Batch& batch) {
  // As many sequences as training's sub-batches at a time (the model holds no more).
  const int sub = static_cast<int>(model().max_batch());
  return run_lanes([&](Lane& lane) {
    models::LossStats loss;
    for (int first = 0; first < batch.batch; first += sub) {
      loss += run_pass(lane, {batch.sequences(first, std::min(sub, batch.batch - first))}, false);
    }
    return loss;
  });
}

void FsdpStep::set_tracing(bool on) {
  trace_queues(on, nullptr);
  for (Lane& lane : lanes_) lane.comm->ici().set_tracing(on);
  if (tensors_) tensors_->set_tracing(on);
}

std::vector<TraceEvent> FsdpStep::take_trace(const std::vector<std::int64_t>& offsets, long step) {
  std::vector<TraceEvent> events = collect_trace(offsets, step, &lanes_.front().comm->ici());
  for (std::size_t i = 1; i < lanes_.size(); ++i) {
    collectives::IciCommunicator& ici = lanes_[i].comm->ici();
    ici.set_tracing(false);
    for (const auto& c : ici.take_trace()) {
      events.push_back({fmt::format("lane {} {} (step {})", i, c.name, step), kCommunicationTrack, c.start_ns, c.end_ns});
    }
  }
  if (tensors_) tensors_->append_trace(events, step);
  return events;
}

}  // namespace paxocl::scheduler
