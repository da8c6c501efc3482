#include "collectives/gradient_averager.h"

#include <cstddef>

namespace paxocl::collectives {

GradientAverager::GradientAverager(std::vector<device::Device*> local, const ProcessWorld& world,
                                   std::vector<int> process_ranks)
    : mpi_(world, std::move(process_ranks)), ici_(std::move(local)) {
  // Members die in reverse order of declaration: the ICI communicator's worker runs the jobs that
  // call mpi_, so it must be declared after it (destroyed, its worker joined, first). offsetof on
  // this non-standard-layout class is conditionally supported; GCC and Clang give it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
  static_assert(offsetof(GradientAverager, ici_) > offsetof(GradientAverager, mpi_),
                "ici_ must be declared after the MPI group its jobs use");
#pragma GCC diagnostic pop
}

GradientAverager::~GradientAverager() {
  mpi_.shutdown();  // a running ICI job blocked in its all-reduce fails; then ici_ dies before mpi_
}

Pending GradientAverager::average(IciCommunicator::Buffers gradients, std::size_t n, IciCommunicator::Events wait_for) {
  const float scale = 1.0f / static_cast<float>(replicas());
  return ici_.all_reduce(std::move(gradients), n, std::move(wait_for), [this, scale](std::span<float> sum) {
    mpi_.all_reduce(sum).wait();  // across processes, on the ICI worker thread
    for (float& v : sum) v *= scale;
  });
}

}  // namespace paxocl::collectives
