// MpiCommunicator: asynchronous collectives over a group of processes (the DCN part of a mesh
// axis group), on host memory, through Open MPI's non-blocking collectives. A progress thread
// drives outstanding requests (MPI moves data only inside MPI calls), so communication advances
// while the caller's kernels run. Every call returns a Pending; the spans must stay valid until it
// completes. Sums run in MPI's fixed order for a given group, so results are reproducible.
//
// Sizes need not divide by the group: element ranges are split by shard_range (the first
// n % size members get one element more). A group of one process (or a run without MPI) works
// and completes at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "collectives/pending.h"
#include "collectives/process_world.h"

namespace paxocl::collectives {

class MpiCommunicator {
 public:
  // `ranks`: the world ranks of the group, this process among them, in group order.
  MpiCommunicator(const ProcessWorld& world, std::vector<int> ranks);
  ~MpiCommunicator();
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int size() const { return static_cast<int>(ranks_.size()); }
  int rank() const { return rank_; }  // this process's index in the group

  // How `all` splits into members' shards: the members' element counts in order (summing to its
  // size); empty = shard_range's split.
  using Split = std::vector<std::size_t>;

  Pending all_reduce(std::span<float> data);                                // sum, in place
  Pending all_gather(std::span<const float> mine, std::span<float> all, Split split = {});  // all = shards in order
  Pending reduce_scatter(std::span<const float> all, std::span<float> mine, Split split = {});  // sum; member i keeps shard i
  Pending broadcast(std::span<float> data, int root);

  // [begin, end) of shard `index` when n elements are split over `parts` members.
  static std::pair<std::size_t, std::size_t> shard_range(std::size_t n, int parts, int index);

 private:
  struct Request;
  // Fills r's counts and displacements for `split` of n; throws unless this member's count is `mine`.
  void set_split(Request& r, std::size_t n, const Split& split, std::size_t mine, const char* what) const;
  // Issues the MPI call (given the MPI_Request* to fill) and hands the request to the progress thread.
  Pending start(std::unique_ptr<Request> request, const std::function<int(void*)>& issue);
  void progress();

  std::vector<int> ranks_;
  int rank_ = 0;
  void* comm_ = nullptr;  // MPI_Comm of the group (null without MPI)
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Request>> active_;
  bool stopping_ = false;
  std::thread progress_thread_;
};

}  // namespace paxocl::collectives
