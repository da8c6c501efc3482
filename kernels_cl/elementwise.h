// Elementwise: launchers for kernels_cl/elementwise.cl. All operate on whole buffers of n floats.
#pragma once

#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

class Elementwise {
 public:
  Elementwise(device::ProgramCache& cache, device::Device& device);

  device::Event fill(device::Buffer<float>& out, float value);                                  // out = value
  device::Event axpy(device::Buffer<float>& y, const device::Buffer<float>& x, float alpha);    // y += alpha x
  device::Event add(device::Buffer<float>& out, const device::Buffer<float>& a,
                    const device::Buffer<float>& b);                                           // out = a + b
  device::Event scale(device::Buffer<float>& x, float alpha);                                   // x *= alpha

  // The same on the first n elements only (buffers sized for the largest batch).
  device::Event add(device::Buffer<float>& out, const device::Buffer<float>& a, const device::Buffer<float>& b,
                    std::size_t n);
  device::Event fill(device::Buffer<float>& out, float value, std::size_t n);

 private:
  KernelSet set_;
};

}  // namespace paxocl::kernels
