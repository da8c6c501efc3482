// The unfused causal attention's score workspace (models/layers/causal_attention.h), shared by
// the layer that allocates it and the planner that counts it (plan/activation_memory.cpp), so the
// two cannot drift apart: passes of `chunk` kv heads' query heads and `sequences` sequences over
// query blocks of `query_block` rows, each pass's scores and their gradients (sequences, chunk,
// query_block, T) in float32, within `workspace_bytes` where one head of one sequence fits.
#pragma once

#include <algorithm>
#include <cstddef>

#include "device/dtype.h"

namespace paxocl::models {

struct AttentionWorkspace {
  std::size_t query_block = 0;  // queries per score block
  std::size_t chunk = 1;        // kv heads per pass (their g query heads each)
  std::size_t sequences = 1;    // sequences per pass: > 1 only when chunk is every kv head
  bool dkv_sums = false;        // dk, dv summed per sequence in a float32 (T, 2*Hkv*hs) workspace
  std::size_t floats() const { return sequences * chunk * query_block; }  // x T per workspace (scores, dscores)
};

inline constexpr std::size_t kAttentionQueryBlock = 256;  // queries per score block (float32 activations)

// 16-bit activations run one block of T queries (dk and dv are rounded once), and with grouped
// query heads sum dk and dv per sequence in float32, so they keep one sequence per pass.
inline AttentionWorkspace attention_workspace(device::DType act, std::size_t kv_heads, std::size_t group,
                                              std::size_t max_seq_len, std::size_t max_batch,
                                              std::size_t workspace_bytes) {
  AttentionWorkspace w;
  const std::size_t T = max_seq_len;
  w.query_block = act == device::DType::kF32 ? std::min(T, kAttentionQueryBlock) : T;
  const std::size_t per_head = 2 * w.query_block * T * sizeof(float);  // scores + their gradient
  w.chunk = std::clamp<std::size_t>(workspace_bytes / per_head, 1, kv_heads);
  w.dkv_sums = act != device::DType::kF32 && group > 1;
  if (w.chunk == kv_heads && !w.dkv_sums) {
    w.sequences = std::clamp<std::size_t>(workspace_bytes / (per_head * kv_heads), 1, std::max<std::size_t>(max_batch, 1));
  }
  return w;
}

}  // namespace paxocl::models
