// LlamaConfig: the LLaMA family's hyper-parameters (praxis/paxml BaseLLaMA; Hugging Face
// LlamaConfig in brackets): pre-RMSNorm decoder blocks, rotary position embeddings, a SiLU-gated
// (SwiGLU) MLP, grouped-query attention, no biases, an untied LM head.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/gpt_config.h"
#include "models/tensor_def.h"

namespace paxocl::models {

struct LlamaConfig {
  static constexpr int kMaxDimension = GptConfig::kMaxDimension;

  int num_layers = 2;       // NUM_LAYERS        [num_hidden_layers]
  int model_dims = 128;     // MODEL_DIMS (C)    [hidden_size]
  int hidden_dims = 352;    // HIDDEN_DIMS (F)   [intermediate_size]: the gate, up and down width
  int num_heads = 4;        // NUM_HEADS (H)     [num_attention_heads]
  int num_kv_heads = 4;     // NUM_KV_HEADS (Hkv) [num_key_value_heads]: divides H; 1 = multi-query
  int dims_per_head = 32;   // DIMS_PER_HEAD (hs), even (RoPE rotates pairs)
  int max_seq_len = 128;    // MAX_SEQ_LEN       [max_position_embeddings]
  int vocab_size = 4096;    // VOCAB_SIZE (V)    [vocab_size]
  int padded_vocab_size = 0;  // rows of the embedding and the head; 0: V rounded up to 128
  float init_std = 0.02f;     // INIT_STD         [initializer_range]
  float rope_base = 10000.0f;  // ROPE_BASE       [rope_theta]
  float norm_epsilon = 1e-5f;  // NORM_EPSILON    [rms_norm_eps]

  int attention_dims() const { return num_heads * dims_per_head; }     // H * hs: queries and the output
  int kv_dims() const { return num_kv_heads * dims_per_head; }         // Hkv * hs: keys, and values
  int qkv_dims() const { return attention_dims() + 2 * kv_dims(); }    // the fused projection's rows
  int padded_vocab() const {
    return padded_vocab_size > 0 ? padded_vocab_size : (vocab_size + 127) / 128 * 128;
  }
  // ConfigError naming the first bad field and the rule (NUM_KV_HEADS must divide NUM_HEADS, ...).
  void validate() const;
  // Parameters in matmuls: per layer C*(H + 2 Hkv)*hs + H*hs*C + 3*C*F, plus Vp*C for the LM head
  // (the embedding is a lookup, not a matmul).
  std::int64_t matmul_parameters() const;
  // Model FLOPs per token of a training step: 6 * matmul parameters + 12 * L * T * H * hs (the
  // score and value GEMMs run over every query head, whatever Hkv is; no causal discount, as for GPT).
  double flops_per_token(int seq_len) const;
  // "L=2 C=128 F=352 H=4 KV=4 hs=32 V=4096 (Vp=4096) rope_base=10000 eps=1e-05": for messages.
  std::string describe() const;
};

// The LLaMA's parameters (ParameterLayout puts decayed tensors first). Row-major, weights (out, in):
//   embed (Vp, C)        token embedding            lm_head (Vp, C)   the untied output head
//   h{l}.attn.qkv.w ((H + 2 Hkv) hs, C): rows [q | k | v]       h{l}.attn.proj.w (C, H hs)
//   h{l}.mlp.gate_up.w (2F, C): rows [gate | up]                h{l}.mlp.down.w (C, F)
//   h{l}.attn_norm.scale (C)  h{l}.mlp_norm.scale (C)  norm.scale (C)       (RMSNorm scales, init 1)
std::vector<TensorDef> tensor_defs_of(const LlamaConfig& config);

}  // namespace paxocl::models
