// KernelLibrary: every kernel launcher pax-ocl's model uses, built once per device (through the
// program cache) and shared by all layers on that device. The activation kernels are built for
// one activation dtype (act_dtype(): float32 unless mixed precision asks for 16 bits, see
// kernels_cl/nn_kernels.h); elementwise and optimizer kernels work on float32 buffers always.
#pragma once

#include "device/dtype.h"
#include "kernels_cl/elementwise.h"
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
        act_(act) {}

  device::DType act_dtype() const { return act_; }

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
  device::DType act_;
};

}  // namespace paxocl::kernels
