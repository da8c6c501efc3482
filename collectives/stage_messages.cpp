#include "collectives/stage_messages.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::collectives {

namespace {
MPI_Comm& comm_of(void* comm) { return *static_cast<MPI_Comm*>(comm); }

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw DeviceError(fmt::format("{} between pipeline stages failed: {}", call, std::string(text, static_cast<std::size_t>(length))));
}

int message_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw DeviceError(fmt::format("a pipeline message of {} bytes exceeds MPI's int count; use smaller microbatches", bytes));
  }
  return static_cast<int>(bytes);
}
}  // namespace

struct StageMessages::Outgoing {
  Message message;
  MPI_Request request = MPI_REQUEST_NULL;
};

StageMessages::StageMessages(const ProcessWorld& world) : rank_(world.rank()) {
  if (!world.uses_mpi()) return;
  if (world.size() > 1 && !world.thread_multiple()) {
    throw DeviceError("pipeline stages over processes need MPI_THREAD_MULTIPLE, which this MPI did not grant");
  }
  auto* comm = new MPI_Comm(MPI_COMM_NULL);
  const int rc = MPI_Comm_dup(MPI_COMM_WORLD, comm);
  if (rc != MPI_SUCCESS) {
    delete comm;
    check_mpi(rc, "MPI_Comm_dup");
  }
  MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
  comm_ = comm;
}

StageMessages::~StageMessages() {
  try {
    wait_for_sends();
  } catch (...) {  // a destructor does not throw; the job is ending with the error that got here
  }
  if (comm_ != nullptr) {
    MPI_Comm_free(&comm_of(comm_));
    delete static_cast<MPI_Comm*>(comm_);
  }
}

void StageMessages::send(int process, int channel, Message message) {
  if (process == rank_) {
    {
      std::lock_guard lock(mutex_);
      mailbox_[channel].push_back(std::move(message));
    }
    arrived_.notify_all();
    return;
  }
  if (comm_ == nullptr) throw std::logic_error("StageMessages: a message to another process without MPI");
  auto out = std::make_unique<Outgoing>();
  out->message = std::move(message);
  check_mpi(MPI_Isend(out->message.data(), message_count(out->message.size()), MPI_BYTE, process, channel,
                      comm_of(comm_), &out->request),
            "MPI_Isend");
  std::lock_guard lock(mutex_);
  std::erase_if(outgoing_, [](std::unique_ptr<Outgoing>& o) {  // those MPI is done with
    int done = 0;
    MPI_Test(&o->request, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
  outgoing_.push_back(std::move(out));
}

StageMessages::Message StageMessages::receive(int from_process, int channel) {
  if (from_process == rank_) {
    std::unique_lock lock(mutex_);
    std::deque<Message>& queue = mailbox_[channel];
    arrived_.wait(lock, [&] { return !queue.empty() || aborted_; });
    if (aborted_) std::rethrow_exception(aborted_);
    Message message = std::move(queue.front());
    queue.pop_front();
    return message;
  }
  if (comm_ == nullptr) throw std::logic_error("StageMessages: a message from another process without MPI");
  // Polled rather than blocking, so that abort() can end the wait.
  MPI_Status status;
  for (auto pause = std::chrono::microseconds(20);; pause = std::min(2 * pause, std::chrono::microseconds(1000))) {
    int found = 0;
    check_mpi(MPI_Iprobe(from_process, channel, comm_of(comm_), &found, &status), "MPI_Iprobe");
    if (found != 0) break;
    {
      std::lock_guard lock(mutex_);
      if (aborted_) std::rethrow_exception(aborted_);
    }
    std::this_thread::sleep_for(pause);
  }
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  Message message(static_cast<std::size_t>(bytes));
  check_mpi(MPI_Recv(message.data(), bytes, MPI_BYTE, from_process, channel, comm_of(comm_), MPI_STATUS_IGNORE),
            "MPI_Recv");
  return message;
}

void StageMessages::abort(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    if (!aborted_) aborted_ = error;
  }
  arrived_.notify_all();
}

void StageMessages::reset() {
  std::lock_guard lock(mutex_);
  aborted_ = nullptr;
  mailbox_.clear();
}

void StageMessages::wait_for_sends() {
  std::lock_guard lock(mutex_);
  for (auto& o : outgoing_) check_mpi(MPI_Wait(&o->request, MPI_STATUS_IGNORE), "MPI_Wait");
  outgoing_.clear();
}

}  // namespace paxocl::collectives
