// GptConfig: the GPT decoder's hyper-parameters, named as in Pax's GPU configs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/ssm_config.h"
#include "models/tensor_def.h"

namespace paxocl::models {

// A block's token mixer: self-attention (the GPT's) or the S4D state-space layer (praxis's
// SSMTransformer: the SSM in place of attention, the rest of the block unchanged).
enum class BlockKind { kAttention, kSsm };
// BLOCK_KINDS: "attention", "ssm", "attention,ssm" (or "[attention, ssm]"): ConfigError naming an unknown kind.
std::vector<BlockKind> parse_block_kinds(std::string_view text);
std::string block_kinds_text(const std::vector<BlockKind>& kinds);  // "attention,ssm"

// ConfigError "NAME=VALUE: must be at least 1" / "... at most kMaxDimension" unless 1 <= value <= max.
void check_dimension(const char* name, int value, int max);

struct GptConfig {
  // Every dimension (and NUM_HEADS * DIMS_PER_HEAD) is at most this, so 3 * D, 4 * C and the padded
  // vocabulary stay far inside int; whole tensor sizes are checked by ParameterLayout.
  static constexpr int kMaxDimension = 1 << 28;
  // LayerNorm's epsilon (layers/layer_norm.h): fixed, as in GPT-2; weight files record it.
  static constexpr float kLayerNormEpsilon = 1e-5f;

  int num_layers = 2;      // NUM_LAYERS
  int model_dims = 128;    // MODEL_DIMS (C)
  int hidden_dims = 512;   // HIDDEN_DIMS (MLP width)
  int num_heads = 4;       // NUM_HEADS (NH)
  int dims_per_head = 32;  // DIMS_PER_HEAD (hs); NUM_HEADS * DIMS_PER_HEAD is the attention width D
  int max_seq_len = 128;   // MAX_SEQ_LEN (learned position embeddings)
  int vocab_size = 4096;   // VOCAB_SIZE (V)
  // Rows of the token embedding / LM head. Padding rows are never targets and their logits are
  // masked out of the softmax (as llm.c's Vp). 0 means VOCAB_SIZE rounded up to a multiple of 128.
  int padded_vocab_size = 0;
  float init_std = 0.023f;  // INIT_STD: Gaussian init of every matrix
  // BLOCK_KINDS: the blocks' token mixers, a pattern repeated over the layers (its length divides
  // NUM_LAYERS): {kSsm} is praxis's SSMTransformer, {kAttention, kSsm} a hybrid alternating them.
  // Empty: every block attention (the GPT).
  std::vector<BlockKind> block_kinds;
  SsmConfig ssm;  // the SSM blocks' hyper-parameters (SSM_*), read only when there are some

  BlockKind block_kind(int layer) const {
    return block_kinds.empty() ? BlockKind::kAttention : block_kinds[static_cast<std::size_t>(layer) % block_kinds.size()];
  }
  int ssm_blocks() const;  // blocks whose mixer is the SSM

  int attention_dims() const { return num_heads * dims_per_head; }  // D
  int padded_vocab() const {
    return padded_vocab_size > 0 ? padded_vocab_size : (vocab_size + 127) / 128 * 128;
  }
  // Throws ConfigError naming the first bad field and the rule it breaks (each field in [1, kMaxDimension]).
  void validate() const;
  // Parameters in matmuls, the tied LM head included (for FLOP counts): per layer
  // C*3D + D*C (attention blocks) + 2*C*H, plus Vp*C for the LM head.
  std::int64_t matmul_parameters() const;
  // Model FLOPs per token of a training step: 6 * matmul parameters + 12 * La * T * C over the La
  // attention blocks. SSM blocks count their MLP only: their convolutions (FFT, O(C log T) per
  // token) and kernel generation are not matmul FLOPs, as MFU conventions count them.
  double flops_per_token(int seq_len) const;
  // "L=2 C=128 H=512 NH=4 hs=32 T=128 V=4096 (Vp=4096)": for messages.
  std::string describe() const;
};

// The GPT's parameters, matrices first (ParameterLayout puts decayed tensors first anyway).
// Names and shapes (row-major; weights as (out, in), as llm.c stores them):
//   wte (Vp, C)            token embedding, tied to the LM head
//   wpe (MAX_SEQ_LEN, C)   learned position embedding
//   h{l}.attn.qkv.w (3D, C)   h{l}.attn.proj.w (C, D)   h{l}.mlp.fc.w (H, C)   h{l}.mlp.proj.w (C, H)
//   h{l}.ln1.scale (C) h{l}.ln1.bias (C) h{l}.attn.qkv.b (3D) h{l}.attn.proj.b (C)
//   h{l}.ln2.scale (C) h{l}.ln2.bias (C) h{l}.mlp.fc.b (H)     h{l}.mlp.proj.b (C)
//   lnf.scale (C) lnf.bias (C)
// An SSM block (BLOCK_KINDS) has, in place of attn.qkv and attn.proj (weights and biases), praxis's
//   h{l}.ssm.c_re (N, C) h{l}.ssm.c_im (N, C)   (Gaussian, std sqrt(0.5))   h{l}.ssm.d (C) (ones)
// all without weight decay.
std::vector<TensorDef> tensor_defs_of(const GptConfig& config);

}  // namespace paxocl::models
