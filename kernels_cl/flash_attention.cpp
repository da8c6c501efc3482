#include "kernels_cl/flash_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "common/errors.h"
#include "kernels_cl/launch_checks.h"

namespace paxocl::kernels {

namespace {
// Local floats of each kernel of flash_attention_gpu.cl at these tiles (keep in step with its
// __local arrays): the largest of the three.
std::size_t local_floats(std::size_t hs, std::size_t group_size, std::size_t rows, std::size_t cols) {
  const std::size_t ld = hs + 1, pld = cols + 1;
  const std::size_t forward = (rows + 2 * cols) * ld + rows * pld + 2 * group_size;
  const std::size_t dq = (2 * rows + 2 * cols) * ld + rows * pld + group_size;
  const std::size_t dkdv = (2 * rows + 2 * cols) * ld + 2 * rows * pld + 2 * cols;
  return std::max({forward, dq, dkdv});
}
}  // namespace

std::optional<FlashTiles> flash_tiles(std::size_t head_size, std::size_t group_size, std::size_t local_bytes) {
  const std::size_t budget = std::min(local_bytes, kFlashLocalBudget);
  std::optional<FlashTiles> best;
  // At least 4 work-items per owned row: fewer would hold a whole head row in registers.
  for (std::size_t rows = 4; rows <= std::min<std::size_t>(64, group_size / 4); rows *= 2) {
    for (std::size_t cols = 8; cols <= 32; cols *= 2) {
      const std::size_t bytes = local_floats(head_size, group_size, rows, cols) * sizeof(float);
      if (bytes > budget) continue;
      const bool larger = !best || rows * cols > best->rows * best->cols ||
                          (rows * cols == best->rows * best->cols && rows > best->rows);
      if (larger) best = FlashTiles{rows, cols, bytes};
    }
  }
  return best;
}

bool uses_flash_attention(const device::DeviceInfo& device, std::size_t head_size) {
  if (head_size == 0 || requested_variant(device) != KernelVariant::kGpu) return false;
  return flash_tiles(head_size, gpu_group_size(device), device.local_mem_bytes).has_value();
}

std::string attention_path(const device::DeviceInfo& device, std::size_t head_size) {
  if (uses_flash_attention(device, head_size)) {
    const FlashTiles t = *flash_tiles(head_size, gpu_group_size(device), device.local_mem_bytes);
    return fmt::format("flash attention (flash_attention_gpu.cl, head size {}, {}x{} tiles in {} KiB of local memory)",
                       head_size, t.rows, t.cols, (t.local_bytes + 1023) / 1024);
  }
  const KernelVariant set = requested_variant(device);
  const std::string why = set != KernelVariant::kGpu
                              ? fmt::format("flash attention needs the gpu set, this device runs the {} set", to_string(set))
                              : fmt::format("no flash attention tiles of head size {} fit {} KiB of local memory",
                                            head_size, std::min<std::uint64_t>(device.local_mem_bytes, kFlashLocalBudget) / 1024);
  return fmt::format("GEMMs and a causal softmax ({}.cl; {})", program_variant_name(device, "attention"), why);
}

namespace {
FlashTiles tiles_for(const device::Device& device, std::size_t head_size) {
  if (!uses_flash_attention(device.info(), head_size)) {
    throw ConfigError(fmt::format("flash attention needs the GPU kernel set and tiles of head size {} that fit {} "
                                  "bytes of local memory in groups of {}",
                                  head_size, device.info().local_mem_bytes, gpu_group_size(device.info())));
  }
  return *flash_tiles(head_size, gpu_group_size(device.info()), device.info().local_mem_bytes);
}
}  // namespace

FlashAttentionKernels::FlashAttentionKernels(device::ProgramCache& cache, device::Device& device, device::DType act,
                                             std::size_t head_size)
    : act_(act),
      head_size_(head_size),
      tiles_(tiles_for(device, head_size)),
      set_(cache, device, "flash_attention",
           {"flash_attention_forward", "flash_attention_backward_dq", "flash_attention_backward_dkdv"},
           fmt::format("{} -DHS={} -DFA_BR={} -DFA_BC={}", device::dtype_build_option(act), head_size, tiles_.rows,
                       tiles_.cols)) {}

template <typename... Args>
void FlashAttentionKernels::launch(const char* kernel, std::size_t blocks, std::size_t heads, std::size_t B,
                                   const Args&... args) {
  const std::size_t wg = set_.group_size();
  const std::array<std::size_t, 3> global = {blocks * wg, heads, B}, local = {wg, 1, 1};
  set_.launch_nd(kernel, global, local, args...);
}

namespace {
void check_heads(const AttentionHeads& heads, std::size_t head_size) {
  if (heads.head_size != head_size || heads.kv_heads == 0 || heads.heads % heads.kv_heads != 0) {
    throw DeviceError(fmt::format("flash attention: {} heads sharing {} kv heads of size {} (built for size {})",
                                  heads.heads, heads.kv_heads, heads.head_size, head_size));
  }
}
}  // namespace

void FlashAttentionKernels::forward(const ActBuffer& q, std::size_t q_stride, const KeyValueRows& kv, ActBuffer& out,
                                    std::size_t out_stride, FloatBuffer& lse, std::size_t stats_stride,
                                    const AttentionHeads& heads, std::size_t B, std::size_t queries, std::size_t p0) {
  check_heads(heads, head_size_);
  require_act(act_, "flash_attention_forward", q, *kv.buffer, out);
  const std::size_t H = heads.heads, hs = heads.head_size;
  if (B == 0 || queries == 0) return;
  if (p0 + queries > kv.rows_per_sequence || p0 + queries > stats_stride) {
    throw DeviceError(fmt::format("flash_attention_forward: positions up to {} exceed {} key rows or {} statistics "
                                  "per head",
                                  p0 + queries, kv.rows_per_sequence, stats_stride));
  }
  require_count("flash_attention_forward", B * queries * q_stride, q);
  require_count("flash_attention_forward", B * queries * out_stride, out);
  require_count("flash_attention_forward", B * kv.rows_per_sequence * kv.stride, *kv.buffer);
  require_count("flash_attention_forward", B * H * stats_stride, lse);
  launch("flash_attention_forward", (queries + tiles_.rows - 1) / tiles_.rows, H, B, q, u32(q_stride), *kv.buffer,
         u32(kv.stride), u32(kv.rows_per_sequence), u32(kv.k_col), u32(kv.v_col), out, u32(out_stride), lse,
         u32(stats_stride), u32(queries), u32(p0), u32(H), u32(heads.group()), 1.0f / std::sqrt(float(hs)));
}

void FlashAttentionKernels::backward(const ActBuffer& qkv, std::size_t width, std::size_t k_col, std::size_t v_col,
                                     const ActBuffer& out, const ActBuffer& dout, const FloatBuffer& lse,
                                     FloatBuffer& delta, ActBuffer& dqkv, const AttentionHeads& heads, std::size_t B,
                                     std::size_t T) {
  check_heads(heads, head_size_);
  require_act(act_, "flash_attention_backward", qkv, out, dout, dqkv);
  const std::size_t H = heads.heads, D = H * heads.head_size;
  if (B == 0 || T == 0) return;
  require_count("flash_attention_backward", B * T * width, qkv, dqkv);
  require_count("flash_attention_backward", B * T * D, out, dout);
  require_count("flash_attention_backward", B * H * T, lse, delta);
  const float scale = 1.0f / std::sqrt(float(heads.head_size));
  const std::size_t blocks = (T + tiles_.rows - 1) / tiles_.rows;
  // The same arguments for both: dq (a group per query head) writes delta, dk/dv (per kv head) reads it.
  const std::pair<const char*, std::size_t> passes[] = {{"flash_attention_backward_dq", H},
                                                        {"flash_attention_backward_dkdv", heads.kv_heads}};
  for (const auto& [kernel, head_groups] : passes) {
    launch(kernel, blocks, head_groups, B, qkv, u32(width), u32(k_col), u32(v_col), out, dout, u32(D), lse, delta,
           dqkv, u32(T), u32(H), u32(heads.group()), scale);
  }
}

}  // namespace paxocl::kernels
