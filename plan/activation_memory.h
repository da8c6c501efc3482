// The activation buffers one device allocates for a model, derived from the layers' constructors
// (models/layers/*.cpp): everything a model allocates between BlockModel::begin_layers() and
// end_layers(), which BlockModel::activation_bytes() reports. Every buffer is sized for the device's
// largest batch, rows N = B x T (B: its tensor group's sequences, T: MAX_SEQ_LEN), in the activation
// dtype (a bytes) unless it is float32 or int32 by nature. A block's buffers are one per block, or
// one shared by the blocks (models/layers/buffer_source.h): the transient ones (input gradients,
// workspaces) always, and the saved ones of the sites the checkpoint policy does not keep:
//   Embedding      x (N, C) act; ids, tokens, positions (N) + starts (N+1) int32; a zero row
//                  (1, or C without a position table) act
//   LayerNorm      y (N, C) act, mean, rstd (N) f32 saved; dx (N, C) act transient
//                  RMSNorm: y act, rstd f32 saved; dx transient
//   Linear in->out z (N, out) saved, dx (N, in) transient, act; with GELU also gelu (N, out) saved
//                  and dz (N, out) transient
//   Attention      (h query heads, g kv heads, hs): out (N, h hs) act and lse (B, h, T) f32 saved;
//                  transient: dqkv (N, (h + 2g) hs) act; delta (B, h, T) f32; scores, dscores
//                  (chunk, Q, T) f32 with Q = min(T, 256) for float32 (else T) and chunk =
//                  clamp(workspace / (2 Q T 4), 1, g); 16-bit grouped-query attention adds dkv_sums
//                  (T, 2 g hs) f32; flash attention (the GPU kernel set) allocates none of scores,
//                  dscores, dkv_sums
//   SSM            y (N, C) act, K (T, C) f32 saved; du act, dK f32 transient; the decoding state
//                  and the frozen tables per block
//   Block          x2 (N, C) act (norm2's site), y (N, C) act (always per block), around norm1 (site
//                  norm1), attention (qkv Linear: qkv_proj, core: context, proj Linear: out_proj),
//                  norm2 and the MLP (GPT: fc with GELU: ffn1, proj: ffn2; LLaMA: gate_up and h
//                  (N, F): ffn1, down: ffn2, dgu (N, 2F) transient); LLaMA's kv replica scratch
//                  (2 Hkv hs, C) f32 transient
//   RoPE (LLaMA)   cos, sin (T, hs/2) f32, once for every block
//   LmHead         logits (N, Vp) act; losses, correct, weights (N) f32; targets (N) int32; dy (N, C)
// Tensor parallelism (tensor_parallel.h) narrows the split widths (heads, MLP units, Vp) and adds
// the cross-entropy's gathered row statistics (t, N, 3) f32; sequence parallelism stores the
// buffers outside attention and the MLP (norms, residual sums x2 and y) for N / t rows (rounded
// up) and adds its workspaces (models/layers/sequence_parallel.h), once for every block: the
// gathered input and gradient (N, C) act, the first block's input and a reduce-scattered delta
// (N / t, C) act, and the norms' gradients packed for their sum and the earlier passes' total
// set aside meanwhile (4 C each) f32.
// A pipeline stage (ActivationShape::stage, models/pipeline_schedule.h) allocates its own blocks'
// buffers only (a hybrid's kinds counted over them), the embedding only on the first stage, the
// final norm and LmHead only on the last (RoPE's tables on every stage), plus
//   Stage          input (N, C) act unless first; output gradient (N, C) act unless last
// (models/block_model.cpp). That is one microbatch instance's (B: the microbatch's sequences); a
// stage holds microbatches_in_flight of them (device_memory.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "device/dtype.h"
#include "models/checkpoint_policy.h"
#include "models/model_config.h"
#include "models/pipeline_schedule.h"

namespace paxocl::plan {

// One allocation, or `copies` alike (one per block).
struct BufferSize {
  std::string name;  // the layer's label: "h*.attn.scores" for a block's, "lm_head.logits"
  std::size_t bytes = 0;
  std::size_t copies = 1;
  std::size_t total() const { return bytes * copies; }
};

struct ActivationShape {
  std::size_t sequences = 1;  // B
  std::size_t seq_len = 1;    // T
  device::DType act = device::DType::kF32;
  int tensor = 1;
  bool sequence_parallel = false;
  std::size_t attention_workspace_bytes = std::size_t{64} << 20;
  std::function<bool(std::size_t head_size)> flash_attention;  // LayoutSpec::flash_attention
  models::SavedSites saved{};  // the sites each block keeps (models::saved_sites)
  models::StageSpan stage{};   // a pipeline stage's blocks and ends (stages 1: the whole model)
};

std::vector<BufferSize> activation_buffers(const models::ModelConfig& model, const ActivationShape& shape);
std::size_t total_bytes(const std::vector<BufferSize>& buffers);
BufferSize largest(const std::vector<BufferSize>& buffers);  // by one allocation's bytes

}  // namespace paxocl::plan
