// DecodeMemory: what decoding (`pax-ocl sample`, sampling/generate.h) holds on its one device, in
// bytes, counted from the config before any buffer exists, so that too many samples are a one-line
// refusal rather than an allocation failing half-way (PoCL has aborted on one):
//   the model built for B = num_samples sequences of MAX_SEQ_LEN positions (models/block_model.h):
//     float32 parameters and their gradient buffer (P x 4 bytes each, P the aligned layout),
//     its activations as activation_memory.h counts them (B, T; float32 decoding);
//   each attention block's key/value cache, allocated at the first decode step:
//     (B, MAX_SEQ_LEN, 2 x kv heads x head size) float32 values (layers/causal_attention.h).
// As in training's plan (device_memory.h), a packed GEMM's workspaces (kernels_cl/packed_gemm.h:
// panels of the largest GEMM's operands, grown on demand) are not counted.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "models/model_config.h"
#include "plan/activation_memory.h"
#include "plan/device_memory.h"

namespace paxocl::plan {

struct DecodeMemory {
  std::size_t parameters = 0;   // parameters and gradients: 2 x P x 4
  std::size_t activations = 0;  // the B-sequence model's activations (SSM decoding states included)
  std::size_t kv_caches = 0;    // every attention block's cache
  std::size_t largest = 0;      // the largest single buffer
  std::size_t total() const { return parameters + activations + kv_caches; }
};

struct DecodeSpec {
  models::ModelConfig model;
  std::size_t num_samples = 1;
  std::size_t base_address_align_bytes = 0;  // the device's (the parameter layout's alignment)
  std::function<bool(std::size_t head_size)> flash_attention;  // as LayoutSpec::flash_attention
};

DecodeMemory decode_memory(const DecodeSpec& spec);

// ConfigError, one line, when decoding does not fit `limits`: what it needs (and of what), what the
// device has, and the most samples that fit ("try --num_samples=N"), or that not even one does.
void require_decode_fits(const DecodeSpec& spec, const MemoryLimits& limits, const std::string& device_name);

}  // namespace paxocl::plan
