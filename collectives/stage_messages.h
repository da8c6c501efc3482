// StageMessages: point-to-point messages between pipeline stages (scheduler/pipeline_step.h), host
// memory to host memory. A message goes to a process and a channel: the channel names the
// receiving device (its local index) and what it carries, so each channel has one sender. Between
// devices of this process a message waits in a mailbox; to another process it is an MPI_Isend
// (send returns at once and keeps the message until MPI has sent it), received by a blocking
// MPI_Recv on a communicator of its own (the channel is the tag). Messages on a channel arrive in
// the order they were sent (a FIFO per channel; MPI's non-overtaking rule), which is all the
// pipeline needs: each stage sends its microbatches in order.
// Thread-safe: each stage's device runs on a thread of its own. A receive blocks until its
// message arrives or abort() is called (a stage of this process failed: every receive waiting or
// to come throws, so the threads end); a process that dies ends the job through the launcher
// (mpirun / srun), so no receive waits for ever.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "collectives/process_world.h"

namespace paxocl::collectives {

class StageMessages {
 public:
  using Message = std::vector<std::byte>;
  // Collective over the world when it uses MPI (the communicator is duplicated from the world's).
  explicit StageMessages(const ProcessWorld& world);
  ~StageMessages();  // waits for the sends still in flight
  StageMessages(const StageMessages&) = delete;
  StageMessages& operator=(const StageMessages&) = delete;

  void send(int process, int channel, Message message);
  Message receive(int from_process, int channel);
  void wait_for_sends();  // every MPI send so far has left this process's buffers
  void abort(std::exception_ptr error);  // receives throw `error` from now on, until reset()
  void reset();

 private:
  struct Outgoing;
  int rank_;
  void* comm_ = nullptr;  // MPI_Comm (null without MPI)
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<int, std::deque<Message>> mailbox_;  // channel -> messages from this process
  std::vector<std::unique_ptr<Outgoing>> outgoing_;
  std::exception_ptr aborted_;  // guarded by mutex_
};

}  // namespace paxocl::collectives
