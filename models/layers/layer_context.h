// What every layer needs to run a step on one device, and the parameter handle layers receive.
// Layers are built for a maximum (batch, seq_len) and run at the context's current sizes.
// Mixed precision (device/dtype.h): activations and their gradients are ActBuffers of the
// kernels' activation dtype; layers read weights through Param::compute (the same dtype) and
// accumulate float32 gradients into Param::grad.
#pragma once

#include <cstddef>
#include <string>

#include "device/device.h"
#include "device/typed_buffer.h"
#include "kernels_cl/gemm.h"
#include "kernels_cl/kernel_library.h"
#include "models/layers/tensor_group.h"

namespace paxocl::models {

using FloatBuffer = device::Buffer<float>;
using ActBuffer = device::TypedBuffer;

class SequenceParallel;  // sequence_parallel.h

struct LayerContext {
  device::Device& device;
  kernels::KernelLibrary& kernels;
  kernels::Gemm& gemm;
  std::size_t batch = 0;    // B of the current step
  std::size_t seq_len = 0;  // T of the current step
  TensorGroup* tensor = nullptr;  // tensor parallelism: the other holders of this replica; null: none
  // Sequence parallelism (with `tensor`): the residual stream is split by rows over the group and
  // these are the gathered workspaces; null: every member holds all rows.
  SequenceParallel* sequence = nullptr;
  std::size_t rows() const { return batch * seq_len; }  // N = B * T
  // The residual stream's rows this device holds (the norms and residual adds run on them): N, or
  // its sequence shard N / t. The model checks that t divides N.
  std::size_t stream_rows() const {
    return sequence != nullptr ? rows() / static_cast<std::size_t>(tensor->size()) : rows();
  }
};

// One parameter tensor: its float32 value and gradient (views into the model's flat buffers),
// and `compute`, the weight as a step reads it in the activation dtype: for float32 a view of
// `value` itself, otherwise the model's 16-bit copy, refreshed from `value` before it is read.
struct Param {
  FloatBuffer value;
  FloatBuffer grad;
  ActBuffer compute;
};

// A fresh device buffer of `count` floats.
inline FloatBuffer make_buffer(const device::Device& device, std::size_t count, const std::string& name) {
  return FloatBuffer(device.context(), count, name);
}
// A fresh device buffer of `count` elements of `dtype`.
inline ActBuffer make_buffer(const device::Device& device, device::DType dtype, std::size_t count,
                             const std::string& name) {
  return ActBuffer(device.context(), dtype, count, name);
}

// GEMM operands of a buffer: elements from `offset`, rows `ld` apart, matrices `batch_stride` apart.
inline kernels::GemmOperand operand(const ActBuffer& b, std::size_t offset, std::size_t ld,
                                    std::size_t batch_stride = 0) {
  return kernels::GemmOperand{b.get(), offset, ld, batch_stride, b.dtype()};
}
inline kernels::GemmOperand operand(const FloatBuffer& b, std::size_t offset, std::size_t ld,
                                    std::size_t batch_stride = 0) {
  return kernels::GemmOperand{b.get(), offset, ld, batch_stride, device::DType::kF32};
}

}  // namespace paxocl::models
