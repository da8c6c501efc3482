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
  const int local = mesh.devices_per_process();
  open_local_devices(devices, local, cache, options);
  for (Local& l : locals_) {
    l.model = build_model(*l.runtime, options, slots_);
  }
  plan_ = std::make_unique<models::ShardPlan>(layout(), mesh.dcn_size(MeshAxis::kFsdp), mesh.ici_size(MeshAxis::kFsdp));
  for (int b = -1; b < options.model.num_blocks(); ++b) splits_.push_back(unit_split(*plan_, b, process_));
  for (int d = 0; d < local; ++d) {
    Local& l = locals_[static_cast<std::size_t>(d)];
    const int f = mesh.ici_coord(d, MeshAxis::kFsdp);
    const std::size_t floats = plan_->shard_floats(process_, f);
    param_shards_.push_back(models::make_buffer(*l.device, floats, "parameter shard"));
    grad_shards_.push_back(models::make_buffer(*l.device, floats, "gradient shard"));
    l.runtime->kernels().elementwise.fill(param_shards_.back(), 0.0f);  // alignment gaps stay zero
    l.runtime->kernels().elementwise.fill(grad_shards_.back(), 0.0f);
    l.adam = std::make_unique<models::AdamOptimizer>(*l.runtime, floats,
                                                     adam_segments(plan_->decay_segments(process_, f)), options.adam);
  }
  comm_ = std::make_unique<collectives::FsdpCommunicator>(StepProgram::devices(), world, mesh);
}

std::size_t FsdpStep::state_bytes_per_device() const {
  return (4 * param_shards_.front().count() + 2 * model().parameter_buffer().count()) * sizeof(float) +
         model().weight_copy_bytes();
}

void FsdpStep::load_parameters(std::span<const float> flat) {
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    const std::vector<float> shards =
        plan_->extract(flat, process_, options_.mesh.ici_coord(static_cast<int>(d), MeshAxis::kFsdp));
    locals_[d].device->queue().write(param_shards_[d], std::span<const float>(shards));
  }
}

