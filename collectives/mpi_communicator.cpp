#include "collectives/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"

namespace paxocl::collectives {

struct MpiCommunicator::Request {
  std::vector<MPI_Request> requests;       // one per MPI call; MPI_REQUEST_NULL once complete
  std::vector<mpi_chunks::VChunk> chunks;  // the v-variants' counts and displacements, alive while MPI reads them
  int error = MPI_SUCCESS;                 // the first failure, issuing or testing a call
  Pending pending;
  std::string what;
};

namespace {
std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

MPI_Comm group_comm(void* comm) { return *static_cast<MPI_Comm*>(comm); }
MPI_Request* as_request(void* r) { return static_cast<MPI_Request*>(r); }
int as_int(std::size_t count) { return static_cast<int>(count); }  // counts are <= max_count_ <= INT_MAX

// What MPI may still use after we gave up on it (a late peer can still complete an abandoned
// collective): kept until the process ends, reachable, so leak checkers stay quiet.
void keep_forever(std::shared_ptr<void> object) {
  static auto* mutex = new std::mutex;
  static auto* kept = new std::vector<std::shared_ptr<void>>;
  std::lock_guard lock(*mutex);
  kept->push_back(std::move(object));
}
}  // namespace

std::pair<std::size_t, std::size_t> MpiCommunicator::shard_range(std::size_t n, int parts, int index) {
  const auto p = static_cast<std::size_t>(parts), i = static_cast<std::size_t>(index);
  const std::size_t base = n / p, extra = n % p;
  const std::size_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

MpiCommunicator::MpiCommunicator(const ProcessWorld& world, std::vector<int> ranks, std::size_t max_count)
    : ranks_(std::move(ranks)), max_count_(max_count) {
  if (max_count_ == 0 || max_count_ > mpi_chunks::kMaxCount) {
    throw ConfigError(fmt::format("an MPI communicator's chunk limit must be in [1, {}], not {}", mpi_chunks::kMaxCount,
                                  max_count_));
  }
  const auto me = std::find(ranks_.begin(), ranks_.end(), world.rank());
  if (me == ranks_.end()) throw ConfigError(fmt::format("process {} is not in the communicator's group", world.rank()));
  rank_ = static_cast<int>(me - ranks_.begin());
  if (ranks_.size() > 1) {
    if (!world.uses_mpi()) throw ConfigError("a communicator over several processes needs a run under mpirun or srun");
    if (!world.thread_multiple()) {
      throw DeviceError("the MPI library did not grant MPI_THREAD_MULTIPLE, which the progress thread needs");
    }
    MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, size(), ranks_.data(), &group);
    auto* comm = new MPI_Comm(MPI_COMM_NULL);
    const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, comm);  // collective over the group only
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    if (rc != MPI_SUCCESS) {
      delete comm;
      throw DeviceError("MPI_Comm_create_group failed: " + mpi_error(rc));
    }
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
    comm_ = comm;
  }
  progress_thread_ = std::thread([this] { progress(); });
}

MpiCommunicator::~MpiCommunicator() {
  shutdown();
  if (comm_ == nullptr) return;
  auto* comm = static_cast<MPI_Comm*>(comm_);
  if (abandoned_ == 0) {
    MPI_Comm_free(comm);
    delete comm;
  } else {
    keep_forever(std::shared_ptr<MPI_Comm>(comm));  // abandoned requests still refer to it
  }
}

void MpiCommunicator::shutdown() {
  std::vector<std::unique_ptr<Request>> in_flight;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    in_flight.swap(active_);
  }
  wake_.notify_all();
  if (progress_thread_.joinable()) progress_thread_.join();
  if (in_flight.empty()) return;
  // Non-blocking collectives cannot be cancelled (MPI_Cancel and MPI_Request_free are erroneous on
  // them), and waiting may never end when a member died or failed before joining: give them up.
  spdlog::warn("MPI group of {} processes shut down with {} collective(s) in flight; abandoned (the job must end)",
               size(), in_flight.size());
  for (std::unique_ptr<Request>& r : in_flight) {
    r->pending.fail(std::make_exception_ptr(DeviceError(
        r->what + " was abandoned: its communicator shut down before every member finished it (a process failed)")));
    keep_forever(std::shared_ptr<Request>(std::move(r)));
    ++abandoned_;
  }
}

