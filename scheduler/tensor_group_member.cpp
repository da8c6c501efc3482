#include "scheduler/tensor_group_member.h"

#include <stdexcept>

namespace paxocl::scheduler {

TensorGroupMember::TensorGroupMember(collectives::TensorCommunicator& comm, int member, int rank, int size,
                                     kernels::DeviceRuntime& runtime)
    : comm_(comm), member_(member), rank_(rank), size_(size), runtime_(runtime) {}

int TensorGroupMember::contribute(device::Buffer<float> buffer, std::size_t n, Open open) {
  device::Queue& queue = runtime_.queue();
  device::Event ready = queue.marker();
  queue.flush();  // the communication side waits on the marker: it must reach the device
  open.pending = comm_.contribute(member_, std::move(buffer), n, std::move(ready));
  open.n = n;
  const int ticket = next_ticket_++;
  open_.emplace(ticket, std::move(open));
  return ticket;
}

int TensorGroupMember::start_sum(device::Buffer<float>& x, std::size_t n) { return contribute(x, n, Open{}); }

int TensorGroupMember::start_sum(device::TypedBuffer& x, std::size_t n) {
  if (x.dtype() == device::DType::kF32) return contribute(x.floats(), n, Open{});
  Open open;
  if (!spare_scratch_.empty() && spare_scratch_.back().count() >= n) {
    open.scratch = std::move(spare_scratch_.back());
    spare_scratch_.pop_back();
  } else {
    open.scratch = device::Buffer<float>(runtime_.device().context(), n, "tensor sum scratch");
  }
  runtime_.kernels().cast.to_float(open.scratch, x, 0, n);
  open.cast_back = &x;
  device::Buffer<float> scratch = open.scratch;
  return contribute(std::move(scratch), n, std::move(open));
}

void TensorGroupMember::finish_sum(int ticket) {
  const auto it = open_.find(ticket);
  if (it == open_.end()) throw std::logic_error("TensorGroupMember::finish_sum of a sum not started");
  Open& open = it->second;
  device::Queue& queue = runtime_.queue();
  const device::Event done = open.pending.device_event(runtime_.device().context());
  queue.wait_for(std::span<const device::Event>(&done, 1));
  if (open.cast_back != nullptr) {
    runtime_.kernels().cast.to_act(*open.cast_back, open.scratch, 0, open.n);
    spare_scratch_.push_back(std::move(open.scratch));
  }
  open_.erase(it);
}

}  // namespace paxocl::scheduler
