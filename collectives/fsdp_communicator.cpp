#include "collectives/fsdp_communicator.h"

#include <algorithm>
#include <cstddef>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::collectives {

namespace {
using device::MeshAxis;

// `mesh` if `devices` are one (stage, tensor) index's devices of a process (all of them for stage
// and tensor 1) and it has the world's processes; else ConfigError.
const device::Mesh& checked(const device::Mesh& mesh, std::size_t devices, const ProcessWorld& world) {
  if (static_cast<int>(devices) * mesh.ici_size(MeshAxis::kStage) * mesh.ici_size(MeshAxis::kTensor) !=
          mesh.devices_per_process() ||
      world.size() != mesh.num_processes()) {
    throw ConfigError(fmt::format("FSDP mesh ICI {} x DCN {} does not match {} device(s) per (stage, tensor) index x {} process(es)",
                                  device::to_string(mesh.ici()), device::to_string(mesh.dcn()), devices, world.size()));
  }
  return mesh;
}

MpiCommunicator::Split chunk_sizes(const UnitSplit& split) {
  MpiCommunicator::Split sizes;
  for (const auto& c : split.chunks) sizes.push_back(c.end - c.begin);
  return sizes;
}
}  // namespace

FsdpCommunicator::FsdpCommunicator(std::vector<device::Device*> local, const ProcessWorld& world,
                                   const device::Mesh& mesh)
    : mesh_(checked(mesh, local.size(), world)),
      fsdp_group_(world, mesh_.dcn_processes(world.rank(), MeshAxis::kFsdp)),
      data_group_(world, mesh_.dcn_processes(world.rank(), MeshAxis::kData)),
      ici_(std::move(local)) {
  // Members die in reverse order of declaration: the ICI communicator's worker runs the jobs that
  // call the MPI groups, so it must be declared after them (destroyed, its worker joined, first).
  // offsetof on this non-standard-layout class is conditionally supported; GCC and Clang give it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
  static_assert(offsetof(FsdpCommunicator, ici_) > offsetof(FsdpCommunicator, fsdp_group_) &&
                    offsetof(FsdpCommunicator, ici_) > offsetof(FsdpCommunicator, data_group_),
                "ici_ must be declared after the MPI groups its jobs use");
#pragma GCC diagnostic pop
}

FsdpCommunicator::~FsdpCommunicator() {
  // A queued or running ICI job may wait on a collective a failed peer never joins: the groups
  // fail theirs first, so the worker's job ends; then ici_ (declared last) dies before them.
  fsdp_group_.shutdown();
  data_group_.shutdown();
}

Pending FsdpCommunicator::gather(const UnitSplit& split, IciCommunicator::Buffers shard_buffers,
                                 IciCommunicator::Buffers slots, IciCommunicator::Events wait_for, std::string name,
                                 std::span<float> host) {
  return ici_.stage([this, split, shard_buffers = std::move(shard_buffers), slots = std::move(slots), host] {
    std::vector<float> unit(split.size, 0.0f);
    for (int f = 0; f < mesh_.ici_size(MeshAxis::kFsdp); ++f) {  // the replica of ICI data index 0 holds shard f
      const auto& s = split.shards[static_cast<std::size_t>(f)];
      ici_.read(f, shard_buffers[static_cast<std::size_t>(f)], split.shard_offsets[static_cast<std::size_t>(f)],
                std::span<float>(unit).subspan(s.begin, s.end - s.begin));
    }
    if (mesh_.dcn_size(MeshAxis::kFsdp) > 1) {
      const auto& c = split.chunks[static_cast<std::size_t>(process_fsdp_index())];
      const std::vector<float> mine(unit.begin() + static_cast<std::ptrdiff_t>(c.begin),
                                    unit.begin() + static_cast<std::ptrdiff_t>(c.end));
      fsdp_group_.all_gather(mine, unit, chunk_sizes(split)).wait();
    }
    for (int k = 0; k < ici_.size(); ++k) {
      if (slots[static_cast<std::size_t>(k)].get() != nullptr) ici_.write(k, slots[static_cast<std::size_t>(k)], 0, unit);
    }
    if (!host.empty()) std::copy(unit.begin(), unit.end(), host.begin());
  }, std::move(wait_for), std::move(name));
}

Pending FsdpCommunicator::reduce_scatter(const UnitSplit& split, IciCommunicator::Buffers unit_gradients,
                                         IciCommunicator::Buffers gradient_shards, float scale,
                                         IciCommunicator::Events wait_for, std::string name) {
  return ici_.stage([this, split, unit_gradients = std::move(unit_gradients),
                     gradient_shards = std::move(gradient_shards), scale] {
    const std::vector<float> sum = ici_.sum_members(unit_gradients, split.size);
    const auto& c = split.chunks[static_cast<std::size_t>(process_fsdp_index())];
    std::vector<float> chunk(c.end - c.begin);
    if (mesh_.dcn_size(MeshAxis::kFsdp) > 1) {
      fsdp_group_.reduce_scatter(sum, chunk, chunk_sizes(split)).wait();
    } else {
      std::copy_n(sum.begin() + static_cast<std::ptrdiff_t>(c.begin), chunk.size(), chunk.begin());
    }
    if (mesh_.dcn_size(MeshAxis::kData) > 1) data_group_.all_reduce(chunk).wait();
    for (float& v : chunk) v *= scale;
    for (int k = 0; k < ici_.size(); ++k) {
      const auto f = static_cast<std::size_t>(k % mesh_.ici_size(MeshAxis::kFsdp));  // members: [data, fsdp] row-major
      const auto& s = split.shards[f];
      ici_.write(k, gradient_shards[static_cast<std::size_t>(k)], split.shard_offsets[f],
                 std::span<const float>(chunk).subspan(s.begin - c.begin, s.end - s.begin));
    }
  }, std::move(wait_for), std::move(name));
}

}  // namespace paxocl::collectives
