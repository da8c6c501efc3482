#include "models/layers/sequence_parallel.h"

#include <stdexcept>

#include <fmt/format.h>

namespace paxocl::models {

SequenceParallel::SequenceParallel(const device::Device& device, device::DType act, std::size_t max_rows,
                                   std::size_t dims, int size)
    : gathered_input(make_buffer(device, act, max_rows * dims, "sequence.gathered_input")),
      gathered_gradient(make_buffer(device, act, max_rows * dims, "sequence.gathered_gradient")),
      stream_input(make_buffer(device, act, shard_rows(max_rows, size) * dims, "sequence.stream_input")),
      delta(make_buffer(device, act, shard_rows(max_rows, size) * dims, "sequence.delta")),
      packed_gradients_(make_buffer(device, 4 * dims, "sequence.packed_gradients")),
      earlier_gradients_(make_buffer(device, 4 * dims, "sequence.earlier_gradients")) {}

namespace {

std::size_t packed_size(const std::vector<FloatBuffer>& gradients, std::size_t room) {
  std::size_t n = 0;
  for (const FloatBuffer& g : gradients) n += g.count();
  if (n > room) throw std::logic_error(fmt::format("SequenceParallel: {} gradient floats, room for {}", n, room));
  return n;
}

}  // namespace

void SequenceParallel::begin_gradients(LayerContext& ctx, const std::vector<FloatBuffer>& gradients) {
  packed_size(gradients, earlier_gradients_.count());
  device::Queue& q = ctx.device.queue();
  std::size_t at = 0;
  for (const FloatBuffer& g : gradients) {
    q.copy(g, 0, earlier_gradients_, at, g.count());
    FloatBuffer zeroed = g;
    ctx.kernels.elementwise.fill(zeroed, 0.0f);
    at += g.count();
  }
}

void SequenceParallel::sum_gradients(LayerContext& ctx, const std::vector<FloatBuffer>& gradients) {
  device::Queue& q = ctx.device.queue();
  const std::size_t n = packed_size(gradients, packed_gradients_.count());
  std::size_t at = 0;
  for (const FloatBuffer& g : gradients) {
    q.copy(g, 0, packed_gradients_, at, g.count());
    at += g.count();
  }
  ctx.tensor->sum(packed_gradients_, n);
  // earlier + this pass's sum: the order a gradient kernel accumulates in (g += contribution).
  ctx.kernels.elementwise.add(packed_gradients_, earlier_gradients_, packed_gradients_, n);
  at = 0;
  for (const FloatBuffer& g : gradients) {
    q.copy(packed_gradients_, at, g, 0, g.count());
    at += g.count();
  }
}

void SequenceParallel::take_own_rows(LayerContext& ctx, const ActBuffer& full, ActBuffer& shard, std::size_t n) {
  const std::size_t element = device::dtype_size(full.dtype());
  ctx.device.queue().copy(full.storage(), static_cast<std::size_t>(ctx.tensor->rank()) * n * element, shard.storage(), 0,
                          n * element);
}

}  // namespace paxocl::models
