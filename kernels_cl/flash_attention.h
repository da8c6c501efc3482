// FlashAttentionKernels: causal attention of the GPU kernel set as three fused kernels
// (kernels_cl/flash_attention_gpu.cl, FlashAttention-2's scheme): a forward that keeps only the
// log-sum-exp, and a backward in two deterministic passes (dq per query block; dk and dv per key
// block, summed over the query heads of a grouped-query group inside the kernel), so no (T, T)
// score tensor and no float atomics. models/layers/causal_attention.cpp uses it when the device
// runs the GPU set and the tiles fit its local memory, and its GEMM + softmax path otherwise.
// With 16-bit activations on tensor cores (FlashMath) the same kernels come from
// flash_attention_mma.cl: same arguments and results, other tiles and work-group sizes.
// Layouts (as CausalAttention's): H query heads, Hkv kv heads (Hkv divides H), hs dims each;
//   q, out, dout: rows of sequences, head h at columns h*hs of the row (row strides given);
//   k, v: rows of `rows_per_sequence` per sequence, kv head c at columns k_col + c*hs, v_col + c*hs;
//   lse, delta: float (B, H, stats_stride), query t of sequence b at (b*H + h)*stats_stride + p0 + t.
// Programs are built per (act dtype, hs, tiles); one per head size in use.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "device/typed_buffer.h"
#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

using ActBuffer = device::TypedBuffer;
using FloatBuffer = device::Buffer<float>;

// The three kernels of either program (flash_attention_gpu.cl and flash_attention_mma.cl name them
// alike): flash_attention_forward, flash_attention_backward_dq, flash_attention_backward_dkdv.
enum class FlashKernel { kForward, kDq, kDkDv };

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
// The tensor-core kernels' tiles (flash_attention_mma.cl): per kernel `warps` warps of 16 rows each
// and tiles of `cols` rows of the other side; `local_bytes`, the largest kernel's local memory.
struct FlashMmaKernelTile {
  std::size_t warps = 0, cols = 0;
  std::size_t rows() const { return 16 * warps; }
  std::size_t group_size() const { return 32 * warps; }
};
struct FlashMmaTiles {
  FlashMmaKernelTile forward, dq, dkdv;
  std::size_t local_bytes = 0;
};
inline constexpr std::size_t kFlashMmaMaxHeadSize = 128;
// Per kernel the first of 4x64, 4x32, 2x32, 2x16, 1x16 (warps x cols) whose accumulators stay
// within 96 floats a work-item and whose tiles fit `local_bytes` (capped at kFlashLocalBudget),
// else the one that fits with the fewest (scripts/check_ptx.sh: no spills at head sizes 64 and
// 128); nullopt for a head size that is not a multiple of 16 up to
// kFlashMmaMaxHeadSize, or when nothing fits.
std::optional<FlashMmaTiles> flash_mma_tiles(std::size_t head_size, std::size_t local_bytes);

// How flash attention multiplies. kAuto: on tensor cores (flash_attention_mma.cl) when the
// activations are 16-bit, the tensor-core probe passed for their dtype, flash_mma_tiles has tiles
// and PAX_OCL_FLASH_TENSOR_CORES is not 0 (a measuring switch); in float32 FMAs
// (flash_attention_gpu.cl) otherwise. kFloat: always the latter. kEmulatedTensorCores (tests):
// the tensor-core kernels built with PAX_MMA_EMULATE, on any device that has the local memory.
enum class FlashMath { kAuto, kFloat, kEmulatedTensorCores };

// Whether `device` runs attention as flash attention at this head size: its kernel set is the GPU
// one and flash_tiles finds tiles for it.
bool uses_flash_attention(const device::DeviceInfo& device, std::size_t head_size);
// How attention at this head size runs on `device` where it is not flash attention, and why, for
// the log: "GEMMs and a causal softmax (attention_cpu.cl; flash attention needs the gpu set, this
// device runs the cpu set)"; nullopt where uses_flash_attention (FlashAttentionKernels::describe
// names that path: which program runs depends on the activations' dtype too).
std::optional<std::string> unfused_attention_path(const device::DeviceInfo& device, std::size_t head_size);

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

// The checks both flash attentions (FlashAttentionKernels and cpu_flash_attention.h's) make before a
// call, as one-line DeviceErrors naming `kernel`: heads that share kv heads evenly, act buffers of
// one dtype, each head's columns inside its rows, positions inside the key rows and statistics, and
// buffers long enough for the shape; so no call reads or writes past a buffer.
void check_flash_forward(std::string_view kernel, const ActBuffer& q, std::size_t q_stride, const KeyValueRows& kv,
                         const ActBuffer& out, std::size_t out_stride, const FloatBuffer& lse,
                         std::size_t stats_stride, const AttentionHeads& heads, std::size_t B, std::size_t queries,
                         std::size_t p0);
void check_flash_backward(std::string_view kernel, const ActBuffer& qkv, std::size_t width, std::size_t k_col,
                          std::size_t v_col, const ActBuffer& out, const ActBuffer& dout, const FloatBuffer& lse,
                          const ActBuffer& dqkv, const AttentionHeads& heads, std::size_t B, std::size_t T);

class FlashAttentionKernels {
 public:
  // kAuto and kFloat: ConfigError when uses_flash_attention(device, head_size) is false.
  // kEmulatedTensorCores: ConfigError unless act is 16-bit and flash_mma_tiles has tiles.
  FlashAttentionKernels(device::ProgramCache& cache, device::Device& device, device::DType act, std::size_t head_size,
                        FlashMath math = FlashMath::kAuto);

  bool on_tensor_cores() const { return mma_.has_value(); }
  // The program that runs and its tiles, for the log (models/layers/causal_attention.cpp says it
  // once per device and head size): "flash attention on tensor cores (flash_attention_mma.cl,
  // bfloat16, head size 64, tiles 64x64 forward, 64x64 dq, 64x32 dk/dv, 37 KiB of local memory)" or
  // "flash attention in float32 FMAs (flash_attention_gpu.cl, head size 64, groups of 128, tiles
  // 64x32 forward, 32x32 dq, 32x32 dk/dv, 45 KiB of local memory)".
  std::string describe() const;

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
  // DeviceError unless heads.head_size is the one the programs were built for.
  void require_head_size(const AttentionHeads& heads) const;
  // The rows a group of `kernel` owns and its work-group size, on whichever kernels run.
  std::pair<std::size_t, std::size_t> geometry(FlashKernel kernel) const;
  // Groups (ceil(rows / owned rows), heads, B) of geometry(kernel).
  template <typename... Args>
  void launch(FlashKernel kernel, std::size_t rows, std::size_t heads, std::size_t B, const Args&... args);

  device::DType act_;
  std::size_t head_size_;
  std::optional<FlashMmaTiles> mma_;  // set: the tensor-core kernels run
  FlashTiles tiles_;                  // the float32 kernels' (when mma_ is empty)
  KernelSet set_;
};

}  // namespace paxocl::kernels
