// The settings a GPT weights file records beyond its tensors' shapes, so that a file alone says how
// to compute with it (never an experiment's defaults):
//   - pax-ocl's safetensors: every setting in the file's __metadata__ (strings, safetensors' rule):
//     "pax_ocl.architecture" "gpt", num_layers, model_dims, hidden_dims, num_heads, dims_per_head,
//     max_seq_len, vocab_size, padded_vocab_size, layer_norm_epsilon, tied_lm_head, block_kinds and,
//     with SSM blocks, ssm_nheads, ssm_step_size, ssm_hippo_type, ssm_l_max (all "pax_ocl."-prefixed);
//   - a Hugging Face GPT-2 .safetensors: the config.json beside it (model_type "gpt2": n_head, and
//     n_embd, n_layer, n_positions, vocab_size, n_inner, layer_norm_epsilon, activation_function,
//     scale_attn_weights, scale_attn_by_inverse_layer_idx, add_cross_attention, tie_word_embeddings
//     checked against the tensors and against what pax-ocl's GPT computes; reorder_and_upcast_attn
//     is accepted either way: it computes the same scores in float32);
//   - neither: the head count the user gave (NUM_HEADS), else a ConfigError asking for it.
// The llm.c header records its own settings (weights_io.h); Hugging Face LLaMA has config.json.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "models/gpt_config.h"

namespace paxocl::models {

// ConfigError naming both values when `given` (a NUM_HEADS the user gave) is not the `recorded` head
// count of `file` (`recorded_in`: where the file says so, for the message); any weights format.
void require_heads_agree(const std::filesystem::path& file, std::optional<int> given, int recorded,
                         std::string_view recorded_in);

// The __metadata__ pax-ocl writes for a GPT of config `c` ("format": "pt" first).
nlohmann::ordered_json gpt_settings_metadata(const GptConfig& c);

// Completes `c`, whose shapes, block kinds and SSM settings the caller read from the file's tensors,
// with its head count, head width and padded vocabulary, from `metadata` (the file's __metadata__),
// else a config.json beside `file`, else `num_heads`. Throws FileError naming the file when a
// recorded setting disagrees with the tensors or with pax-ocl's GPT (LayerNorm epsilon, GELU, tied
// head); ConfigError when `num_heads` is given and contradicts the file's record (both values named),
// or when nothing records the heads and `num_heads` is not given.
void complete_gpt_settings(const std::filesystem::path& file, const nlohmann::json& metadata,
                           std::optional<int> num_heads, GptConfig& c);

}  // namespace paxocl::models