std::vector<StepProgram::StateSlice> FsdpStep::state_slices() {
  if (options_.mesh.dcn_coord(world_.rank(), MeshAxis::kData) != 0) return {};  // a data replica of another process's shards
  std::vector<StateSlice> slices;
  for (int f = 0; f < options_.mesh.ici_size(MeshAxis::kFsdp); ++f) {
    Local& l = locals_[static_cast<std::size_t>(f)];
    const std::size_t floats = param_shards_[static_cast<std::size_t>(f)].count();
    std::vector<float> p(floats), m(floats), v(floats);
    l.device->queue().read(param_shards_[static_cast<std::size_t>(f)], std::span<float>(p));
    l.device->queue().read(l.adam->first_moment(), std::span<float>(m));
    l.device->queue().read(l.adam->second_moment(), std::span<float>(v));
    for (const ParameterLayoutUnit& u : plan_->units()) {
      const models::ShardPlan::Piece s = plan_->shard(u.block, process_, f);
      const std::size_t base = plan_->shard_offset(u.block, process_, f);
      for (std::size_t i = 0; i < u.ranges.size(); ++i) {  // the shard's overlap with each packed range
        const std::size_t b = std::max(s.begin, u.packed_offsets[i]);
        const std::size_t e = std::min(s.end, u.packed_offsets[i] + u.ranges[i].count);
        if (b >= e) continue;
        const auto from = static_cast<std::ptrdiff_t>(base + (b - s.begin)), to = from + static_cast<std::ptrdiff_t>(e - b);
        slices.push_back({u.ranges[i].offset + (b - u.packed_offsets[i]), std::vector<float>(p.begin() + from, p.begin() + to),
                          std::vector<float>(m.begin() + from, m.begin() + to), std::vector<float>(v.begin() + from, v.begin() + to)});
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
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    const int f = options_.mesh.ici_coord(static_cast<int>(d), MeshAxis::kFsdp);
    locals_[d].adam->load_state(plan_->extract(m, process_, f), plan_->extract(v, process_, f), counts.applied,
                                counts.skipped);
  }
}

std::vector<device::Event> FsdpStep::compute_markers(std::size_t devices) {
  std::vector<device::Event> m;
  for (std::size_t d = 0; d < devices; ++d) {
    m.push_back(locals_[d].device->queue().marker());
    locals_[d].device->queue().flush();
  }
  return m;
}

std::vector<float> FsdpStep::parameters() {
  const std::vector<device::Event> updated = compute_markers(locals_.size());
  std::vector<float> flat(layout().total(), 0.0f), unit;
  for (int b = -1; b < options_.model.num_blocks(); ++b) {
    unit.assign(plan_->unit(b).size, 0.0f);
    comm_->gather(splits_[static_cast<std::size_t>(b + 1)], param_shards_,
                  IciCommunicator::Buffers(locals_.size()), updated, "all-gather " + unit_name(b) + " (to host)", unit)
        .wait();
    plan_->unpack(b, unit, flat);
  }
  return flat;
}

Pending FsdpStep::gather(int block, std::size_t devices, IciCommunicator::Events wait_for) {
  IciCommunicator::Buffers slots(locals_.size());
  for (std::size_t d = 0; d < devices; ++d) slots[d] = locals_[d].model->unit_parameters(block);
  Pending p = comm_->gather(splits_[static_cast<std::size_t>(block + 1)], param_shards_, std::move(slots),
                            std::move(wait_for), "all-gather " + unit_name(block));
  if (!options_.step.overlap) p.wait();
  return p;
}

models::LossStats FsdpStep::run_pass(const std::vector<inputs::Batch>& rows, bool train) {
  const int L = options_.model.num_blocks();
  const std::size_t n = rows.size();
  auto wait_on_device = [&](std::size_t d, const Pending& p) {
    const device::Event e = p.device_event(locals_[d].device->context());
    locals_[d].device->queue().wait_for(std::span<const device::Event>(&e, 1));
  };
  auto markers = [&] { return compute_markers(n); };

  // Gathers read the parameter shards on the communication queues: after the last Adam update.
  const std::vector<device::Event> updated = compute_markers(locals_.size());
  // The unit outside the blocks serves the embedding, the LM head and their backward.
  const Pending rest = gather(-1, n, updated);
  std::vector<models::Model::Pass> passes;
  for (std::size_t d = 0; d < n; ++d) {
    wait_on_device(d, rest);
    passes.push_back(locals_[d].model->begin_pass(rows[d], train));
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
  std::size_t issued = 0;  // uses whose gather (if any) has been issued
  const std::size_t ahead = options_.step.overlap ? static_cast<std::size_t>(S - 1) : 0;
  const float scale = 1.0f / static_cast<float>(options_.mesh.num_devices());
  models::LossStats loss;

  for (std::size_t k = 0; k < uses.size(); ++k) {
    for (; issued < uses.size() && issued <= k + ahead; ++issued) {
      const int b = uses[issued].block;
      const auto s = static_cast<std::size_t>(b % S);
      if (slot_block[s] == b) continue;  // still resident from the forward
      if (slot_last_use[s] >= static_cast<int>(k)) throw std::logic_error("FSDP schedule: a slot is evicted before its last use");
      gathered[issued] = gather(b, n, slot_free[s]);
      slot_block[s] = b;
    }
    const Use use = uses[k];
    const auto s = static_cast<std::size_t>(use.block % S);
    if (use.backward && k == static_cast<std::size_t>(L)) {  // the turn: loss, then the head's backward
      for (std::size_t d = 0; d < n; ++d) {
        loss += locals_[d].model->forward_loss(passes[d]);
        locals_[d].model->begin_backward(passes[d]);
      }
    }
    for (std::size_t d = 0; d < n; ++d) {
      models::Model& model = *locals_[d].model;
      if (gathered[k]) wait_on_device(d, *gathered[k]);
      if (!use.backward) {
        model.forward_block(passes[d], use.block);
        continue;
      }
      if (slot_reduction[s]) {  // the slot's gradient was the previous block's: reduced, then cleared
        wait_on_device(d, *slot_reduction[s]);
        models::FloatBuffer g = model.unit_gradients(use.block);
        locals_[d].runtime->kernels().elementwise.fill(g, 0.0f);
      }
      model.backward_block(passes[d], use.block);
    }
    slot_free[s] = markers();
    slot_last_use[s] = static_cast<int>(k);
    if (use.backward) {
      IciCommunicator::Buffers grads;
      for (std::size_t d = 0; d < n; ++d) grads.push_back(locals_[d].model->unit_gradients(use.block));
      slot_reduction[s] = comm_->reduce_scatter(splits_[static_cast<std::size_t>(use.block + 1)], std::move(grads),
                                                grad_shards_, scale, slot_free[s],
                                                "reduce-scatter " + unit_name(use.block));
      if (!options_.step.overlap) slot_reduction[s]->wait();
      reductions.push_back(*slot_reduction[s]);
    }
  }
  if (!train) {
    for (std::size_t d = 0; d < n; ++d) loss += locals_[d].model->forward_loss(passes[d]);
    return loss;
  }
  for (std::size_t d = 0; d < n; ++d) locals_[d].model->finish_backward(passes[d]);
  IciCommunicator::Buffers grads;
  for (std::size_t d = 0; d < n; ++d) grads.push_back(locals_[d].model->unit_gradients(-1));
  reductions.push_back(comm_->reduce_scatter(splits_.front(), std::move(grads), grad_shards_, scale,
                                             markers(), "reduce-scatter " + unit_name(-1)));
  for (const Pending& p : reductions) p.wait();
  return loss;
}

models::LossStats FsdpStep::run_step(const inputs::Batch& batch, double lr, double loss_scale,
                                     models::OptimizerStepStats& opt) {
  std::vector<inputs::Batch> rows;
  for (std::size_t d = 0; d < locals_.size(); ++d) rows.push_back(device_rows(batch, static_cast<int>(d), options_.step.device_batch));
  const models::LossStats loss = run_pass(rows, true);
  // The norm counts each shard once: devices of ICI data index 0 on processes of DCN data index 0.
  const bool counting_process = options_.mesh.dcn_coord(world_.rank(), MeshAxis::kData) == 0;
  std::vector<models::AdamShard> shards;
  for (std::size_t d = 0; d < locals_.size(); ++d) {
    const bool counted = counting_process && options_.mesh.ici_coord(static_cast<int>(d), MeshAxis::kData) == 0;
    shards.push_back({locals_[d].adam.get(), &param_shards_[d], &grad_shards_[d], counted});
  }
  opt = models::sharded_adam_step(shards, lr, loss_scale, [this](std::vector<double>& v) { world_.all_reduce_sum(v); });
  return loss;
}

models::LossStats FsdpStep::evaluate(const inputs::Batch& batch) { return run_pass({batch}, false); }

}  // namespace paxocl::scheduler
