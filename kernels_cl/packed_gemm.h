// PackedGemm: pax-ocl's own GEMM (kernels::Gemm). Both operands are first packed into contiguous
// zero-padded panels (gemm_pack.cl), which absorbs every transpose, offset and leading dimension,
// then a compute kernel shaped for the device class multiplies the panels:
//   kCpu  gemm_cpu.cl: one work-item per MR x NR register tile, float16 accumulators, groups of 1
//   kGpu  gemm_gpu.cl: 16 x 16 work-groups on 64 x 64 blocks with local-memory staging
// Packing workspaces grow on demand and are reused. Any operand dtype: packing widens 16-bit
// operands to float32 panels, the compute kernel rounds C to its dtype once (a program per dtype,
// built on first use).
#pragma once

#include <array>
#include <memory>
#include <string>

#include "kernels_cl/gemm.h"
#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

struct GemmVariant {
  enum class Kind { kCpu, kGpu } kind = Kind::kCpu;
  int mr = 8, nr = 48;  // register tile (kCpu); both 64 for kGpu
  std::string name() const;  // "cpu-8x48", "gpu-64x64"
};

class PackedGemm final : public CountedGemm {
 public:
  PackedGemm(device::ProgramCache& cache, device::Device& device, GemmVariant variant);

  void run(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override;
  std::string name() const override { return variant_.name(); }
  bool supports(device::DType, device::DType, device::DType) const override { return true; }

 private:
  device::Buffer<float>& workspace(device::Buffer<float>& buffer, std::size_t count, const char* name);
  // Packs X (extent, k) at src with the given element strides into panels of `panel` rows.
  void pack(device::Buffer<float>& dst, const GemmOperand& src, std::size_t x_stride, std::size_t k_stride,
            std::size_t extent, std::size_t k, std::size_t panel, std::size_t panels, std::size_t batch);

  KernelSet& pack_kernels(device::DType source);
  KernelSet& compute_kernels(device::DType c);

  device::ProgramCache& cache_;
  device::Device& device_;
  GemmVariant variant_;
  std::array<std::unique_ptr<KernelSet>, 3> pack_, compute_;  // by DType, built on first use
  device::Buffer<float> packed_a_, packed_b_;
};

}  // namespace paxocl::kernels
