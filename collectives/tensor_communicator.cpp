#include "collectives/tensor_communicator.h"

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::collectives {

TensorCommunicator::TensorCommunicator(std::vector<device::Device*> local, const ProcessWorld& world,
                                       std::vector<int> process_ranks)
    : mpi_(world, std::move(process_ranks)), ici_(std::move(local)), next_round_(static_cast<std::size_t>(ici_.size()), 0) {}

TensorCommunicator::~TensorCommunicator() {
  abort(std::make_exception_ptr(
      DeviceError("the tensor group was shut down before every member reached its collective")));
  mpi_.shutdown();
}

Pending TensorCommunicator::sum(int member, device::Buffer<float> buffer, std::size_t n, device::Event ready) {
  device::Buffer<float> output = buffer;
  return arrive(member, Kind::kSum, std::move(buffer), std::move(output), n, std::move(ready));
}

Pending TensorCommunicator::reduce_scatter(int member, device::Buffer<float> full, device::Buffer<float> shard,
                                           std::size_t n, device::Event ready) {
  return arrive(member, Kind::kReduceScatter, std::move(full), std::move(shard), n, std::move(ready));
}

Pending TensorCommunicator::all_gather(int member, device::Buffer<float> shard, device::Buffer<float> full,
                                       std::size_t n, device::Event ready) {
  return arrive(member, Kind::kAllGather, std::move(shard), std::move(full), n, std::move(ready));
}

Pending TensorCommunicator::arrive(int member, Kind kind, device::Buffer<float> input, device::Buffer<float> output,
                                   std::size_t n, device::Event ready) {
  std::lock_guard lock(mutex_);
  if (failed_) std::rethrow_exception(failed_);
  const long round = next_round_.at(static_cast<std::size_t>(member))++;
  auto [it, first] = open_.try_emplace(round);
  Round& r = it->second;
  if (first) {
    r.kind = kind;
    r.inputs.resize(static_cast<std::size_t>(ici_.size()));
    r.outputs.resize(static_cast<std::size_t>(ici_.size()));
    r.n = n;
  } else if (r.kind != kind || r.n != n) {
    throw std::logic_error(fmt::format("tensor group collective {}: member {} makes another call than its peers "
                                       "(kind {} of {} floats, theirs kind {} of {})",
                                       round, member, static_cast<int>(kind), n, static_cast<int>(r.kind), r.n));
  }
  r.inputs[static_cast<std::size_t>(member)] = std::move(input);
  r.outputs[static_cast<std::size_t>(member)] = std::move(output);
  r.ready.push_back(std::move(ready));
  Pending pending = r.pending;
  if (++r.arrived == ici_.size()) {
    issue(r);
    open_.erase(it);
  }
  return pending;
}

void TensorCommunicator::issue(Round& r) {
  const bool across = mpi_.size() > 1;
  switch (r.kind) {
    case Kind::kSum: {
      IciCommunicator::HostStage stage;
      if (across) stage = [this](std::span<float> sum) { mpi_.all_reduce(sum).wait(); };
      ici_.all_reduce(std::move(r.inputs), r.n, std::move(r.ready), std::move(stage), r.pending);
      return;
    }
    case Kind::kReduceScatter:
      if (!across) {
        ici_.reduce_scatter(std::move(r.inputs), std::move(r.outputs), static_cast<std::size_t>(size()) * r.n,
                            std::move(r.ready), r.pending, IciCommunicator::Inputs::kConsumed);
      } else {
        ici_.stage([this, in = r.inputs, out = r.outputs, n = r.n] { reduce_scatter_across(in, out, n); },
                   std::move(r.ready), "reduce_scatter", r.pending);
      }
      return;
    case Kind::kAllGather:
      if (!across) {
        ici_.all_gather(std::move(r.inputs), std::move(r.outputs), static_cast<std::size_t>(size()) * r.n,
                        std::move(r.ready), r.pending);
      } else {
        ici_.stage([this, in = r.inputs, out = r.outputs, n = r.n] { all_gather_across(in, out, n); },
                   std::move(r.ready), "all_gather", r.pending);
      }
      return;
  }
}

// The local members' full buffers summed on the host (member order), MPI reduce-scatter of the
// sum over the processes (this process keeps its members' shards, consecutive), each member its shard.
void TensorCommunicator::reduce_scatter_across(const IciCommunicator::Buffers& full,
                                               const IciCommunicator::Buffers& shards, std::size_t n) {
  const auto members = static_cast<std::size_t>(ici_.size());
  const std::vector<float> sum = ici_.sum_members(full, static_cast<std::size_t>(size()) * n);
  std::vector<float> chunk(members * n);
  mpi_.reduce_scatter(sum, chunk).wait();
  for (std::size_t m = 0; m < members; ++m) {
    ici_.write(static_cast<int>(m), shards[m], 0, std::span<const float>(chunk).subspan(m * n, n));
  }
}

// The local members' shards concatenated on the host, MPI all-gather of that chunk over the
// processes (in process order), the whole written to every member.
void TensorCommunicator::all_gather_across(const IciCommunicator::Buffers& shards,
                                           const IciCommunicator::Buffers& full, std::size_t n) {
  const auto members = static_cast<std::size_t>(ici_.size());
  std::vector<float> chunk(members * n), all(static_cast<std::size_t>(size()) * n);
  for (std::size_t m = 0; m < members; ++m) {
    ici_.read(static_cast<int>(m), shards[m], 0, std::span<float>(chunk).subspan(m * n, n));
  }
  mpi_.all_gather(chunk, all).wait();
  for (std::size_t m = 0; m < members; ++m) ici_.write(static_cast<int>(m), full[m], 0, all);
}

void TensorCommunicator::abort(std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  if (!failed_) failed_ = error;
  for (auto& [round, r] : open_) r.pending.fail(error);
  open_.clear();
}

}  // namespace paxocl::collectives
