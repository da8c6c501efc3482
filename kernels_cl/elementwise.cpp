#include "kernels_cl/elementwise.h"

namespace paxocl::kernels {

namespace {
void require_length(std::size_t n, std::initializer_list<std::size_t> capacities, const char* op) {
  for (std::size_t c : capacities) {
    if (c < n) throw DeviceError(std::string(op) + ": a buffer is shorter than the " + std::to_string(n) + " elements asked for");
  }
}
}  // namespace

Elementwise::Elementwise(device::ProgramCache& cache, device::Device& device)
    : set_(cache, device, "elementwise", {"fill_f32", "axpy_f32", "add_f32", "scale_f32"}) {}

device::Event Elementwise::fill(device::Buffer<float>& out, float value) { return fill(out, value, out.count()); }

device::Event Elementwise::fill(device::Buffer<float>& out, float value, std::size_t n) {
  require_length(n, {out.count()}, "fill");
  return set_.launch_elements("fill_f32", n, out, value, u32(n));
}

device::Event Elementwise::axpy(device::Buffer<float>& y, const device::Buffer<float>& x, float alpha) {
  require_length(y.count(), {x.count()}, "axpy");
  return set_.launch_elements("axpy_f32", y.count(), y, x, alpha, u32(y.count()));
}

device::Event Elementwise::add(device::Buffer<float>& out, const device::Buffer<float>& a,
                               const device::Buffer<float>& b) {
  return add(out, a, b, out.count());
}

device::Event Elementwise::add(device::Buffer<float>& out, const device::Buffer<float>& a,
                               const device::Buffer<float>& b, std::size_t n) {
  require_length(n, {out.count(), a.count(), b.count()}, "add");
  return set_.launch_elements("add_f32", n, out, a, b, u32(n));
}

device::Event Elementwise::scale(device::Buffer<float>& x, float alpha) {
  return set_.launch_elements("scale_f32", x.count(), x, alpha, u32(x.count()));
}

}  // namespace paxocl::kernels
