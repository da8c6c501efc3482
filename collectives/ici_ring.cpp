#include "collectives/ici_ring.h"

#include <algorithm>

#include <fmt/format.h>

#include "collectives/mpi_communicator.h"
#include "common/errors.h"

namespace paxocl::collectives {

namespace {
constexpr const char* kAccumulateSource = R"CL(
__kernel void ring_accumulate(__global float* dst, const uint offset, __global const float* src, const uint n) {
  const size_t i = get_global_id(0);
  if (i < n) dst[offset + i] += src[i];
}
)CL";

using Chunk = std::pair<std::size_t, std::size_t>;
Chunk chunk(std::size_t n, int parts, int index) {
  return MpiCommunicator::shard_range(n, parts, ((index % parts) + parts) % parts);
}
}  // namespace

bool IciRing::possible(const std::vector<device::Device*>& members) {
  return std::all_of(members.begin(), members.end(),
                     [&](device::Device* d) { return d->context().get() == members.front()->context().get(); });
}

IciRing::IciRing(const std::vector<device::Device*>& members, std::vector<device::Queue*> queues)
    : context_(&members.front()->context()), queues_(std::move(queues)) {
  if (!possible(members)) throw ConfigError("the ICI ring needs devices that share one OpenCL context");
  device::ProgramCache cache;
  for (device::Device* d : members) {
    accumulate_.emplace_back(cache.build(d->context(), d->info(), "ici_ring", kAccumulateSource), "ring_accumulate");
  }
}

IciRing::Buffers IciRing::scratch(std::size_t n) const {
  Buffers b;
  for (int m = 0; m < size(); ++m) b.emplace_back(*context_, std::max<std::size_t>(1, n), "ICI ring scratch");
  return b;
}

void IciRing::finish() {
  for (device::Queue* q : queues_) q->finish();
}

void IciRing::copy(int member, const device::Buffer<float>& src, std::size_t src_offset,
                   const device::Buffer<float>& dst, std::size_t dst_offset, std::size_t count) {
  if (count == 0) return;
  queues_[static_cast<std::size_t>(member)]->copy(src, src_offset, dst, dst_offset, count).wait();
}

void IciRing::reduce_scatter_in_place(const Buffers& full, std::size_t n) {
  const int P = size();
  if (P == 1) return;
  const Buffers received = scratch(MpiCommunicator::shard_range(n, P, 0).second);  // the largest chunk
  std::vector<device::Event> last(static_cast<std::size_t>(P));  // the last command writing member m's buffer
  for (int s = 0; s < P - 1; ++s) {
    std::vector<device::Event> next = last;
    for (int m = 0; m < P; ++m) {
      const auto r = static_cast<std::size_t>((m + 1) % P);
      const auto [b, e] = chunk(n, P, m - s - 1);
      if (e == b) continue;
      device::Queue& q = *queues_[r];
      std::vector<device::Event> after;
      if (last[static_cast<std::size_t>(m)]) after.push_back(last[static_cast<std::size_t>(m)]);
      q.copy(full[static_cast<std::size_t>(m)], b, received[r], 0, e - b, after);  // in order before the add
      device::Kernel& k = accumulate_[r];
      k.set_args(full[r], static_cast<cl_uint>(b), received[r], static_cast<cl_uint>(e - b));
      const std::size_t global[] = {e - b};
      next[r] = q.launch(k, global);
      q.flush();
    }
    last = std::move(next);
  }
  finish();
}

void IciRing::all_gather_in_place(const Buffers& full, std::size_t n) {
  const int P = size();
  std::vector<device::Event> last(static_cast<std::size_t>(P));
  for (int s = 0; s < P - 1; ++s) {
    std::vector<device::Event> next = last;
    for (int m = 0; m < P; ++m) {
      const auto r = static_cast<std::size_t>((m + 1) % P);
      const auto [b, e] = chunk(n, P, m - s);
      if (e == b) continue;
      std::vector<device::Event> after;
      if (last[static_cast<std::size_t>(m)]) after.push_back(last[static_cast<std::size_t>(m)]);
      next[r] = queues_[r]->copy(full[static_cast<std::size_t>(m)], b, full[r], b, e - b, after);
      queues_[r]->flush();
    }
    last = std::move(next);
  }
  finish();
}

void IciRing::broadcast(const Buffers& buffers, std::size_t n, int root) {
  if (n == 0) return;
  for (int s = 1; s < size(); ++s) {  // root -> root+1 -> ...: each hop after the previous
    const int from = (root + s - 1) % size(), to = (root + s) % size();
    copy(to, buffers[static_cast<std::size_t>(from)], 0, buffers[static_cast<std::size_t>(to)], 0, n);
  }
}

}  // namespace paxocl::collectives
