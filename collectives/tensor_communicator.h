// TensorCommunicator: the sums of tensor parallelism inside one tensor group: its devices in
// this process (ICI) and the processes holding the rest of it (DCN). Each member's host thread
// contributes its buffer to the group's next sum when its device gets there (after a marker of its
// queue); the last local member to arrive issues the sum, a hierarchical all-reduce as
// GradientAverager's without the mean: the local members summed (ring or host-staged,
// IciCommunicator), then an MPI all-reduce across the processes. Every member's queue waits on the
// same Pending, handed out at the first arrival. Members contribute to the same sequence of sums.
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
  // Shuts the MPI group down first (a running sum fails), then the ICI worker; see ~GradientAverager.
  ~TensorCommunicator();
  TensorCommunicator(const TensorCommunicator&) = delete;
  TensorCommunicator& operator=(const TensorCommunicator&) = delete;

  // Member `member`'s part of its next sum: `buffer`'s first n floats once `ready` completes. The
  // returned Pending completes when every member's buffer holds the sum. Throws DeviceError after
  // abort().
  Pending contribute(int member, device::Buffer<float> buffer, std::size_t n, device::Event ready);
  // A member failed: every sum not yet issued fails with `error` (so no member waits forever for
  // it), and so does every later contribution.
  void abort(std::exception_ptr error);

  int local_members() const { return ici_.size(); }
  IciCommunicator& ici() { return ici_; }  // for tracing

 private:
  struct Round {
    IciCommunicator::Buffers buffers;
    IciCommunicator::Events ready;
    std::size_t n = 0;
    int arrived = 0;
    Pending pending;
  };
  MpiCommunicator mpi_;
  IciCommunicator ici_;  // after mpi_: its worker calls it, so it is destroyed first
  std::mutex mutex_;
  std::vector<long> next_round_;  // per member
  std::map<long, Round> open_;     // rounds some but not all members reached
  std::exception_ptr failed_;
};

}  // namespace paxocl::collectives
