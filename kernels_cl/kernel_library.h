// KernelLibrary: every kernel launcher pax-ocl's model uses, built once per device (through the
// program cache) and shared by all layers on that device.
#pragma once

#include "kernels_cl/elementwise.h"
#include "kernels_cl/nn_kernels.h"

namespace paxocl::kernels {

struct KernelLibrary {
  KernelLibrary(device::ProgramCache& cache, device::Device& device)
      : elementwise(cache, device),
        embedding(cache, device),
        layernorm(cache, device),
        bias(cache, device),
        gelu(cache, device),
        attention(cache, device),
        cross_entropy(cache, device),
        optimizer(cache, device) {}

  Elementwise elementwise;
  EmbeddingKernels embedding;
  LayerNormKernels layernorm;
  BiasKernels bias;
  GeluKernels gelu;
  AttentionKernels attention;
  CrossEntropyKernels cross_entropy;
  OptimizerKernels optimizer;
};

}  // namespace paxocl::kernels
