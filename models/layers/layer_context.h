// What every layer needs to run a step on one device, and the parameter handle layers receive.
// Layers are built for a maximum (batch, seq_len) and run at the context's current sizes.
#pragma once

#include <cstddef>

#include "device/device.h"
#include "kernels_cl/gemm.h"
#include "kernels_cl/kernel_library.h"

namespace paxocl::models {

using FloatBuffer = device::Buffer<float>;

struct LayerContext {
  device::Device& device;
  kernels::KernelLibrary& kernels;
  kernels::Gemm& gemm;
  std::size_t batch = 0;    // B of the current step
  std::size_t seq_len = 0;  // T of the current step
  std::size_t rows() const { return batch * seq_len; }  // N = B * T
};

// One parameter tensor: its values and its gradient (views into the model's flat buffers).
struct Param {
  FloatBuffer value;
  FloatBuffer grad;
};

// A fresh device buffer of `count` floats.
inline FloatBuffer make_buffer(const device::Device& device, std::size_t count, const std::string& name) {
  return FloatBuffer(device.context(), count, name);
}

}  // namespace paxocl::models
