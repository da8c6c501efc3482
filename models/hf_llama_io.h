// Hugging Face LLaMA checkpoints (transformers' LlamaForCausalLM save_pretrained) in and out.
//
// A checkpoint is a directory holding config.json and either model.safetensors or
// model.safetensors.index.json ({"weight_map": {tensor: shard file}}) with its shards; a single
// .safetensors file with config.json beside it is read too. config.json gives the shapes:
// hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads
// (default: the heads), head_dim (default hidden_size / heads), max_position_embeddings, vocab_size,
// rope_theta (10000; transformers 5 nests it in rope_parameters), rms_norm_eps (1e-6, transformers'
// default), tie_word_embeddings (false); scaled rotary embeddings (a rope_type other than default),
// biases (attention_bias, mlp_bias) and a hidden_act other than silu are refused.
// Tensors (F32, or BF16 / F16 widened exactly to float32; all [out, in] like ours):
//   model.embed_tokens.weight (V, C)  -> embed's first V rows (padding rows zero)
//   model.layers.{l}.self_attn.{q,k,v}_proj.weight  -> the rows [q | k | v] of h{l}.attn.qkv.w
//   model.layers.{l}.self_attn.o_proj.weight        -> h{l}.attn.proj.w
//   model.layers.{l}.mlp.{gate,up}_proj.weight      -> the rows [gate | up] of h{l}.mlp.gate_up.w
//   model.layers.{l}.mlp.down_proj.weight           -> h{l}.mlp.down.w
//   model.layers.{l}.input_layernorm.weight / post_attention_layernorm.weight -> attn_norm / mlp_norm
//   model.norm.weight -> norm.scale;  lm_head.weight (V, C) -> lm_head (embed's copy when tied)
// Hugging Face stores q and k already in the half-split rotary layout that pax-ocl's RoPE uses
// (its convert_llama_weights_to_hf.py permutes Meta's interleaved pairs), so no permutation here.
// Errors reading: FileError naming the file and what is wrong (one line).
#pragma once

#include <cstddef>
#include <filesystem>

#include "models/weights_io.h"

namespace paxocl::models {

// A directory with config.json, or a .safetensors file with a config.json beside it whose
// model_type is "llama".
bool is_hf_llama_checkpoint(const std::filesystem::path& path);
HostWeights load_hf_llama(const std::filesystem::path& path, std::size_t alignment);
// `path`: a directory (created if needed; model.safetensors and config.json inside) or a
// .safetensors file (config.json written beside it). Tensors in HF's order; atomic per file.
void save_hf_llama(const std::filesystem::path& path, const HostWeights& w);

}  // namespace paxocl::models
