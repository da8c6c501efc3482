#include "scheduler/data_group_average.h"

#include <utility>

namespace paxocl::scheduler {

std::vector<collectives::Pending> average_data_groups(
    const std::vector<std::unique_ptr<collectives::GradientAverager>>& averagers, const std::vector<int>& group_of,
    const std::function<MemberGradients(std::size_t member)>& member) {
  std::vector<collectives::Pending> reductions;
  for (std::size_t a = 0; a < averagers.size(); ++a) {
    collectives::IciCommunicator::Buffers gradients;
    collectives::IciCommunicator::Events backward_done;
    std::size_t n = 0;
    for (std::size_t i = 0; i < group_of.size(); ++i) {
      if (group_of[i] != static_cast<int>(a)) continue;
      MemberGradients g = member(i);
      gradients.push_back(std::move(g.buffer));
      n = g.count;
      backward_done.push_back(std::move(g.backward_done));
    }
    reductions.push_back(averagers[a]->average(std::move(gradients), n, std::move(backward_done)));
  }
  return reductions;
}

}  // namespace paxocl::scheduler
