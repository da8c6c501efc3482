#include "kernels_cl/split_k.h"

#include <span>
#include <vector>

namespace paxocl::kernels {

cl_mem SplitPartials::reserve(device::Device& device, std::size_t count, const char* name) {
  if (buffer_.count() < count) {
    buffer_ = device::Buffer<float>(device.context(), count, name);
    // Zeroed once, from the host: every element is written before the sum reads it, but Oclgrind's
    // --uninitialized counts only host writes as initialising a buffer (not a fill, not a kernel's
    // stores) and would flag every read of the partials.
    const std::vector<float> zeros(buffer_.count(), 0.0f);
    device.queue().write(buffer_, std::span<const float>(zeros));
  }
  return buffer_.get();
}

SplitProducts split_products(const GemmShape& s, std::size_t splits, const GemmOperand& a, const GemmOperand& b,
                             cl_mem partials) {
  const std::size_t kc = s.k / splits;
  SplitProducts p{GemmShape{s.a, s.b, s.m, s.n, kc, splits}, a, b,
                  GemmOperand{partials, 0, s.n, s.m * s.n, device::DType::kF32}};
  p.a.batch_stride = s.a == Transpose::kNo ? kc : kc * a.ld;  // A (m, k) or A^T stored (k, m)
  p.b.batch_stride = s.b == Transpose::kNo ? kc * b.ld : kc;  // B (k, n) or B^T stored (n, k)
  return p;
}

}  // namespace paxocl::kernels
