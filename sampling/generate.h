// generate: sampled continuations of one prompt from a model (Model::begin_decode / decode: each
// new token costs one position through the layers' key/value caches), as praxis's sample_decode
// loop: num_samples sequences side by side, each next token drawn by sample_token from its row of
// logits, a sequence finished at EOS (kept) or when max_decode_steps tokens or MAX_SEQ_LEN are reached.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/model.h"
#include "sampling/sampler.h"

namespace paxocl::sampling {

struct GenerateOptions {
  SamplingOptions sampling;
  int max_decode_steps = 64;
  int num_samples = 1;
  std::uint64_t seed = 0;
  std::optional<int> eos_id;  // stops a sequence (none: every sequence runs max_decode_steps)
};

struct Generation {
  std::vector<std::vector<int>> samples;  // the new tokens of each sample (the prompt excluded)
  double prefill_seconds = 0, decode_seconds = 0;
  long decode_steps = 0;                  // decode calls after the prompt (each one token per sample)
};

// ConfigError naming the flag for bad options (sampling::validate; counts below 1).
void validate(const GenerateOptions& options);

// ConfigError for an empty prompt or one that alone fills `max_seq_len` (no room to write);
// callers check it before any device work, generate() again.
void check_prompt(const std::vector<int>& prompt, std::size_t max_seq_len);

// ConfigError for bad options (validate above, check_prompt); DataError for ids outside the vocabulary.
Generation generate(models::Model& model, const std::vector<int>& prompt, const GenerateOptions& options);

}  // namespace paxocl::sampling
