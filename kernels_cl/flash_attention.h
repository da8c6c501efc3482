// FlashAttentionKernels: causal attention of the GPU kernel set as three fused kernels
// (kernels_cl/flash_attention_gpu.cl, FlashAttention-2's scheme): a forward that keeps only the
// log-sum-exp, and a backward in two deterministic passes (dq per query block; dk and dv per key
// block, summed over the query heads of a grouped-query group inside the kernel), so no (T, T)
// score tensor and no float atomics. models/layers/causal_attention.cpp uses it when the device
// runs the GPU set and the tiles fit its local memory, and its GEMM + softmax path otherwise.
// Layouts (as CausalAttention's): H query heads, Hkv kv heads (Hkv divides H), hs dims each;
//   q, out, dout: rows of sequences, head h at columns h*hs of the row (row strides given);
//   k, v: rows of `rows_per_sequence` per sequence, kv head c at columns k_col + c*hs, v_col + c*hs;
//   lse, delta: float (B, H, stats_stride), query t of sequence b at (b*H + h)*stats_stride + p0 + t.
// Programs are built per (act dtype, hs, tiles); one per head size in use.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "device/typed_buffer.h"
#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

using ActBuffer = device::TypedBuffer;
using FloatBuffer = device::Buffer<float>;

// One kernel's tile: a work-group owns `rows` rows (queries, or keys in dk/dv) and streams `cols`
// rows of the other side per step; each of its work-items holds rows / (group_size / kFlashLanes)
// rows and cols / kFlashLanes columns of every product in registers.
struct FlashKernelTile {
  std::size_t rows = 0, cols = 0;
};
// A program's tiles: work-groups of `group_size`, a tile per kernel; `local_bytes`, the largest
// of the three kernels' local memory.
struct FlashTiles {
  std::size_t group_size = 0;
  FlashKernelTile forward, dq, dkdv;
  std::size_t local_bytes = 0;
};

inline constexpr std::size_t kFlashLanes = 8;        // work-items per row (FA_TC in the kernel)
inline constexpr std::size_t kFlashMaxGroup = 128;   // larger groups would leave each work-item too little to reuse
inline constexpr std::size_t kFlashMaxRegisterTile = 64;  // floats of register tiles a work-item holds, at most
// Local memory a group may use: the device's, capped at 48 KiB (NVIDIA's OpenCL limit per group).
inline constexpr std::size_t kFlashLocalBudget = 48 * 1024;

// The two limits of the tile rule. Measuring switches, read once from the environment, to time
// other tiles on a GPU without a rebuild: PAX_OCL_FLASH_GROUP (a multiple of 8 up to 1024; default
// kFlashMaxGroup) and PAX_OCL_FLASH_REGISTER_FLOATS (16 to 256; default kFlashMaxRegisterTile).
// ConfigError, one line, for a value outside those.
struct FlashLimits {
  std::size_t max_group = kFlashMaxGroup, max_register_floats = kFlashMaxRegisterTile;
};
FlashLimits flash_limits();
FlashLimits flash_limits_from(const char* group, const char* register_floats);  // the parsing, for tests

// Tiles for head size `head_size` when the GPU set's groups are `group_size` (flash attention
// uses min(group_size, limits.max_group)), fitting `local_bytes` (capped at kFlashLocalBudget): per
// kernel the largest rows x cols (then more rows) whose register tiles stay within
// limits.max_register_floats (one row and column per work-item always may), rows and cols at
// most 64; nullopt when some kernel's smallest tile does not fit.
std::optional<FlashTiles> flash_tiles(std::size_t head_size, std::size_t group_size, std::size_t local_bytes,
                                      const FlashLimits& limits = flash_limits());
// Whether `device` runs attention as flash attention at this head size: its kernel set is the GPU
// one and flash_tiles finds tiles for it.
bool uses_flash_attention(const device::DeviceInfo& device, std::size_t head_size);
// How attention at this head size runs on `device` and why, for the log: "flash attention
// (flash_attention_gpu.cl, head size 64, groups of 128, tiles 64x32 forward, 32x32 dq, 32x32
// dk/dv, 45 KiB of local memory)" or "GEMMs and a
// causal softmax (attention_cpu.cl; flash attention needs the gpu set, this device runs the cpu set)".
std::string attention_path(const device::DeviceInfo& device, std::size_t head_size);

struct AttentionHeads {
  std::size_t heads = 0, kv_heads = 0, head_size = 0;  // H, Hkv, hs
  std::size_t group() const { return heads / kv_heads; }
};

// Keys and values: sequence b's key u, kv head c at element (b*rows_per_sequence + u)*stride +
// k_col + c*hs (values at v_col).
struct KeyValueRows {
  const ActBuffer* buffer = nullptr;
  std::size_t rows_per_sequence = 0, stride = 0, k_col = 0, v_col = 0;
};

class FlashAttentionKernels {
 public:
  // ConfigError when uses_flash_attention(device, head_size) is false.
  FlashAttentionKernels(device::ProgramCache& cache, device::Device& device, device::DType act, std::size_t head_size);

  const FlashTiles& tiles() const { return tiles_; }

  // B sequences of `queries` queries at positions p0 .. p0+queries-1 (q: (B*queries, q_stride))
  // against keys 0 .. p0+t each -> out (B*queries, out_stride), lse at stats_stride per head.
  void forward(const ActBuffer& q, std::size_t q_stride, const KeyValueRows& kv, ActBuffer& out,
               std::size_t out_stride, FloatBuffer& lse, std::size_t stats_stride, const AttentionHeads& heads,
               std::size_t B, std::size_t queries, std::size_t p0);
  // Training backward over B sequences of T tokens, q, k, v in qkv (B*T, width) at columns 0,
  // k_col, v_col; out (forward's) and dout (B*T, H*hs); lse (B, H, T) -> dqkv (B*T, width), every
  // column written; delta (B, H, T) = dout.out per query is workspace (written by the dq pass).
  void backward(const ActBuffer& qkv, std::size_t width, std::size_t k_col, std::size_t v_col, const ActBuffer& out,
                const ActBuffer& dout, const FloatBuffer& lse, FloatBuffer& delta, ActBuffer& dqkv,
                const AttentionHeads& heads, std::size_t B, std::size_t T);

 private:
  // (blocks, heads, B) groups of tiles_.group_size work-items.
  template <typename... Args>
  void launch(const char* kernel, std::size_t blocks, std::size_t heads, std::size_t B, const Args&... args);

  device::DType act_;
  std::size_t head_size_;
  FlashTiles tiles_;
  KernelSet set_;
};

}  // namespace paxocl::kernels
