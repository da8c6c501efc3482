// TensorGroups: this process's side of tensor parallelism, shared by the step programs that split
// tensors (TensorParallelStep; FsdpStep with a tensor axis): each local device's place on the
// mesh's tensor axis, the tensor groups' communicators (one per group with members here), the
// TensorGroup each device's model sums through, host threads to run passes on (a pass waits inside
// for its group's other members, so members must not share a thread that blocks), and whole-model
// images from the devices' parts.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/mpi_communicator.h"
#include "collectives/tensor_communicator.h"
#include "device/mesh.h"
#include "models/model.h"
#include "scheduler/step_trace.h"
#include "scheduler/tensor_group_member.h"

namespace paxocl::scheduler {

class TensorGroups {
 public:
  struct Place {
    int tensor_rank = 0;         // its part of the model (models::TensorShard)
    int group = 0;               // its tensor group among this process's
    int member = 0;              // its index among the group's local devices
    bool first_replica = false;  // data coordinate 0: its parts stand for every data replica's
  };
  // `devices` and `runtimes`: this process's, by local index.
  TensorGroups(const device::Mesh& mesh, const collectives::ProcessWorld& world, std::vector<device::Device*> devices,
               std::vector<kernels::DeviceRuntime*> runtimes);
  ~TensorGroups();

  int size() const { return size_; }  // the tensor axis
  const Place& place(std::size_t d) const { return places_.at(d); }
  models::TensorShard shard(std::size_t d) const { return {places_.at(d).tensor_rank, size_}; }
  std::size_t groups() const { return comms_.size(); }
  // The model on local device d sums through its group from now on (and stops at destruction);
  // several models of one device (pipeline stages' instances) share its member, in turn.
  void attach(std::size_t d, models::Model& model);
  // Every group's sums not yet issued fail with `error` (no member waits for ever on a failed one).
  void abort(std::exception_ptr error);

  // Runs work(i) for i in [0, count) on threads of their own and joins them; if one throws, every
  // group's sums not yet issued fail (so no member waits forever) and its error is rethrown here.
  void run_threads(std::size_t count, const std::function<void(std::size_t)>& work);
  // Element-wise sum over the job's processes (each element nonzero on one process only: exact).
  void sum_over_job(std::vector<float>& image);

  void set_tracing(bool on);
  void append_trace(std::vector<TraceEvent>& events, long step);

 private:
  int size_ = 1;
  std::vector<Place> places_;
  std::vector<std::unique_ptr<collectives::TensorCommunicator>> comms_;  // per local group
  std::vector<std::unique_ptr<TensorGroupMember>> members_;              // per local device
  std::vector<std::vector<models::Model*>> attached_;  // per local device
  std::unique_ptr<collectives::MpiCommunicator> job_;  // every process: whole images
};

}  // namespace paxocl::scheduler
