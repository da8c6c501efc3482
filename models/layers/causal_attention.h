// CausalAttention: the attention core between the QKV and output projections, multi-head or
// grouped-query (H query heads share Hkv key/value heads, Hkv dividing H; Hkv = 1: multi-query).
//   qkv (N, (H + 2*Hkv)*hs) rows laid out [q: H heads | k: Hkv heads | v: Hkv heads], head h at
//   columns h*hs .. h*hs+hs-1 of its part; query head h reads kv head h / g, g = H / Hkv (as
//   Hugging Face's repeat_kv)
//   -> out (N, H*hs) = per head softmax(q k^T / sqrt(hs), causal) v, heads concatenated.
// Heads are read and written in place in those row layouts: for one sequence b the heads form a
// strided batch (leading dimension the row width, batch stride hs), so the GEMMs need no permuted
// copies. Grouped-query attention runs g such batches over the kv heads: the j-th query head of
// every group (query head kvh*g + j, column offset j*hs, batch stride g*hs) against kv heads
// kvh (batch stride hs); dk and dv are sums over j, accumulated by the GEMMs (beta 1). With
// Hkv = H (g = 1) this is the multi-head computation, call for call.
// Scores come from strided-batched GEMMs over chunks of heads and blocks of queries, for
// several sequences at once (Gemm::run_outer, one library call where the GEMM takes both batch
// levels) when a chunk holds every head and the workspace has room: block q0 .. q0+Q-1 meets only its causal keys 0 .. q0+Q-1, so the masked upper
// triangle is computed only inside the diagonal blocks (at T = 2048 and Q = 256, 56% of the
// full T x T GEMM work), and the workspace is (sequences, chunk, Q, T) with chunk, then
// sequences, chosen to fit `workspace_bytes` — never (B, NH, T, T) unless that fits. Small
// models gain most: config A (T 128, 4 heads) ran 112 attention GEMMs a step, 0.1 ms each, one
// per sequence. A block holds its rows' whole causal range, so each
// row's softmax is exact in one pass (no online rescaling across blocks). In the backward dk and
// dv are sums over the blocks, accumulated by the GEMMs (beta 1) from the last block, which
// reaches every key; with 16-bit activations the blocks would round those sums once per block,
// so they run as one block of T queries, and grouped-query attention sums a sequence's dk and dv
// over the g query heads of a group in a float32 workspace (T, 2*Hkv*hs), rounded into dqkv once.
// Forward keeps only the row logsumexp (B, H, T); backward recomputes the probabilities
// (FlashAttention's trade). forward remembers qkv: the caller keeps it alive.
// On a device that runs the GPU kernel set (kernels::uses_flash_attention) the same computation
// runs as fused flash attention kernels instead (kernels_cl/flash_attention.h): no score
// workspace, no GEMMs, the same layouts and row statistics. On a CPU device with the CPU set it
// runs as the host's blocked flash attention (kernels_cl/cpu_flash_attention.h: a native kernel
// per call, scores in each core's cache); the path above runs where neither does (the portable
// set, devices without native kernels, PAX_OCL_CPU_FLASH=0).
// qkv, out, dout, dqkv are in the activation dtype `act`; the score workspace, lse and delta are
// float32 whatever it is (Pax computes attention logits and softmax in float32).
#pragma once

#include "models/attention_workspace.h"
#include "models/layers/buffer_source.h"
#include "models/layers/layer_context.h"

namespace paxocl::models {

class CausalAttention {
 public:
  // num_kv_heads must divide num_heads (ConfigError naming both otherwise); num_kv_heads =
  // num_heads is multi-head attention.
  // lse and out are saved (the context site), the rest transient (layers/buffer_source.h).
  CausalAttention(const BufferSource& buffers, device::DType act, std::size_t num_heads, std::size_t num_kv_heads,
                  std::size_t dims_per_head, std::size_t max_batch, std::size_t max_seq_len,
                  std::size_t workspace_bytes, const std::string& name);

