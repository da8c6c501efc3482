// TensorCoreGemm ("tensor-core"): GEMMs whose A and B are both bfloat16 or both float16 run on
// tensor cores (gemm_mma.cl: mma.sync m16n8k16, float32 accumulation, C in its own dtype), when
// the tensor-core probe (tensor_core_probe.h) passed for that dtype on this device; with
// MatmulPrecision::kTf32, GEMMs whose A and B are both float32 do too (mma.sync m16n8k8 on operands
// rounded to TF32) where the probe's tf32 path passed. Every other GEMM (mixed operands, float32 at
// float32 precision, a failed probe, a non-NVIDIA device) goes to `fallback`, the
// float32-accumulating GEMM. Operands whose 16-byte chunks are aligned (offset, leading dimension
// and batch stride multiples of 8 16-bit or 4 float32 elements) are copied with cp.async; others
// with plain loads. A single product whose C has too few blocks to fill the device splits k
// (split_k.h), as DirectGemm does: float32 partials, summed in split order, C rounded once.
//
// Tile of the 16-bit GEMMs: $PAX_OCL_MMA_TILE ("128x128x32.w64x32.s3.x") or the constructor's
// `tile` for every shape; otherwise chosen per shape class by timing (auto_gemm.h's
// make_timed_gemm) among mma_auto_tiles(), the candidates that fit the device's local memory.
// TF32 GEMMs run the tile's unswizzled form where it fits with 4-byte elements, else the first
// candidate that does. mma_tile_candidates() is the longer list bench_gemm's `tc all` times.
// Programs (per A/B dtype, C dtype, copy path, tile) are built on first use.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels_cl/gemm.h"
#include "kernels_cl/kernel_set.h"
#include "kernels_cl/split_k.h"
#include "kernels_cl/tensor_core_probe.h"

namespace paxocl::kernels {

inline constexpr const char* kMmaTileEnvVar = "PAX_OCL_MMA_TILE";

// A work-group's BM x BN block of C, BK-deep k steps, STAGES local-memory stages, and each warp's
// WM x WN sub-block: (BM / WM) (BN / WN) warps. `swizzle` (name suffix ".x", 16-bit operands only):
// unpadded local rows with XOR-permuted chunks (gemm_mma.cl's SWIZZLE=1), BM, BN, BK powers of two.
struct MmaTile {
  int bm = 128, bn = 128, bk = 32, wm = 64, wn = 32, stages = 2;
  bool swizzle = false;

  int threads() const { return bm / wm * (bn / wn) * 32; }
  // The kernels' local tiles (the larger transpose layout) for A/B elements of `element_bytes`
  // (2: bfloat16/float16; 4: TF32, whose rows are padded differently).
  std::size_t local_bytes(std::size_t element_bytes = 2) const;
  std::string defines() const;      // "-DBM=128 -DBN=128 ... -DSWIZZLE=0"
  std::string name() const;         // "128x128x32.w64x32.s2", "128x128x32.w64x32.s3.x"
  static MmaTile parse(std::string_view name);  // throws ConfigError for a malformed or invalid tile
};

// Every tile bench_gemm's `tc all` times on a device with `local_mem_bytes` of local memory
// (element_bytes 4: the TF32 ones, never swizzled), the measured best first.
std::vector<MmaTile> mma_tile_candidates(std::uint64_t local_mem_bytes, std::size_t element_bytes = 2);
// The 16-bit tiles a shape class's timing chooses among (a few of the candidates: each one is a
// program to build and a timing at the class's first GEMM).
std::vector<MmaTile> mma_auto_tiles(std::uint64_t local_mem_bytes);

class TensorCoreGemm final : public Gemm {
 public:
  // kPtx: as above. kEmulated (tests only): gemm_mma.cl built with PAX_MMA_EMULATE, its PTX replaced
  // by portable OpenCL C, runs every 16-bit GEMM (and with kTf32 every float32 one) on any device
  // without consulting the probe.
  enum class Mode { kPtx, kEmulated };

  // `tile`: the 16-bit GEMMs' tile for every shape (else $PAX_OCL_MMA_TILE's, else one per shape
  // class, timed), and the TF32 GEMMs' too (unswizzled) when it fits their local memory.
  // `fallback`: the GEMM for everything else; null for a GEMM of one tile that runs only what
  // on_tensor_cores() takes (the per-class choice's candidates).
  TensorCoreGemm(device::ProgramCache& cache, device::Device& device, std::unique_ptr<Gemm> fallback,
                 std::optional<MmaTile> tile = std::nullopt, Mode mode = Mode::kPtx,
                 MatmulPrecision precision = MatmulPrecision::kFloat32);

  void run(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override;
  // On tensor cores the bias and GELU epilogue in the mma kernel's stores (or the split sum's), from
  // a program of its own (-DGEMM_EPILOGUE=1), and false for GELU's gradient (measured slower than
  // its own pass); elsewhere the fallback's answer.
  bool run_fused(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                 const GemmOperand& c, const GemmEpilogue& epilogue) override;
  std::string name() const override { return "tensor-core"; }
  bool supports(device::DType a, device::DType b, device::DType c) const override {
    return on_tensor_cores(a, b) || (fallback_ && fallback_->supports(a, b, c));
  }
  void set_profiling(bool on) override;
  GemmStats stats() override;
  void reset_stats() override;

  // The 16-bit tile (with a per-class choice: its first candidate) and the TF32 one.
  const MmaTile& tile() const { return tile_; }
  const MmaTile& tf32_tile() const { return tf32_tile_; }
  // Whether a GEMM with these operand dtypes runs on the mma kernel.
  bool on_tensor_cores(device::DType a, device::DType b) const;
  // The k splits this shape gets at tile() (or tf32_tile()) with A and B of dtype `ab` on tensor
  // cores (split_k.h; splits a whole number of 16-byte chunks deep).
  std::size_t split_k(const GemmShape& shape, device::DType ab) const;

 private:
  Gemm& fallback();  // throws std::logic_error where there is none
  KernelSet& kernels(device::DType ab, device::DType c, bool async, bool epilogue);
  void multiply(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                const GemmOperand& c, const GemmEpilogue& epilogue);
  // One launch of the mma kernel (C's dtype selects the program).
  void launch(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
              const GemmOperand& c, bool async, const GemmEpilogue& epilogue);
  // The tile of GEMMs whose A and B are `ab`: tile_ for 16 bits, tf32_tile_ for float32.
  const MmaTile& tile_for(device::DType ab) const { return ab == device::DType::kF32 ? tf32_tile_ : tile_; }

  device::ProgramCache& cache_;
  device::Device& device_;
  std::unique_ptr<Gemm> fallback_;
  std::unique_ptr<Gemm> tile_choice_;  // 16-bit GEMMs, when the tile is chosen per shape class
  Mode mode_;
  TensorCores tensor_cores_;
  MatmulPrecision precision_;
  MmaTile tile_, tf32_tile_;
  std::map<std::string, std::unique_ptr<KernelSet>> programs_;  // by build options
  SplitPartials split_partials_;
  bool profiling_ = false;
  GemmStats stats_;
};

}  // namespace paxocl::kernels