Pending MpiCommunicator::start(std::unique_ptr<Request> r, std::size_t calls,
                               const std::function<int(std::size_t, void*)>& issue) {
  Pending pending = r->pending;
  std::lock_guard lock(mutex_);  // MPI calls are serialised with the progress thread's tests
  if (stopping_) throw DeviceError(r->what + " after its communicator shut down (a process failed)");
  if (comm_ == nullptr || calls == 0) {  // a group of one (the caller did the local part), or nothing to move
    pending.complete();
    return pending;
  }
  r->requests.assign(calls, MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < calls; ++i) {
    const int rc = issue(i, &r->requests[i]);
    if (rc == MPI_SUCCESS) continue;
    if (i == 0) throw DeviceError(r->what + " failed: " + mpi_error(rc));
    r->error = rc;  // the calls already issued still finish (the Pending fails then)
    break;
  }
  active_.push_back(std::move(r));
  wake_.notify_all();
  return pending;
}

// Tests every outstanding request until it completes; backs off while nothing finishes so the
// host's cores stay free for kernels. Returns at shutdown, whatever is still in flight.
void MpiCommunicator::progress() {
  auto idle = std::chrono::microseconds(20);
  for (;;) {
    std::vector<std::unique_ptr<Request>> finished;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !active_.empty(); });
      if (stopping_) return;  // shutdown() takes what is in flight
      for (auto it = active_.begin(); it != active_.end();) {
        Request& r = **it;
        bool done = true;
        for (MPI_Request& q : r.requests) {
          if (q == MPI_REQUEST_NULL) continue;
          int flag = 0;
          const int rc = MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
          if (rc != MPI_SUCCESS && r.error == MPI_SUCCESS) r.error = rc;
          if (rc != MPI_SUCCESS || !flag) done = false;
        }
        if (done || r.error != MPI_SUCCESS) {
          finished.push_back(std::move(*it));
          it = active_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& r : finished) {
      if (r->error == MPI_SUCCESS) {
        r->pending.complete();
        continue;
      }
      r->pending.fail(std::make_exception_ptr(DeviceError(fmt::format("{} failed: {}", r->what, mpi_error(r->error)))));
      if (std::any_of(r->requests.begin(), r->requests.end(), [](MPI_Request q) { return q != MPI_REQUEST_NULL; })) {
        keep_forever(std::shared_ptr<Request>(std::move(r)));  // its other calls may still be in MPI's hands
        std::lock_guard lock(mutex_);
        ++abandoned_;
      }
    }
    if (finished.empty()) {
      std::this_thread::sleep_for(idle);
      idle = std::min(idle * 2, std::chrono::microseconds(1000));
    } else {
      idle = std::chrono::microseconds(20);
    }
  }
}

Pending MpiCommunicator::all_reduce(std::span<float> data) {
  auto r = std::make_unique<Request>();
  r->what = fmt::format("MPI_Iallreduce of {} floats", data.size());
  const std::vector<mpi_chunks::Range> windows = mpi_chunks::windows(data.size(), max_count_);
  return start(std::move(r), windows.size(), [&](std::size_t i, void* req) {
    const mpi_chunks::Range w = windows[i];
    return MPI_Iallreduce(MPI_IN_PLACE, data.data() + w.begin, as_int(w.end - w.begin), MPI_FLOAT, MPI_SUM,
                          group_comm(comm_), as_request(req));
  });
}

MpiCommunicator::Split MpiCommunicator::shard_counts(std::size_t n, const Split& split, std::size_t mine,
                                                     const char* what) const {
  Split counts = split;
  if (split.empty()) {
    for (int i = 0; i < size(); ++i) {
      const auto [begin, end] = shard_range(n, size(), i);
      counts.push_back(end - begin);
    }
  }
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  if (counts.size() != static_cast<std::size_t>(size()) || total != n) {
    throw DeviceError(fmt::format("{}: a split of {} floats over {} members adds up to {}", what, n, size(), total));
  }
  const std::size_t own = counts[static_cast<std::size_t>(rank_)];
  if (mine != own) {
    throw DeviceError(fmt::format("{}: member {} holds {} elements, its shard of {} is {}", what, rank_, mine, n, own));
  }
  return counts;
}

