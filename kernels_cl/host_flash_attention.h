// Causal attention on the host, blocked for the CPU's caches: the computation of CausalAttention
// (models/layers/causal_attention.h) on host memory, run by CpuFlashAttention
// (kernels_cl/cpu_flash_attention.h) as one native kernel per call.
//
// Why: through GEMMs over a (heads, T, T) score workspace and PoCL softmax kernels, a CPU streams
// every score through memory three to five times and multiplies the masked upper triangle inside
// each 256-query block; the attention GEMMs (256 x 256 x 64 per head) ran at about 100 GFLOP/s on
// 2 cores of a Xeon where the layers' GEMMs reach 300. Here each task owns a block of
// kHostFlashQueryBlock queries of one head: its scores (block, keys) stay in the core's cache
// from the GEMM through the softmax to the next GEMM, and the keys past the block's last query
// are never multiplied.
//
// Forward: per (sequence, head, query block), S = q k^T over the block's causal keys (oneDNN's
// sgemm, one thread), an exact softmax per row (a block holds its rows' whole causal range, so
// no online rescaling), out = P v; only the row logsumexp is kept. Backward: per query block and
// block of keys, P recomputed from the logsumexp (FlashAttention's trade), dP = dO v^T,
// dS = scale P (dP - rowsum(dO o)), dq = dS k, dv += P^T dO, dk += dS^T q; dk and dv are float32
// sums over (query head, query block) in one fixed order, rounded into dqkv once, in either of
// the two forms below, so the result depends on neither the form, the thread count nor the
// schedule: bit-for-bit reproducible run to run.
// Everything is float32 inside; 16-bit activations are widened once per task (keys and values for
// its longest block) and the results rounded once (common/float16.h's conversions, bit-exact with
// the OpenCL kernels').
// Layouts as FlashAttentionKernels' (kernels_cl/flash_attention.h).
#pragma once

#include <cstddef>
#include <optional>

#include "device/dtype.h"
#include "kernels_cl/flash_attention.h"

namespace paxocl::kernels {

// Queries per task. 64 keeps a block's scores and probabilities (64 x T floats each) within
// L2 up to T = 2048 and gives enough tasks to share out; measured on bench_host_flash (docs/benchmarks.md).
inline constexpr std::size_t kHostFlashQueryBlock = 64;
// Keys per backward product: every score, probability and dk/dv product is computed for one block
// of keys by the same call in both backward forms below, which is what makes them the same bits.
inline constexpr std::size_t kHostFlashKeyBlock = 128;

// The backward in two forms that give the same bits:
//   kFused  a task per (sequence, kv head): every query block of the group's heads once, dk and dv
//           summed in the task. B*Hkv tasks: few where batches are small and heads grouped (LLaMA
//           at B1 has 8 on a 64-core host).
//   kSplit  a dq task per (sequence, head, query block) and a dk/dv task per (sequence, kv head,
//           key block), each recomputing the scores it needs (FlashAttention-2's dq / dk-dv split):
//           enough tasks for any host, at kHostFlashSplitCost times the work.
enum class HostFlashBackwardForm { kFused, kSplit };
// Split over fused, every thread busy in both: 1.3 to 1.6 measured with bench_host_flash on a Xeon
// with AVX-512 (docs/benchmarks.md); it does about 7 products where the fused form does 5.
inline constexpr double kHostFlashSplitCost = 1.5;
// kSplit where the fused form's B*Hkv tasks would leave threads idle for longer than the split
// form's extra work takes; depends on the shape and thread count, never on the bits.
HostFlashBackwardForm host_flash_backward_form(std::size_t sequences_times_kv_heads, unsigned threads);

// The instruction sets the tasks are compiled for, widest first. One binary runs on any x86-64 CPU:
// by default the widest that CPUID reports; a narrower one can be asked for (the tests run every
// one this CPU has, so the code other CPUs run is tested here too).
enum class HostVectorUnit { kAvx512, kAvx2, kBaseline };
HostVectorUnit widest_host_vector_unit();  // this CPU's, by CPUID
bool host_vector_unit_available(HostVectorUnit unit);
// "AVX-512", "AVX2 + FMA" or "SSE2" (x86-64's baseline), for the log.
const char* host_vector_unit_name(HostVectorUnit unit);

// B sequences of `queries` queries at positions p0 .. p0+queries-1 (q: (B*queries, q_stride) rows,
// head h at column h*hs) against keys 0 .. p0+t of the key/value rows `kv` (sequence b's key u at
// row b*kv_rows_per_sequence + u, kv head c at columns k_col + c*hs and v_col + c*hs) ->
// out (B*queries, out_stride) at column h*hs; lse (B, H, stats_stride) at p0 + t.
struct HostFlashForward {
  const void* q = nullptr;
  std::size_t q_stride = 0;
  const void* kv = nullptr;
  std::size_t kv_rows_per_sequence = 0, kv_stride = 0, k_col = 0, v_col = 0;
  void* out = nullptr;
  std::size_t out_stride = 0;
  float* lse = nullptr;
  std::size_t stats_stride = 0;
  device::DType act = device::DType::kF32;  // q, kv and out
  AttentionHeads heads;
  std::size_t B = 0, queries = 0, p0 = 0;
  std::size_t query_block = kHostFlashQueryBlock;  // queries per task (bench_host_flash sweeps it)
  std::optional<HostVectorUnit> unit = std::nullopt;  // unset: widest_host_vector_unit()
};

// Training backward over B sequences of T tokens: q, k, v in qkv (B*T, width) at columns 0,
// k_col, v_col; out (the forward's) and dout (B*T, H*hs); lse (B, H, T) -> dqkv (B*T, width):
// the q, k and v columns written, every row.
struct HostFlashBackward {
  const void* qkv = nullptr;
  std::size_t width = 0, k_col = 0, v_col = 0;
  const void* out = nullptr;
  const void* dout = nullptr;
  const float* lse = nullptr;
  void* dqkv = nullptr;
  device::DType act = device::DType::kF32;  // qkv, out, dout and dqkv
  AttentionHeads heads;
  std::size_t B = 0, T = 0;
  std::size_t query_block = kHostFlashQueryBlock;  // queries per GEMM block
  std::size_t key_block = kHostFlashKeyBlock;      // keys per GEMM block (and per split dk/dv task)
  std::optional<HostVectorUnit> unit = std::nullopt;  // unset: widest_host_vector_unit()
  std::optional<HostFlashBackwardForm> form = std::nullopt;  // unset: host_flash_backward_form
};

// Both run `threads` OpenMP threads over their tasks (forward: B*H, or B*H*blocks where that leaves
// fewer than 4 per thread, the same bits either way; backward: its form's) and return when done. They throw std::runtime_error (naming the call) when oneDNN refuses a GEMM,
// and std::bad_alloc when a task's workspace (a few (T, hs) and (block, T) floats) cannot be had;
// std::invalid_argument for a query or key block of 0 or a unit this CPU lacks.

void host_flash_forward(const HostFlashForward& args, unsigned threads);
void host_flash_backward(const HostFlashBackward& args, unsigned threads);

}  // namespace paxocl::kernels
