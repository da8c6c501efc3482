// Split k, shared by the GPU GEMMs that use it (DirectGemm, TensorCoreGemm): a single product whose
// C has too few blocks to keep the device busy (a weight gradient: m and n a layer's widths, k the
// tokens) runs as `splits` products over consecutive, equal k ranges into a float32 workspace
// (a batch whose operands step by k / splits along k), then one pass sums them in split order:
// deterministic, and C is rounded once.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "device/buffer.h"
#include "device/device.h"
#include "kernels_cl/gemm.h"

namespace paxocl::kernels {

inline constexpr std::size_t kSplitMinK = 256;                           // each split at least this deep
inline constexpr std::size_t kSplitMaxBytes = std::size_t{64} << 20;    // the float32 partials, at most

// The splits for shape `s` on a device of `compute_units` whose kernel covers C in blocks of
// block_m x block_n: doubled from 1 while C's blocks times the splits stay under 8 per compute
// unit, up to 16, each split at least kSplitMinK deep and a multiple of `k_multiple` (the kernel's
// aligned loads), the workspace within kSplitMaxBytes; 1 for batched products.
inline std::size_t split_k_count(const GemmShape& s, std::size_t block_m, std::size_t block_n,
                                 std::size_t compute_units, std::size_t k_multiple) {
  if (s.batch != 1 || s.m == 0 || s.n == 0) return 1;
  const std::size_t blocks = ((s.m + block_m - 1) / block_m) * ((s.n + block_n - 1) / block_n);
  const std::size_t want = 8 * std::max<std::size_t>(compute_units, 1);
  std::size_t splits = 1;
  for (std::size_t next = 2; next <= 16 && blocks * splits < want; next *= 2) {
    const bool deep = s.k % (k_multiple * next) == 0 && s.k / next >= kSplitMinK;
    if (!deep || next * s.m * s.n * sizeof(float) > kSplitMaxBytes) break;
    splits = next;
  }
  return splits;
}

// The float32 partials of split products, one buffer per GEMM object, grown on demand; queue order
// guards its reuse by the next product.
class SplitPartials {
 public:
  // A buffer of at least `count` floats (zeroed from the host when it grows).
  cl_mem reserve(device::Device& device, std::size_t count, const char* name);

 private:
  device::Buffer<float> buffer_;
};

// `splits` products over consecutive k ranges as one batch: split j multiplies k range
// [j kc, (j + 1) kc), kc = k / splits, its A and B stepping by kc along k; C the dense (splits, m, n)
// float32 partials at `partials`.
struct SplitProducts {
  GemmShape shape;
  GemmOperand a, b, c;
};
SplitProducts split_products(const GemmShape& s, std::size_t splits, const GemmOperand& a, const GemmOperand& b,
                             cl_mem partials);

// The split sums' launch: a work-item per element of C, 32 x 4 work-groups, columns along local id
// 0 (coalesced).
inline std::array<std::size_t, 2> split_sum_local() { return {32, 4}; }
inline std::array<std::size_t, 2> split_sum_global(const GemmShape& s) {
  return {(s.n + 31) / 32 * 32, (s.m + 3) / 4 * 4};
}

}  // namespace paxocl::kernels
