#include "collectives/gradient_averager.h"

namespace paxocl::collectives {

GradientAverager::GradientAverager(std::vector<device::Device*> local, const ProcessWorld& world,
                                   std::vector<int> process_ranks)
    : ici_(std::move(local)), mpi_(world, std::move(process_ranks)) {}

Pending GradientAverager::average(IciCommunicator::Buffers gradients, std::size_t n, IciCommunicator::Events wait_for) {
  const float scale = 1.0f / static_cast<float>(replicas());
  return ici_.all_reduce(std::move(gradients), n, std::move(wait_for), [this, scale](std::span<float> sum) {
    mpi_.all_reduce(sum).wait();  // across processes, on the ICI worker thread
    for (float& v : sum) v *= scale;
  });
}

}  // namespace paxocl::collectives
