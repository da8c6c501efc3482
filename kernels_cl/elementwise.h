// Elementwise: launchers for kernels_cl/elementwise.cl on one device. All operate on whole
// buffers of n floats; each call enqueues one kernel and returns its event.
#pragma once

#include <span>

#include "device/device.h"
#include "device/program_cache.h"

namespace paxocl::kernels {

class Elementwise {
 public:
  Elementwise(device::ProgramCache& cache, device::Device& device);

  device::Event fill(device::Buffer<float>& out, float value, std::span<const device::Event> wait_for = {});
  device::Event axpy(device::Buffer<float>& y, const device::Buffer<float>& x, float alpha,
                     std::span<const device::Event> wait_for = {});
  device::Event add(device::Buffer<float>& out, const device::Buffer<float>& a, const device::Buffer<float>& b,
                    std::span<const device::Event> wait_for = {});
  device::Event scale(device::Buffer<float>& x, float alpha, std::span<const device::Event> wait_for = {});

 private:
  device::Event launch_1d(device::Kernel& kernel, std::size_t n, std::span<const device::Event> wait_for);

  device::Device& device_;
  device::Program program_;
  device::Kernel fill_, axpy_, add_, scale_;
};

}  // namespace paxocl::kernels
