// Rematerialization as Pax configures it: CHECKPOINT_POLICY, praxis's AutodiffCheckpointType
// (praxis/layers/checkpoint_policy.py), decides which of a block's forward results the backward
// finds stored and which it recomputes from the block's input.
//
// pax-ocl's blocks store their forward results at named sites, praxis's checkpoint names where it
// has one. A policy is the set of sites each block keeps; what a block does not keep lives in
// buffers shared by every block (models/layers/buffer_source.h) and is recomputed, just before
// the block's backward, by the forward's own kernels in the forward's order: the same values, bit
// for bit (TransformerBlock::recompute). The block's output (praxis 'transformer_layer_out'; the
// next block's input) is always kept, as are the embedding, the final norm and the LM head, which
// Pax's remat does not wrap either.
//
//   policy                      sites kept per block
//   SAVE_EVERYTHING             all (no recompute; the default)
//   SAVE_NOTHING                none: the block's input only (SAVE_ITERATION_INPUT and
//                               SAVE_TRANSFORMER_LAYER_OUTPUT keep the same here)
//   SAVE_DOT_ONLY               qkv_proj, context, out_proj, ffn1 (SAVE_DOT_EXCEPT_LOGITS alike: the
//                               attention logits are never stored, flash-style)
//   SAVE_DOT_WITH_NO_BATCH_DIM  qkv_proj, out_proj, ffn1: the weight GEMMs. JAX's "batch dims" are a
//                               dot_general's batch dimensions; only attention's two products (per
//                               sequence and head) have them, so 'context' is recomputed
//   SAVE_DOT_EXCEPT_LOGITS_FFN1 qkv_proj, context, out_proj
//   SAVE_QKV_OUT_PROJ           qkv_proj, out_proj
//   SAVE_OUT_PROJ / SAVE_CONTEXT / SAVE_CONTEXT_AND_OUT_PROJ   as named
// ffn2 (the MLP's output projection) is kept only by SAVE_EVERYTHING: the backward never reads it,
// so JAX's remat would not keep it either. Under sequence parallelism out_proj is never kept: its
// partial sums are the reduce-scatter's workspace (models/layers/transformer_block.h).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_config.h"

namespace paxocl::models {

// Where a block stores a forward result (bits of SavedSites).
enum class BlockSite : unsigned {
  kNorm1 = 1u << 0,    // the first norm's output and row statistics
  kQkvProj = 1u << 1,  // 'combined_qkv_proj': the QKV projection, after RoPE (LLaMA)
  kContext = 1u << 2,  // 'context': attention's output (N, H hs) and its row log-sum-exp
  kOutProj = 1u << 3,  // 'out_proj': attention's output projection (what the residual sum adds)
  kNorm2 = 1u << 4,    // the residual sum x2, the second norm's output and row statistics
  kFfn1 = 1u << 5,     // 'ffn1': the MLP's first projection and its activation (GELU; SwiGLU's h)
  kFfn2 = 1u << 6,     // 'ffn2': the MLP's output projection
  kSsm = 1u << 7,      // an S4D block's token mixer: its output and kernel K
  kLayerOut = 1u << 8, // 'transformer_layer_out': the block's output; every policy keeps it
};

struct SavedSites {
  unsigned bits = ~0u;
  bool has(BlockSite site) const { return (bits & static_cast<unsigned>(site)) != 0; }
  bool everything() const { return bits == ~0u; }
};

enum class CheckpointPolicy {
  kSaveEverything,
  kSaveNothing,
  kSaveIterationInput,
  kSaveTransformerLayerOutput,
  kSaveDotOnly,
  kSaveDotExceptLogits,
  kSaveDotWithNoBatchDim,
  kSaveDotExceptLogitsFfn1,
  kSaveQkvOutProj,
  kSaveOutProj,
  kSaveContext,
  kSaveContextAndOutProj,
};

// Pax's names, in the order above (the valid values of CHECKPOINT_POLICY).
const std::vector<std::string>& checkpoint_policy_names();
// ConfigError naming the value and listing the valid ones for an unknown name.
CheckpointPolicy checkpoint_policy_from_name(std::string_view name);
std::string_view checkpoint_policy_name(CheckpointPolicy policy);

// The sites each block keeps under `policy` (see the table above).
SavedSites saved_sites(CheckpointPolicy policy, bool sequence_parallel);
inline bool rematerializes(CheckpointPolicy policy) { return policy != CheckpointPolicy::kSaveEverything; }
// Whether a rematerializing step recomputes `block` of `blocks` split into `parts` equal model
// instances (pipeline stages, or their chunks under the circular schedule): every block but each
// part's last, whose results are still in place when its backward starts (DecoderModel).
inline bool recomputes_block(int block, int blocks, int parts = 1) {
  return (block + 1) % (blocks / std::max(parts, 1)) != 0;
}

// The FLOPs a training step spends recomputing, per token of the batch, counted as
// ModelConfig::flops_per_token counts the model's (GEMMs 2 x in x out, attention's two products 4 T D
// per token and block, norms, softmax and the SSM's convolution not at all): the forward FLOPs of
// the sites each recomputed block runs again (TransformerBlock::recompute), over every block but the
// last, whose results are still in place when its backward starts; with the blocks in `parts`
// model instances (pipeline stages, or their chunks under the circular schedule), every part's last
// block. Hardware FLOPs utilisation counts these beside the model's; MFU does not (as Pax and PaLM
// count it).
double recompute_flops_per_token(const ModelConfig& model, SavedSites saved, int seq_len, int parts = 1);

}  // namespace paxocl::models
