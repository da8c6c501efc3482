// KernelLibrary: every kernel launcher pax-ocl's model uses, built once per device (through the
// program cache) and shared by all layers on that device. The activation kernels are built for
// one activation dtype (act_dtype(): float32 unless mixed precision asks for 16 bits, see
// kernels_cl/nn_kernels.h); elementwise and optimizer kernels work on float32 buffers always.
// Flash attention's programs depend on the head size: built on first request, one per size; the
// CPU's flash attention (a native kernel) is made on first request too.
#pragma once

#include <map>
#include <memory>

#include "device/dtype.h"
#include "kernels_cl/elementwise.h"
#include "kernels_cl/cpu_flash_attention.h"
#include "kernels_cl/flash_attention.h"
#include "kernels_cl/nn_kernels.h"
#include "kernels_cl/ssm_kernels.h"

namespace paxocl::kernels {

struct KernelLibrary {
  KernelLibrary(device::ProgramCache& cache, device::Device& device, device::DType act = device::DType::kF32)
      : elementwise(cache, device),
        embedding(cache, device, act),
        layernorm(cache, device, act),
        rmsnorm(cache, device, act),
        bias(cache, device, act),
        gelu(cache, device, act),
        swiglu(cache, device, act),
        attention(cache, device, act),
        rope(cache, device, act),
        cross_entropy(cache, device, act),
        vocab_parallel(cache, device, act),
        residual(cache, device, act),
        cast(cache, device, act),
        ssm(cache, device, act),
        optimizer(cache, device),
        cache_(cache),
        device_(device),
        act_(act) {}

  device::DType act_dtype() const { return act_; }

  // The flash attention kernels for this head size; null where the device does not run attention
  // that way (uses_flash_attention).
  FlashAttentionKernels* flash_attention(std::size_t head_size) {
    if (!uses_flash_attention(device_.info(), head_size)) return nullptr;
    auto& kernels = flash_attention_[head_size];
    if (!kernels) kernels = std::make_unique<FlashAttentionKernels>(cache_, device_, act_, head_size);
    return kernels.get();
  }
  // The host's flash attention; null where the device does not run attention that way
  // (uses_cpu_flash_attention).
  CpuFlashAttention* cpu_flash_attention() {
    if (!uses_cpu_flash_attention(device_.info())) return nullptr;
    if (!cpu_flash_attention_) cpu_flash_attention_ = std::make_unique<CpuFlashAttention>(device_);
    return cpu_flash_attention_.get();
  }

  Elementwise elementwise;
  EmbeddingKernels embedding;
  LayerNormKernels layernorm;
  RmsNormKernels rmsnorm;
  BiasKernels bias;
  GeluKernels gelu;
  SwigluKernels swiglu;
  AttentionKernels attention;
  RopeKernels rope;
  CrossEntropyKernels cross_entropy;
  VocabParallelKernels vocab_parallel;
  ResidualKernels residual;
  CastKernels cast;
  SsmKernels ssm;
  OptimizerKernels optimizer;

 private:
  device::ProgramCache& cache_;
  device::Device& device_;
  device::DType act_;
  std::map<std::size_t, std::unique_ptr<FlashAttentionKernels>> flash_attention_;
  std::unique_ptr<CpuFlashAttention> cpu_flash_attention_;
};

}  // namespace paxocl::kernels