  const ActBuffer& forward(LayerContext& ctx, const ActBuffer& qkv);   // qkv (N, W) -> (N, H*hs)
  // Decoding with a key/value cache: qkv (B*n, W) holds each sequence's next n tokens, at positions
  // p .. p+n-1 (rotary embeddings applied); their keys and values join the cache, and the output
  // (B*n, H*hs) attends to the cached positions 0 .. p+row. The cache (B, max_seq_len, 2*Hkv*hs),
  // grouped like the kv heads, is allocated by the first call; p = 0 starts new sequences.
  const ActBuffer& output() const { return out_; }  // the last forward's
  const ActBuffer& decode(LayerContext& ctx, const ActBuffer& qkv, std::size_t position);
  // dout (N, H*hs) -> dqkv (N, W), which the caller may transform in place (RotaryEmbedding::backward).
  ActBuffer& backward(LayerContext& ctx, const ActBuffer& dout);
  std::size_t chunk() const { return chunk_; }  // query heads per workspace pass (one per kv head)
  std::size_t sequences_per_pass() const { return seq_chunk_; }  // > 1 only when chunk() holds every kv head
  std::size_t query_block() const { return query_block_; }
  std::size_t qkv_width() const { return (heads_ + 2 * kv_heads_) * hs_; }  // W
  bool flash() const { return flash_; }  // runs as the GPU set's flash attention
  bool cpu_flash() const { return cpu_flash_; }  // runs as the host's flash attention

  static constexpr std::size_t kQueryBlock = kAttentionQueryBlock;  // queries per score block (float32 activations)

 private:
  // A sequence's rows inside a row-major (rows, width) buffer; the next sequence's start
  // `sequence_rows` rows further.
  struct SequenceRows {
    const ActBuffer* buffer;
    std::size_t first_row, width, sequence_rows;
  };
  // Sequences b .. b+seqs-1 (seqs > 1 only with one chunk of every kv head): each one's `queries`
  // queries (q's rows, at positions first_position + t) against its keys and values (kv's rows
  // from 0, k and v at columns k_col and v_col) into out_ from row out_row (+ queries per
  // sequence); row statistics into lse_ with `stats_stride` positions per head.
  void attend(LayerContext& ctx, std::size_t b, std::size_t seqs, const SequenceRows& q, const SequenceRows& kv,
              std::size_t k_col, std::size_t v_col, std::size_t queries, std::size_t first_position,
              std::size_t stats_stride, std::size_t out_row);

  kernels::AttentionHeads heads() const { return {heads_, kv_heads_, hs_}; }
  // ctx's flash attention kernels (flash_ only); the first use per device, head size and dtype logs
  // which program runs them (FlashAttentionKernels::describe).
  kernels::FlashAttentionKernels& flash_kernels(LayerContext& ctx) const;
  // ctx's host flash attention (cpu_flash_ only); logged on first use per device.
  kernels::CpuFlashAttention& cpu_flash(LayerContext& ctx) const;

  std::size_t heads_, kv_heads_, group_, hs_, query_block_, max_batch_, max_seq_len_, chunk_, seq_chunk_ = 1;
  bool flash_, cpu_flash_;
  const ActBuffer* qkv_ = nullptr;
  FloatBuffer lse_;                   // forward state: (B, H, T)
  ActBuffer out_;                     // (N, H*hs)
  FloatBuffer scores_, dscores_;      // (chunk, query block, T) workspace
  FloatBuffer delta_;                 // backward: (B, H, T)
  FloatBuffer dkv_sums_;              // 16-bit grouped-query backward: one sequence's dk, dv (T, 2*Hkv*hs)
  ActBuffer dqkv_;                    // (N, W)
  ActBuffer kv_cache_;                // decoding: (B, max_seq_len, 2*Hkv*hs), allocated on first use
};

}  // namespace paxocl::models
