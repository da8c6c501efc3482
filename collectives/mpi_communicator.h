// MpiCommunicator: asynchronous collectives over a group of processes (the DCN part of a mesh
// axis group), on host memory, through Open MPI's non-blocking collectives. A progress thread
// drives outstanding requests (MPI moves data only inside MPI calls), so communication advances
// while the caller's kernels run. Every call returns a Pending; the spans must stay valid until it
// completes. Sums run in MPI's fixed order for a given group, so results are reproducible.
//
// Sizes need not divide by the group: element ranges are split by shard_range (the first
// n % size members get one element more). A group of one process (or a run without MPI) works
// and completes at once. Operations larger than one MPI call can count (INT_MAX elements) are
// issued as several calls (collectives/mpi_chunks.h); the Pending covers them all.
//
// Teardown cancels, it does not drain: shutdown() (and the destructor) fail every collective
// still in flight, releasing its waiters with a DeviceError, instead of waiting for peers that may
// have died or never join. MPI cannot cancel a non-blocking collective, so such requests are
// abandoned with a warning: the job must then end (main() aborts it on the error).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "collectives/mpi_chunks.h"
#include "collectives/pending.h"
#include "collectives/process_world.h"

namespace paxocl::collectives {

class MpiCommunicator {
 public:
  // `ranks`: the world ranks of the group, this process among them, in group order.
  // `max_count`: the most elements one MPI call carries (default INT_MAX, all MPI can count);
  // larger operations become several calls. Every member must pass the same value. Tests pass a
  // small one to exercise the split without 8 GiB buffers.
  MpiCommunicator(const ProcessWorld& world, std::vector<int> ranks, std::size_t max_count = mpi_chunks::kMaxCount);
  ~MpiCommunicator();  // shutdown(), then frees the group
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

  // Ends the communicator's use without waiting for the group: stops the progress thread, fails
  // every collective in flight (Pending::wait() throws DeviceError; device events fail) and
  // abandons its MPI requests with a logged warning; later calls throw DeviceError. For owners
  // whose other threads may be blocked in one of this group's collectives (FsdpCommunicator's
  // ICI worker): shut down first, then join them. Idempotent; call it from one thread at a time.
  void shutdown();

  // [begin, end) of shard `index` when n elements are split over `parts` members.
  static std::pair<std::size_t, std::size_t> shard_range(std::size_t n, int parts, int index);

 private:
  struct Request;
  // Every member's shard size of n under `split`; throws unless this member's is `mine`.
  Split shard_counts(std::size_t n, const Split& split, std::size_t mine, const char* what) const;
  // Issues `calls` MPI calls (issue(i, MPI_Request*) makes call i) and hands the requests to the
  // progress thread; the Pending completes when all have.
  Pending start(std::unique_ptr<Request> request, std::size_t calls, const std::function<int(std::size_t, void*)>& issue);
  void progress();

  std::vector<int> ranks_;
  int rank_ = 0;
  std::size_t max_count_;
  void* comm_ = nullptr;  // MPI_Comm of the group (null without MPI)
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::unique_ptr<Request>> active_;
  bool stopping_ = false;
  std::size_t abandoned_ = 0;  // requests given up by shutdown() or after an MPI error
  std::thread progress_thread_;
};

}  // namespace paxocl::collectives
