#include "scheduler/snapshot_staging.h"

#include <spdlog/spdlog.h>

#include "device/cl_error.h"

namespace paxocl::scheduler {

std::shared_ptr<SnapshotStaging::Region> SnapshotStaging::acquire(std::size_t slot, device::Device& device,
                                                                  std::size_t floats) {
  if (regions_.size() <= slot) regions_.resize(slot + 1);
  std::shared_ptr<Region>& region = regions_[slot];
  if (region && region.use_count() == 1 && region->params.size() == floats) return region;

  auto fresh = std::make_shared<Region>();
  std::span<float> all;
  try {
    // Its own queue: the mapping outlives any use of the device's compute queue.
    fresh->pinned = std::make_unique<device::PinnedHostMemory>(device.context(), device.make_queue(),
                                                               3 * floats * sizeof(float), "checkpoint staging");
    all = fresh->pinned->floats(0, 3 * floats);
  } catch (const device::ClError& e) {
    spdlog::warn("checkpoint snapshots use pageable memory (slower copies): {}", e.what());
    fresh->pageable.resize(3 * floats);
    all = fresh->pageable;
  }
  fresh->params = all.subspan(0, floats);
  fresh->m = all.subspan(floats, floats);
  fresh->v = all.subspan(2 * floats, floats);
  region = std::move(fresh);
  return region;
}

std::shared_ptr<SnapshotStaging::Region> SnapshotStaging::copy(std::size_t slot, device::Device& device,
                                                               std::size_t floats, const device::Buffer<float>& params,
                                                               const device::Buffer<float>& m,
                                                               const device::Buffer<float>& v) {
  std::shared_ptr<Region> region = acquire(slot, device, floats);
  device::Queue& queue = device.queue();
  queue.read(params, region->params, /*blocking=*/false);
  queue.read(m, region->m, /*blocking=*/false);
  queue.read(v, region->v, /*blocking=*/false);
  queue.finish();
  return region;
}

checkpoint::StateSlice SnapshotStaging::slice(const std::shared_ptr<Region>& region, std::size_t at, std::size_t count,
                                              std::size_t flat_offset) {
  return {flat_offset, region->params.subspan(at, count), region->m.subspan(at, count), region->v.subspan(at, count),
          region};
}

}  // namespace paxocl::scheduler
