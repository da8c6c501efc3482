#include "kernels_cl/elementwise.h"

#include <array>
#include <limits>

#include "device/errors.h"
#include "kernels_cl/program_loader.h"

namespace paxocl::kernels {

namespace {
cl_uint element_count(std::size_t n) {
  if (n > std::numeric_limits<cl_uint>::max()) throw DeviceError("element-wise kernels take at most 2^32-1 elements");
  return static_cast<cl_uint>(n);
}
}  // namespace

Elementwise::Elementwise(device::ProgramCache& cache, device::Device& device)
    : device_(device),
      program_(load_program(cache, device, "elementwise")),
      fill_(program_, "fill_f32"),
      axpy_(program_, "axpy_f32"),
      add_(program_, "add_f32"),
      scale_(program_, "scale_f32") {}

device::Event Elementwise::launch_1d(device::Kernel& kernel, std::size_t n, std::span<const device::Event> wait_for) {
  constexpr std::size_t kGroup = 64;
  const std::array<std::size_t, 1> global = {std::max<std::size_t>(kGroup, (n + kGroup - 1) / kGroup * kGroup)};
  return device_.queue().launch(kernel, global, {}, wait_for);
}

device::Event Elementwise::fill(device::Buffer<float>& out, float value, std::span<const device::Event> wait_for) {
  fill_.set_args(out, value, element_count(out.count()));
  return launch_1d(fill_, out.count(), wait_for);
}

device::Event Elementwise::axpy(device::Buffer<float>& y, const device::Buffer<float>& x, float alpha,
                                std::span<const device::Event> wait_for) {
  if (x.count() != y.count()) throw DeviceError("axpy: x and y differ in length");
  axpy_.set_args(y, x, alpha, element_count(y.count()));
  return launch_1d(axpy_, y.count(), wait_for);
}

device::Event Elementwise::add(device::Buffer<float>& out, const device::Buffer<float>& a,
                               const device::Buffer<float>& b, std::span<const device::Event> wait_for) {
  if (a.count() != out.count() || b.count() != out.count()) throw DeviceError("add: operands differ in length");
  add_.set_args(out, a, b, element_count(out.count()));
  return launch_1d(add_, out.count(), wait_for);
}

device::Event Elementwise::scale(device::Buffer<float>& x, float alpha, std::span<const device::Event> wait_for) {
  scale_.set_args(x, alpha, element_count(x.count()));
  return launch_1d(scale_, x.count(), wait_for);
}

}  // namespace paxocl::kernels
