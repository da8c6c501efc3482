// FsdpCommunicator: FSDP's (ZeRO-3's) two collectives on one unit of parameters (a transformer
// block, or the part outside the blocks), hierarchical over the mesh's ICI x DCN axes, staged
// through the host on the ICI worker, asynchronous (Pending; compute queues wait on its device
// events):
//   gather:         shards -> the whole unit in target devices' slots. One replica's shard per ICI
//                   fsdp index makes this process's chunk; the chunks are MPI all-gathered over the
//                   DCN fsdp group.
//   reduce_scatter: every local device's unit gradient -> summed on the host in device order, MPI
//                   reduce-scattered over the DCN fsdp group, MPI all-reduced over the DCN data
//                   group, scaled, and each device's shard written to its gradient shard buffer.
// Coordinates are device::Mesh's (Pax's hybrid mesh, row-major). With a tensor or stage axis, one
// communicator serves the devices of one (stage, tensor) index (each holds its parts of the
// model): its members are those devices in local order ([data, fsdp] row-major), its MPI groups
// the processes along DCN fsdp and data with this process's stage and tensor coordinates.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/ici_communicator.h"
#include "collectives/mpi_communicator.h"
#include "device/mesh.h"

namespace paxocl::collectives {

// How a unit of `size` floats is split (models::ShardPlan computes it).
struct UnitSplit {
  struct Piece {
    std::size_t begin = 0, end = 0;
  };
  std::size_t size = 0;
  std::vector<Piece> chunks;               // per DCN fsdp index
  std::vector<Piece> shards;               // this process's chunk, per ICI fsdp index (offsets in the unit)
  std::vector<std::size_t> shard_offsets;  // per ICI fsdp index: where the shard sits in its shard buffer
};

class FsdpCommunicator {
 public:
  // ConfigError unless `local` are one (stage, tensor) index's devices of a process of `mesh`, which has the
  // world's processes.
  FsdpCommunicator(std::vector<device::Device*> local, const ProcessWorld& world, const device::Mesh& mesh);
  // Without waiting for the job's other processes: shuts the MPI groups down (an ICI job blocked
  // in one of their collectives fails), then cancels the queued ICI jobs; see ~IciCommunicator.
  ~FsdpCommunicator();
  FsdpCommunicator(const FsdpCommunicator&) = delete;
  FsdpCommunicator& operator=(const FsdpCommunicator&) = delete;

  // `shard_buffers`: every local device's shard buffer; `slots`: per local device, the view to
  // fill with the unit (a null Buffer skips that device); `host`, if not empty, receives it too.
  Pending gather(const UnitSplit& split, IciCommunicator::Buffers shard_buffers, IciCommunicator::Buffers slots,
                 IciCommunicator::Events wait_for, std::string name, std::span<float> host = {});
  // `unit_gradients`: every local device's gradient of the unit; the result, times `scale`, goes
  // to each device's shard in `gradient_shards` (its shard buffer).
  Pending reduce_scatter(const UnitSplit& split, IciCommunicator::Buffers unit_gradients,
                         IciCommunicator::Buffers gradient_shards, float scale, IciCommunicator::Events wait_for,
                         std::string name);

  const device::Mesh& mesh() const { return mesh_; }
  int process_fsdp_index() const { return fsdp_group_.rank(); }
  IciCommunicator& ici() { return ici_; }  // for tracing

 private:
  device::Mesh mesh_;
  MpiCommunicator fsdp_group_, data_group_;  // processes along DCN fsdp (same data index), and along DCN data
  // Declared after the groups, so destroyed (its worker, which calls them, joined) before them.
  IciCommunicator ici_;
};

}  // namespace paxocl::collectives
