// GradientAverager: data parallelism's gradient reduction, hierarchical as on a real cluster:
// the replicas on this process's devices are summed through host memory in device order (ICI),
// that sum is all-reduced across the data axis's processes (DCN, MPI), divided by the number of
// replicas, and written back to every local replica. Asynchronous: the returned Pending completes
// when every replica holds the mean, and a compute queue can wait on its device event.
#pragma once

#include <memory>

#include "collectives/ici_communicator.h"
#include "collectives/mpi_communicator.h"

namespace paxocl::collectives {

class GradientAverager {
 public:
  // `local`: this process's replicas (one per device); `process_ranks`: the world ranks of the
  // processes holding the other replicas of the same data axis group (this process included).
  GradientAverager(std::vector<device::Device*> local, const ProcessWorld& world, std::vector<int> process_ranks);
  // Without waiting for the other processes: shuts the MPI group down (an ICI job blocked in its
  // all-reduce fails), then cancels the queued ICI jobs; see ~IciCommunicator.
  ~GradientAverager();
  GradientAverager(const GradientAverager&) = delete;
  GradientAverager& operator=(const GradientAverager&) = delete;

  Pending average(IciCommunicator::Buffers gradients, std::size_t n, IciCommunicator::Events wait_for = {});
  int replicas() const { return ici_.size() * mpi_.size(); }
  IciCommunicator& ici() { return ici_; }  // for tracing

 private:
  MpiCommunicator mpi_;
  // Declared after the MPI group, so destroyed (its worker, which calls it, joined) before it.
  IciCommunicator ici_;
};

}  // namespace paxocl::collectives
