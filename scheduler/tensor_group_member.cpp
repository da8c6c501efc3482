#include "scheduler/tensor_group_member.h"

#include <stdexcept>

namespace paxocl::scheduler {

using device::DType;

TensorGroupMember::TensorGroupMember(collectives::TensorCommunicator& comm, int member, int rank, int size,
                                     kernels::DeviceRuntime& runtime)
    : comm_(comm), member_(member), rank_(rank), size_(size), runtime_(runtime) {}

device::Event TensorGroupMember::ready() {
  device::Queue& queue = runtime_.queue();
  device::Event marker = queue.marker();
  queue.flush();  // the communication side waits on the marker: it must reach the device
  return marker;
}

device::Buffer<float> TensorGroupMember::take_scratch(std::size_t n, Open& open) {
  device::Buffer<float> b;
  for (auto it = spare_scratch_.begin(); it != spare_scratch_.end(); ++it) {
    if (it->count() >= n) {
      b = std::move(*it);
      spare_scratch_.erase(it);
      break;
    }
  }
  if (b.get() == nullptr) b = device::Buffer<float>(runtime_.device().context(), n, "tensor collective scratch");
  open.scratch.push_back(b);
  return b;
}

device::Buffer<float> TensorGroupMember::as_floats(const device::TypedBuffer& x, std::size_t n, Open& open) {
  if (x.dtype() == DType::kF32) return x.floats();
  device::Buffer<float> scratch = take_scratch(n, open);
  runtime_.kernels().cast.to_float(scratch, x, 0, n);
  return scratch;
}

device::Buffer<float> TensorGroupMember::output_floats(device::TypedBuffer& out, std::size_t n, Open& open) {
  if (out.dtype() == DType::kF32) return out.floats();
  open.result = take_scratch(n, open);
  open.cast_back = &out;
  open.n_back = n;
  return open.result;
}

int TensorGroupMember::open(Open open, collectives::Pending pending) {
  open.pending = std::move(pending);
  const int ticket = next_ticket_++;
  open_.emplace(ticket, std::move(open));
  return ticket;
}

int TensorGroupMember::start_sum(device::Buffer<float>& x, std::size_t n) {
  return open(Open{}, comm_.sum(member_, x, n, ready()));
}

int TensorGroupMember::start_sum(device::TypedBuffer& x, std::size_t n) {
  Open o;
  device::Buffer<float> floats = as_floats(x, n, o);
  if (x.dtype() != DType::kF32) {  // summed in place in the scratch, cast back at finish
    o.result = floats;
    o.cast_back = &x;
    o.n_back = n;
  }
  return open(std::move(o), comm_.sum(member_, floats, n, ready()));
}

int TensorGroupMember::start_reduce_scatter(device::TypedBuffer& full, device::TypedBuffer& shard, std::size_t n) {
  Open o;
  device::Buffer<float> in = as_floats(full, static_cast<std::size_t>(size_) * n, o);
  device::Buffer<float> out = output_floats(shard, n, o);
  return open(std::move(o), comm_.reduce_scatter(member_, std::move(in), std::move(out), n, ready()));
}

int TensorGroupMember::start_all_gather(const device::TypedBuffer& shard, device::TypedBuffer& full, std::size_t n) {
  Open o;
  device::Buffer<float> in = as_floats(shard, n, o);
  device::Buffer<float> out = output_floats(full, static_cast<std::size_t>(size_) * n, o);
  return open(std::move(o), comm_.all_gather(member_, std::move(in), std::move(out), n, ready()));
}

void TensorGroupMember::finish(int ticket) {
  const auto it = open_.find(ticket);
  if (it == open_.end()) throw std::logic_error("TensorGroupMember::finish of a collective not started");
  Open& open = it->second;
  device::Queue& queue = runtime_.queue();
  const device::Event done = open.pending.device_event(runtime_.device().context());
  queue.wait_for(std::span<const device::Event>(&done, 1));
  if (open.cast_back != nullptr) runtime_.kernels().cast.to_act(*open.cast_back, open.result, 0, open.n_back);
  for (device::Buffer<float>& s : open.scratch) spare_scratch_.push_back(std::move(s));
  open_.erase(it);
}

}  // namespace paxocl::scheduler
