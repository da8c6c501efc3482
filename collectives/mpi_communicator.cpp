#include "collectives/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "device/errors.h"

namespace paxocl::collectives {

struct MpiCommunicator::Request {
  MPI_Request request = MPI_REQUEST_NULL;
  Pending pending;
  std::vector<int> counts, displacements;  // kept alive for the v-variants
  std::string what;
};

namespace {
std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}
}  // namespace

std::pair<std::size_t, std::size_t> MpiCommunicator::shard_range(std::size_t n, int parts, int index) {
  const auto p = static_cast<std::size_t>(parts), i = static_cast<std::size_t>(index);
  const std::size_t base = n / p, extra = n % p;
  const std::size_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}

MpiCommunicator::MpiCommunicator(const ProcessWorld& world, std::vector<int> ranks) : ranks_(std::move(ranks)) {
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
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  progress_thread_.join();
  if (comm_ != nullptr) {
    auto* comm = static_cast<MPI_Comm*>(comm_);
    MPI_Comm_free(comm);
    delete comm;
  }
}

Pending MpiCommunicator::start(std::unique_ptr<Request> r, const std::function<int(void*)>& issue) {
  Pending pending = r->pending;
  if (comm_ == nullptr) {  // a group of one: the caller already did the local part
    pending.complete();
    return pending;
  }
  std::lock_guard lock(mutex_);  // MPI calls are serialised with the progress thread's tests
  const int rc = issue(&r->request);
  if (rc != MPI_SUCCESS) throw DeviceError(r->what + " failed: " + mpi_error(rc));
  active_.push_back(std::move(r));
  wake_.notify_all();
  return pending;
}

// Tests every outstanding request until it completes; backs off while nothing finishes so the
// host's cores stay free for kernels.
void MpiCommunicator::progress() {
  auto idle = std::chrono::microseconds(20);
  for (;;) {
    std::vector<std::unique_ptr<Request>> finished;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !active_.empty(); });
      if (active_.empty()) return;  // stopping with nothing in flight
      for (auto it = active_.begin(); it != active_.end();) {
        int flag = 0;
        const int rc = MPI_Test(&(*it)->request, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
          (*it)->pending.fail(std::make_exception_ptr(DeviceError(fmt::format("{} failed: {}", (*it)->what, mpi_error(rc)))));
          it = active_.erase(it);
        } else if (flag) {
          finished.push_back(std::move(*it));
          it = active_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& r : finished) r->pending.complete();
    if (finished.empty()) {
      std::this_thread::sleep_for(idle);
      idle = std::min(idle * 2, std::chrono::microseconds(1000));
    } else {
      idle = std::chrono::microseconds(20);
    }
  }
}

namespace {
MPI_Comm group_comm(void* comm) { return *static_cast<MPI_Comm*>(comm); }
MPI_Request* as_request(void* r) { return static_cast<MPI_Request*>(r); }
}  // namespace

Pending MpiCommunicator::all_reduce(std::span<float> data) {
  auto r = std::make_unique<Request>();
  r->what = fmt::format("MPI_Iallreduce of {} floats", data.size());
  return start(std::move(r), [&](void* req) {
    return MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, group_comm(comm_),
                          as_request(req));
  });
}

void MpiCommunicator::set_split(Request& r, std::size_t n, const Split& split, std::size_t mine, const char* what) const {
  std::size_t at = 0;
  for (int i = 0; i < size(); ++i) {
    const auto [begin, end] = shard_range(n, size(), i);
    const std::size_t count = split.empty() ? end - begin : split.at(static_cast<std::size_t>(i));
    r.counts.push_back(static_cast<int>(count));
    r.displacements.push_back(static_cast<int>(at));
    at += count;
  }
  if ((!split.empty() && split.size() != static_cast<std::size_t>(size())) || at != n) {
    throw DeviceError(fmt::format("{}: a split of {} floats over {} members adds up to {}", what, n, size(), at));
  }
  const auto own = static_cast<std::size_t>(r.counts[static_cast<std::size_t>(rank_)]);
  if (mine != own) {
    throw DeviceError(fmt::format("{}: member {} holds {} elements, its shard of {} is {}", what, rank_, mine, n, own));
  }
}

Pending MpiCommunicator::all_gather(std::span<const float> mine, std::span<float> all, Split split) {
  auto r = std::make_unique<Request>();
  r->what = fmt::format("MPI_Iallgatherv of {} floats", all.size());
  set_split(*r, all.size(), split, mine.size(), "all_gather");
  if (comm_ == nullptr) std::copy(mine.begin(), mine.end(), all.begin());
  Request& req_data = *r;
  return start(std::move(r), [&](void* req) {
    return MPI_Iallgatherv(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all.data(), req_data.counts.data(),
                           req_data.displacements.data(), MPI_FLOAT, group_comm(comm_), as_request(req));
  });
}

Pending MpiCommunicator::reduce_scatter(std::span<const float> all, std::span<float> mine, Split split) {
  auto r = std::make_unique<Request>();
  r->what = fmt::format("MPI_Ireduce_scatter of {} floats", all.size());
  set_split(*r, all.size(), split, mine.size(), "reduce_scatter");
  if (comm_ == nullptr) std::copy(all.begin(), all.end(), mine.begin());  // a group of one keeps everything
  Request& req_data = *r;
  return start(std::move(r), [&](void* req) {
    return MPI_Ireduce_scatter(all.data(), mine.data(), req_data.counts.data(), MPI_FLOAT, MPI_SUM, group_comm(comm_),
                               as_request(req));
  });
}

Pending MpiCommunicator::broadcast(std::span<float> data, int root) {
  if (root < 0 || root >= size()) throw ConfigError(fmt::format("broadcast root {} is not in a group of {}", root, size()));
  auto r = std::make_unique<Request>();
  r->what = fmt::format("MPI_Ibcast of {} floats from member {}", data.size(), root);
  return start(std::move(r), [&](void* req) {
    return MPI_Ibcast(data.data(), static_cast<int>(data.size()), MPI_FLOAT, root, group_comm(comm_), as_request(req));
  });
}

}  // namespace paxocl::collectives
