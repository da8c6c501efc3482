// TensorCommunicator: the collectives of tensor parallelism inside one tensor group: its devices
// in this process (ICI) and the processes holding the rest of it (DCN). Each member's host thread
// contributes its buffers to the group's next collective when its device gets there (after a
// marker of its queue); the last local member to arrive issues it. Every member's queue waits on
// the same Pending, handed out at the first arrival. Members make the same sequence of calls.
//   sum:            a hierarchical all-reduce as GradientAverager's without the mean: the local
//                   members summed (ring or host-staged, IciCommunicator), then an MPI all-reduce
//                   across the processes.
//   reduce_scatter: every member's full buffer (size x n floats) summed; the member of tensor
//                   rank r receives elements [r n, (r + 1) n) (sequence parallelism's shards).
//   all_gather:     every member's n floats, concatenated in tensor-rank order, to every member.
// Tensor ranks: a process's members are consecutive, rank = process index * local members +
// local member index (device::Mesh's tensor axis: DCN outer, ICI inner). Within a process the
// reduce-scatter and all-gather are IciCommunicator's (ring or host-staged); across processes they
// are staged through the host: the local members' buffers summed (reduce-scatter) or their shards
// concatenated (all-gather) on the host, then MPI's reduce-scatter or all-gather over the processes
// moves the process's chunk (its members' shards), and each member gets its shard (or the whole).
#pragma once

#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "collectives/ici_communicator.h"
#include "collectives/mpi_communicator.h"

namespace paxocl::collectives {

class TensorCommunicator {
 public:
  // `local`: this process's members, in tensor-rank order; `process_ranks`: the world ranks of the
  // processes holding the group's other members (this process included), in order.
  TensorCommunicator(std::vector<device::Device*> local, const ProcessWorld& world, std::vector<int> process_ranks);
  // Shuts the MPI group down first (a running collective fails), then the ICI worker; see ~GradientAverager.
  ~TensorCommunicator();
  TensorCommunicator(const TensorCommunicator&) = delete;
  TensorCommunicator& operator=(const TensorCommunicator&) = delete;

  // Member `member`'s part of its next collective, once `ready` completes. The returned Pending
  // completes when every member holds the result. They throw DeviceError after abort().
  // buffer[0, n) <- the sum of every member's.
  Pending sum(int member, device::Buffer<float> buffer, std::size_t n, device::Event ready);
  // shard[0, n) <- this member's n floats of the sum of every member's full[0, size() n), which
  // is the collective's workspace (its contents are lost).
  Pending reduce_scatter(int member, device::Buffer<float> full, device::Buffer<float> shard, std::size_t n,
                         device::Event ready);
  // full[0, size() n) <- every member's shard[0, n), in tensor-rank order.
  Pending all_gather(int member, device::Buffer<float> shard, device::Buffer<float> full, std::size_t n,
                     device::Event ready);
  // A member failed: every collective not yet issued fails with `error` (so no member waits
  // forever for it), and so does every later contribution.
  void abort(std::exception_ptr error);

  int size() const { return ici_.size() * mpi_.size(); }  // the tensor group's members
  int local_members() const { return ici_.size(); }
  IciCommunicator& ici() { return ici_; }  // for tracing

 private:
  enum class Kind { kSum, kReduceScatter, kAllGather };
  struct Round {
    Kind kind = Kind::kSum;
    IciCommunicator::Buffers inputs, outputs;  // per local member (a sum's outputs are its inputs)
    IciCommunicator::Events ready;
    std::size_t n = 0;
    int arrived = 0;
    Pending pending;
  };
  Pending arrive(int member, Kind kind, device::Buffer<float> input, device::Buffer<float> output, std::size_t n,
                 device::Event ready);
  void issue(Round& round);
  // The host-staged forms across processes, run on the ICI worker.
  void reduce_scatter_across(const IciCommunicator::Buffers& full, const IciCommunicator::Buffers& shards,
                             std::size_t n);
  void all_gather_across(const IciCommunicator::Buffers& shards, const IciCommunicator::Buffers& full, std::size_t n);

  MpiCommunicator mpi_;
  IciCommunicator ici_;  // after mpi_: its worker calls it, so it is destroyed first
  std::mutex mutex_;
  std::vector<long> next_round_;  // per member
  std::map<long, Round> open_;     // rounds some but not all members reached
  std::exception_ptr failed_;
};

}  // namespace paxocl::collectives
