// DirectGemm ("gpu-direct"): pax-ocl's GEMM for GPUs that reads A and B where they lie — no
// per-call packing pass, no workspace (kernels_cl/gemm_direct.cl):
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C,  `batch` times with the strides
// Offsets, leading dimensions and batch strides are kernel arguments. The transposes pick one of
// four entry points of one program (gemm_direct_nn/_nt/_tn/_tt, compile-time constants inside):
// the inner loop then has no transpose branch, and no transpose needs a build of its own. Global
// loads are 4-element chunks along each operand's contiguous dimension, vector loads when the
// operand is 4-aligned (offset, leading dimension and batch stride multiples of 4), guarded
// scalar loads otherwise; local memory is double-buffered; any m, n, k >= 0 (k = 0: C = beta C).
// A, B and C each float32, bfloat16 or float16; products accumulate in float32; beta == 0 never
// reads C. A program per (A, B, C dtype) is built on first use, float32 at construction.
//
// Tile: DirectTile, compile-time defines of the program (-DTM -DTN -DTK -DWM -DWN): the given
// one, else the one `pax-ocl tune` stored for the device (direct_gemm_tuning.h), else DirectTile{}.
// Split k (split_k.h): the sum pass applies alpha and beta (split_k() says how many; 1: not split).
// run_fused: the bias and GELU epilogue (gemm.h) in the kernel's stores, or in the split sum's,
// from a program of its own (the plain GEMM's registers stay those of a kernel without one).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/buffer.h"
#include "kernels_cl/gemm.h"
#include "kernels_cl/kernel_set.h"
#include "kernels_cl/split_k.h"

namespace paxocl::kernels {

// A work-group's TM x TN block of C in TK-deep k slices; each work-item a WM x WN register tile:
// (TM / WM) x (TN / WN) work-items. ku: the k steps unrolled together, a divisor of TK below it
// (fewer registers, more loop overhead), or 0 for the whole slice; named ".uKU" when set.
struct DirectTile {
  int tm = 128, tn = 64, tk = 16, wm = 8, wn = 8, ku = 0;

  int threads() const { return tm / wm * (tn / wn); }
  std::size_t local_bytes() const;  // both operands' slices, double-buffered, as float32
  std::string defines() const;      // "-DTM=128 -DTN=64 -DTK=16 -DWM=8 -DWN=8" (+ " -DKU=4")
  std::string name() const;         // "128x64x16.r8x8" (+ ".u4")
  // Throws ConfigError for a malformed name or a tile gemm_direct.cl cannot run.
  static DirectTile parse(std::string_view name);
  bool operator==(const DirectTile&) const = default;
};

// The tiles `pax-ocl tune` times on `device` (those that fit its work-group size and local
// memory), DirectTile{} first when it fits.
std::vector<DirectTile> direct_tile_candidates(const device::DeviceInfo& device);

// The tiles `auto` times beside the other GPU GEMMs at each shape class (auto_gemm.h): the one
// `pax-ocl tune` stored for the device, alone; else, of those that fit, the default (128x64, 8 x 8
// per work-item), a large one (128x128: fewer, fuller work-groups on big shapes) and a small one
// (64x64, 8 x 4: more work-groups where a shape gives the large tiles too few to fill the device;
// the fastest of the ten tiles over GPT-2's shapes on an H200, docs/benchmarks.md).
std::vector<DirectTile> direct_auto_tiles(const device::DeviceInfo& device);

class DirectGemm final : public CountedGemm {
 public:
  // ConfigError when the tile (given, or the device's tuned one) does not fit the device.
  DirectGemm(device::ProgramCache& cache, device::Device& device, std::optional<DirectTile> tile = std::nullopt);

  void run(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override;
  bool run_fused(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                 const GemmOperand& c, const GemmEpilogue& epilogue) override;
  std::string name() const override { return "gpu-direct-" + tile_.name(); }
  bool supports(device::DType, device::DType, device::DType) const override { return true; }
  const DirectTile& tile() const { return tile_; }
  // The k splits run() uses for this shape (split_k.h; splits a multiple of 4 deep: aligned vector loads).
  std::size_t split_k(const GemmShape& shape) const;

  // The tile a DirectGemm built without one uses on `device`: tuned, else the default.
  static DirectTile default_tile(const device::Device& device);

 private:
  // The program for these dtypes, with the epilogue compiled in or not (-DGEMM_EPILOGUE=1).
  KernelSet& kernels(device::DType a, device::DType b, device::DType c, bool epilogue);
  void multiply(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                const GemmOperand& c, const GemmEpilogue& epilogue);
  // One launch of the tiled kernel (C's dtype selects the program).
  void launch(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
              const GemmOperand& c, const GemmEpilogue& epilogue);

  device::ProgramCache& cache_;
  device::Device& device_;
  DirectTile tile_;
  std::map<std::string, std::unique_ptr<KernelSet>> programs_;  // by build options
  SplitPartials split_partials_;
};

}  // namespace paxocl::kernels
