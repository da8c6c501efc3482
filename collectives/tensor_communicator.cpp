#include "collectives/tensor_communicator.h"

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::collectives {

TensorCommunicator::TensorCommunicator(std::vector<device::Device*> local, const ProcessWorld& world,
                                       std::vector<int> process_ranks)
    : mpi_(world, std::move(process_ranks)), ici_(std::move(local)), next_round_(static_cast<std::size_t>(ici_.size()), 0) {}

TensorCommunicator::~TensorCommunicator() {
  abort(std::make_exception_ptr(DeviceError("the tensor group was shut down before every member reached its sum")));
  mpi_.shutdown();
}

Pending TensorCommunicator::contribute(int member, device::Buffer<float> buffer, std::size_t n, device::Event ready) {
  std::lock_guard lock(mutex_);
  if (failed_) std::rethrow_exception(failed_);
  const long round = next_round_.at(static_cast<std::size_t>(member))++;
  auto [it, first] = open_.try_emplace(round);
  Round& r = it->second;
  if (first) {
    r.buffers.resize(static_cast<std::size_t>(ici_.size()));
    r.n = n;
  } else if (r.n != n) {
    throw std::logic_error(fmt::format("tensor group sum {}: member {} sums {} floats, another {}", round, member, n, r.n));
  }
  r.buffers[static_cast<std::size_t>(member)] = std::move(buffer);
  r.ready.push_back(std::move(ready));
  Pending pending = r.pending;
  if (++r.arrived == ici_.size()) {
    IciCommunicator::HostStage across;
    if (mpi_.size() > 1) across = [this](std::span<float> sum) { mpi_.all_reduce(sum).wait(); };
    ici_.all_reduce(std::move(r.buffers), n, std::move(r.ready), std::move(across), pending);
    open_.erase(it);
  }
  return pending;
}

void TensorCommunicator::abort(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (!failed_) failed_ = error;
  for (auto& [round, r] : open_) r.pending.fail(error);
  open_.clear();
}

}  // namespace paxocl::collectives