namespace {
// Where this member's part of a v-chunk starts in its own shard, which starts at `shard_begin` in
// the whole buffer (0 for an empty part, which may lie outside the shard).
std::size_t offset_in_shard(const mpi_chunks::VChunk& c, int member, std::size_t shard_begin) {
  const auto m = static_cast<std::size_t>(member);
  if (c.counts[m] == 0) return 0;
  return c.window.begin + static_cast<std::size_t>(c.displacements[m]) - shard_begin;
}
std::size_t shard_begin(const MpiCommunicator::Split& counts, int member) {
  std::size_t begin = 0;
  for (int i = 0; i < member; ++i) begin += counts[static_cast<std::size_t>(i)];
  return begin;
}
}  // namespace

Pending MpiCommunicator::all_gather(std::span<const float> mine, std::span<float> all, Split split) {
  auto r = std::make_unique<Request>();
  r->what = fmt::format("MPI_Iallgatherv of {} floats", all.size());
  const Split counts = shard_counts(all.size(), split, mine.size(), "all_gather");
  if (comm_ == nullptr) std::copy(mine.begin(), mine.end(), all.begin());
  r->chunks = mpi_chunks::v_chunks(counts, max_count_);
  const std::size_t my_begin = shard_begin(counts, rank_);
  const std::vector<mpi_chunks::VChunk>& chunks = r->chunks;
  return start(std::move(r), chunks.size(), [&](std::size_t i, void* req) {
    const mpi_chunks::VChunk& c = chunks[i];
    const int my_count = c.counts[static_cast<std::size_t>(rank_)];
    return MPI_Iallgatherv(mine.data() + offset_in_shard(c, rank_, my_begin), my_count, MPI_FLOAT,
                           all.data() + c.window.begin, c.counts.data(), c.displacements.data(), MPI_FLOAT,
                           group_comm(comm_), as_request(req));
  });
}

Pending MpiCommunicator::reduce_scatter(std::span<const float> all, std::span<float> mine, Split split) {
  auto r = std::make_unique<Request>();
  r->what = fmt::format("MPI_Ireduce_scatter of {} floats", all.size());
  const Split counts = shard_counts(all.size(), split, mine.size(), "reduce_scatter");
  if (comm_ == nullptr) std::copy(all.begin(), all.end(), mine.begin());  // a group of one keeps everything
  r->chunks = mpi_chunks::v_chunks(counts, max_count_);
  const std::size_t my_begin = shard_begin(counts, rank_);
  const std::vector<mpi_chunks::VChunk>& chunks = r->chunks;
  return start(std::move(r), chunks.size(), [&](std::size_t i, void* req) {
    const mpi_chunks::VChunk& c = chunks[i];
    return MPI_Ireduce_scatter(all.data() + c.window.begin, mine.data() + offset_in_shard(c, rank_, my_begin),
                               c.counts.data(), MPI_FLOAT, MPI_SUM, group_comm(comm_), as_request(req));
  });
}

Pending MpiCommunicator::broadcast(std::span<float> data, int root) {
  if (root < 0 || root >= size()) throw ConfigError(fmt::format("broadcast root {} is not in a group of {}", root, size()));
  auto r = std::make_unique<Request>();
  r->what = fmt::format("MPI_Ibcast of {} floats from member {}", data.size(), root);
  const std::vector<mpi_chunks::Range> windows = mpi_chunks::windows(data.size(), max_count_);
  return start(std::move(r), windows.size(), [&](std::size_t i, void* req) {
    const mpi_chunks::Range w = windows[i];
    return MPI_Ibcast(data.data() + w.begin, as_int(w.end - w.begin), MPI_FLOAT, root, group_comm(comm_),
                      as_request(req));
  });
}

}  // namespace paxocl::collectives
