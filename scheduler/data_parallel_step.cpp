#include "scheduler/data_parallel_step.h"

#include <functional>
#include <numeric>

namespace paxocl::scheduler {

DataParallelStep::DataParallelStep(const std::vector<device::DeviceInfo>& devices, device::ProgramCache& cache,
                                   const collectives::ProcessWorld& world, const StepOptions& options)
    : StepProgram(options), options_(options), rank_(world.rank()) {
  const int local = options.mesh.devices_per_process();  // all on the data axis
  open_local_devices(devices, local, cache, options);
  for (Local& l : locals_) {
    l.model = build_model(*l.runtime, options);
    l.adam = std::make_unique<models::AdamOptimizer>(*l.runtime, l.model->layout().total(),
                                                     l.model->layout().decayed_end(), options.adam);
  }
  if (local * world.size() > 1) {
    std::vector<int> ranks(static_cast<std::size_t>(world.size()));
    std::iota(ranks.begin(), ranks.end(), 0);
    averager_ = std::make_unique<collectives::GradientAverager>(StepProgram::devices(), world, ranks);
  }
}

void DataParallelStep::load_parameters(std::span<const float> flat) {
  for (Local& l : locals_) l.model->set_parameters(flat);  // identical replicas
}

std::vector<float> DataParallelStep::parameters() { return model().parameters(); }

std::vector<StepProgram::StateSlice> DataParallelStep::state_slices() {
  if (rank_ != 0) return {};  // replicas: process 0's copy stands for all
  Local& l = locals_.front();
  const std::size_t floats = layout().total();
  const auto staged = snapshot_staging_.copy(0, *l.device, floats, l.model->parameter_buffer(), l.adam->first_moment(),
                                              l.adam->second_moment());
  return {SnapshotStaging::slice(staged, 0, floats, 0)};
}

StepProgram::OptimizerCounts DataParallelStep::optimizer_counts() const {
  return {locals_.front().adam->steps_applied(), locals_.front().adam->steps_skipped()};
}

void DataParallelStep::load_state(std::span<const float> params, std::span<const float> m, std::span<const float> v,
                                  OptimizerCounts counts) {
  load_parameters(params);
  for (Local& l : locals_) l.adam->load_state(m, v, counts.applied, counts.skipped);
}

models::LossStats DataParallelStep::run_step(const inputs::Batch& batch, double lr, double loss_scale,
                                             models::OptimizerStepStats& opt) {
  models::LossStats stats;
  const models::ParameterLayout& layout = this->layout();
  std::vector<collectives::Pending> reductions;
  // Averages the given ranges of every replica's gradients once `ready` (one event per replica) fire.
  auto average = [&](const std::vector<models::ParameterLayout::Range>& ranges, const std::vector<device::Event>& ready) {
    for (const auto& range : ranges) {
      collectives::IciCommunicator::Buffers views;
      for (Local& l : locals_) views.push_back(l.model->gradient_buffer().view(range.offset, range.count, "grad range"));
      reductions.push_back(averager_->average(views, range.count, ready));
    }
  };
  std::vector<device::Event> ready;  // markers of the replicas whose backward is complete
  for (std::size_t r = 0; r < locals_.size(); ++r) {
    const inputs::Batch part = device_rows(batch, static_cast<int>(r), options_.step.replica_batch);
    device::Queue& queue = locals_[r].device->queue();
    std::function<void(int)> block_done;
    if (options_.step.overlap && averager_ && r + 1 == locals_.size()) {
      block_done = [&, bucket_last = -1, bucket_floats = std::size_t{0}](int l) mutable {
        if (bucket_last < 0) bucket_last = l;  // blocks finish from L-1 down to 0
        for (const auto& range : layout.ranges_of_blocks(l, l)) bucket_floats += range.count;
        if (bucket_floats * sizeof(float) < options_.step.bucket_bytes && l > 0) return;
        std::vector<device::Event> now = ready;
        now.push_back(queue.marker());
        queue.flush();
        average(layout.ranges_of_blocks(l, bucket_last), now);
        bucket_last = -1;
        bucket_floats = 0;
      };
    }
    stats += locals_[r].model->train_step_gradients(part, block_done);
    ready.push_back(queue.marker());
    queue.flush();
  }
  if (averager_) {
    if (options_.step.overlap) {
      average(layout.ranges_outside_blocks(), ready);  // wte, wpe, lnf: final only at the very end
    } else {
      average({models::ParameterLayout::Range{0, layout.total()}}, ready);
    }
    for (const collectives::Pending& p : reductions) p.wait();
  }
  for (Local& l : locals_) opt = l.adam->step(l.model->parameter_buffer(), l.model->gradient_buffer(), lr, loss_scale);
  return stats;
}

void DataParallelStep::set_tracing(bool on) { trace_queues(on, averager_ ? &averager_->ici() : nullptr); }

std::vector<TraceEvent> DataParallelStep::take_trace(const std::vector<std::int64_t>& offsets, long step) {
  return collect_trace(offsets, step, averager_ ? &averager_->ici() : nullptr, "gradient ");
}

}  // namespace paxocl::scheduler
