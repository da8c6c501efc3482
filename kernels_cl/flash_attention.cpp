#include "kernels_cl/flash_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>

#include "common/errors.h"
#include "common/whole_number.h"
#include "device/dtype.h"
#include "kernels_cl/launch_checks.h"
#include "kernels_cl/program_loader.h"
#include "kernels_cl/tensor_core_probe.h"

namespace paxocl::kernels {

namespace {
// The kernels' names, by FlashKernel.
constexpr std::array<const char*, 3> kKernelNames = {"flash_attention_forward", "flash_attention_backward_dq",
                                                     "flash_attention_backward_dkdv"};
const char* kernel_name(FlashKernel kernel) { return kKernelNames[static_cast<std::size_t>(kernel)]; }

// `kernel`'s tile in a program's tiles (FlashTiles or FlashMmaTiles).
template <typename Tiles>
const auto& tile_of(const Tiles& tiles, FlashKernel kernel) {
  switch (kernel) {
    case FlashKernel::kForward: return tiles.forward;
    case FlashKernel::kDq: return tiles.dq;
    case FlashKernel::kDkDv: break;
  }
  return tiles.dkdv;
}

// Local floats of one kernel of flash_attention_gpu.cl at this tile (keep in step with its
// __local arrays): padded (rows, FA_LD) head tiles (hs + 4 for float4 rows, hs + 1 otherwise),
// (rows, cols + 4) probability tiles and (rows, kFlashLanes) row reductions.
std::size_t local_floats(FlashKernel kernel, std::size_t hs, FlashKernelTile tile) {
  const std::size_t ld = hs % 4 == 0 ? hs + 4 : hs + 1, pitch = tile.cols + 4, rows = tile.rows, cols = tile.cols;
  switch (kernel) {
    case FlashKernel::kForward: return (rows + 2 * cols) * ld + rows * pitch + 2 * rows * kFlashLanes;
    case FlashKernel::kDq: return (2 * rows + 2 * cols) * ld + rows * pitch + rows * kFlashLanes;
    case FlashKernel::kDkDv: return (2 * rows + 2 * cols) * ld + 2 * rows * pitch + 2 * cols;
  }
  return 0;
}

// Floats of register tiles one work-item holds: score-shaped (rows x cols) and head-shaped
// (rows x head dims) products.
std::size_t register_floats(FlashKernel kernel, std::size_t hs, std::size_t rows_per_item, std::size_t cols_per_item) {
  const std::size_t scores = rows_per_item * cols_per_item, heads = rows_per_item * ((hs + kFlashLanes - 1) / kFlashLanes);
  switch (kernel) {
    case FlashKernel::kForward: return scores + heads + 2 * rows_per_item;  // s, o, running max and sum
    case FlashKernel::kDq: return 2 * scores + heads;                       // s, dp, dq
    case FlashKernel::kDkDv: return 2 * scores + 2 * heads;                 // s, dp, dk, dv
  }
  return 0;
}

std::optional<FlashKernelTile> kernel_tile(FlashKernel kernel, std::size_t hs, std::size_t group, std::size_t budget,
                                           std::size_t max_register_floats) {
  const std::size_t row_items = group / kFlashLanes;
  std::optional<FlashKernelTile> best;
  for (std::size_t rows_per_item = 1; rows_per_item <= 8 && rows_per_item * row_items <= 64; rows_per_item *= 2) {
    for (std::size_t cols_per_item = 1; cols_per_item <= 8 && cols_per_item * kFlashLanes <= 64; cols_per_item *= 2) {
      const FlashKernelTile tile{rows_per_item * row_items, cols_per_item * kFlashLanes};
      // The smallest tile is always a candidate: a large head then still runs, with what it needs.
      const bool smallest = rows_per_item == 1 && cols_per_item == 1;
      if (!smallest && register_floats(kernel, hs, rows_per_item, cols_per_item) > max_register_floats) continue;
      if (local_floats(kernel, hs, tile) * sizeof(float) > budget) continue;
      const bool larger = !best || tile.rows * tile.cols > best->rows * best->cols ||
                          (tile.rows * tile.cols == best->rows * best->cols && tile.rows > best->rows);
      if (larger) best = tile;
    }
  }
  return best;
}
}  // namespace

FlashLimits flash_limits_from(const char* group, const char* register_floats) {
  const auto read = [](const char* value, const char* name, std::size_t low, std::size_t high, std::size_t multiple,
                       std::size_t fallback) {
    if (value == nullptr || *value == '\0') return fallback;
    const std::optional<unsigned long long> v = parse_whole_number(value);
    if (!v || *v < low || *v > high || *v % multiple != 0) {
      throw ConfigError(fmt::format("{}={}: give a whole number from {} to {}{} (unset: {})", name, value, low, high,
                                    multiple > 1 ? fmt::format(", a multiple of {}", multiple) : "", fallback));
    }
    return static_cast<std::size_t>(*v);
  };
  return FlashLimits{read(group, "PAX_OCL_FLASH_GROUP", kFlashLanes, 1024, kFlashLanes, kFlashMaxGroup),
                     read(register_floats, "PAX_OCL_FLASH_REGISTER_FLOATS", 16, 256, 1, kFlashMaxRegisterTile)};
}

FlashLimits flash_limits() {
  static const FlashLimits limits =
      flash_limits_from(std::getenv("PAX_OCL_FLASH_GROUP"), std::getenv("PAX_OCL_FLASH_REGISTER_FLOATS"));
  return limits;
}

std::optional<FlashTiles> flash_tiles(std::size_t head_size, std::size_t group_size, std::size_t local_bytes,
                                      const FlashLimits& limits) {
  const std::size_t budget = std::min(local_bytes, kFlashLocalBudget);
  const std::size_t group = std::min(group_size, limits.max_group);
  if (head_size == 0 || group < kFlashLanes || group % kFlashLanes != 0) return std::nullopt;
  const std::size_t regs = limits.max_register_floats;
  const auto forward = kernel_tile(FlashKernel::kForward, head_size, group, budget, regs);
  const auto dq = kernel_tile(FlashKernel::kDq, head_size, group, budget, regs);
  const auto dkdv = kernel_tile(FlashKernel::kDkDv, head_size, group, budget, regs);
  if (!forward || !dq || !dkdv) return std::nullopt;
  const std::size_t floats = std::max({local_floats(FlashKernel::kForward, head_size, *forward),
                                       local_floats(FlashKernel::kDq, head_size, *dq),
                                       local_floats(FlashKernel::kDkDv, head_size, *dkdv)});
  return FlashTiles{group, *forward, *dq, *dkdv, floats * sizeof(float)};
}

bool uses_flash_attention(const device::DeviceInfo& device, std::size_t head_size) {
  if (head_size == 0 || requested_variant(device) != KernelVariant::kGpu) return false;
  return flash_tiles(head_size, gpu_group_size(device), device.local_mem_bytes).has_value();
}

std::optional<std::string> unfused_attention_path(const device::DeviceInfo& device, std::size_t head_size) {
  if (uses_flash_attention(device, head_size)) return std::nullopt;
  const KernelVariant set = requested_variant(device);
  const std::string why = set != KernelVariant::kGpu
                              ? fmt::format("flash attention needs the gpu set, this device runs the {} set", to_string(set))
                              : fmt::format("no flash attention tiles of head size {} fit {} KiB of local memory",
                                            head_size, std::min<std::uint64_t>(device.local_mem_bytes, kFlashLocalBudget) / 1024);
  return fmt::format("GEMMs and a causal softmax ({}.cl; {})", program_variant_name(device, "attention"), why);
}

namespace {
// Local bytes of one tensor-core kernel (keep in step with flash_attention_mma.cl's __local arrays):
// 16-bit tiles of (rows, hs + 8), and per-row floats.
std::size_t mma_local_bytes(FlashKernel kernel, std::size_t hs, FlashMmaKernelTile tile) {
  const std::size_t row = (hs + 8) * 2, rows = tile.rows(), cols = tile.cols;
  switch (kernel) {
    case FlashKernel::kForward: return (rows + 2 * cols) * row;
    case FlashKernel::kDq: return (2 * rows + 2 * cols) * row + 2 * rows * sizeof(float);
    case FlashKernel::kDkDv: return (2 * rows + 2 * cols) * row + 2 * cols * sizeof(float);
  }
  return 0;
}

// Accumulator floats a work-item holds: head-shaped (16 x hs per warp: hs / 2 a lane) and
// score-shaped (16 x cols: cols / 2) fragments.
std::size_t mma_register_floats(FlashKernel kernel, std::size_t hs, std::size_t cols) {
  switch (kernel) {
    case FlashKernel::kForward: return hs / 2 + cols / 2;  // o, s
    case FlashKernel::kDq: return hs / 2 + cols;           // dq, s, dp
    case FlashKernel::kDkDv: return hs + cols;             // dk, dv, s, dp
  }
  return 0;
}

std::optional<FlashMmaKernelTile> mma_kernel_tile(FlashKernel kernel, std::size_t hs, std::size_t budget) {
  constexpr FlashMmaKernelTile kCandidates[] = {{4, 64}, {4, 32}, {2, 32}, {2, 16}, {1, 16}};
  constexpr std::size_t kMaxRegisterFloats = 96;
  std::optional<FlashMmaKernelTile> leanest;  // fits, the fewest accumulators
  for (const FlashMmaKernelTile& tile : kCandidates) {
    if (mma_local_bytes(kernel, hs, tile) > budget) continue;
    const std::size_t floats = mma_register_floats(kernel, hs, tile.cols);
    if (floats <= kMaxRegisterFloats) return tile;
    if (!leanest || floats < mma_register_floats(kernel, hs, leanest->cols)) leanest = tile;
  }
  return leanest;
}
}  // namespace

std::optional<FlashMmaTiles> flash_mma_tiles(std::size_t head_size, std::size_t local_bytes) {
  if (head_size == 0 || head_size % 16 != 0 || head_size > kFlashMmaMaxHeadSize) return std::nullopt;
  const std::size_t budget = std::min(local_bytes, kFlashLocalBudget);
  const auto forward = mma_kernel_tile(FlashKernel::kForward, head_size, budget);
  const auto dq = mma_kernel_tile(FlashKernel::kDq, head_size, budget);
  const auto dkdv = mma_kernel_tile(FlashKernel::kDkDv, head_size, budget);
  if (!forward || !dq || !dkdv) return std::nullopt;
  const std::size_t bytes = std::max({mma_local_bytes(FlashKernel::kForward, head_size, *forward),
                                      mma_local_bytes(FlashKernel::kDq, head_size, *dq),
                                      mma_local_bytes(FlashKernel::kDkDv, head_size, *dkdv)});
  return FlashMmaTiles{*forward, *dq, *dkdv, bytes};
}

namespace {
// PAX_OCL_FLASH_VECTOR_READS=0: the kernels' scalar local-memory reads (a measuring switch: the
// float4 form against the scalar one on a GPU); the float4 form otherwise. local_floats sizes the
// tiles for the float4 form's rows, which the scalar form's never exceed.
std::string vector_reads_option() {
  const char* env = std::getenv("PAX_OCL_FLASH_VECTOR_READS");
  return env != nullptr && std::string(env) == "0" ? " -DFA_VEC_DOTS=0 -DFA_VEC_DIMS=0" : "";
}

// PAX_OCL_FLASH_TENSOR_CORES: unset or 1, tensor cores where they can run; 0, never.
bool tensor_cores_allowed() {
  const char* env = std::getenv("PAX_OCL_FLASH_TENSOR_CORES");
  const std::string value = env != nullptr ? env : "";
  if (value.empty() || value == "1") return true;
  if (value == "0") return false;
  throw ConfigError(fmt::format("PAX_OCL_FLASH_TENSOR_CORES={}: give 1 (flash attention on tensor cores where the "
                                "probe passed; the default) or 0 (float32 FMAs always)",
                                value));
}

// The tensor-core tiles when those kernels run (see FlashMath), else nullopt.
std::optional<FlashMmaTiles> mma_tiles_for(device::ProgramCache& cache, const device::Device& device,
                                           device::DType act, std::size_t head_size, FlashMath math) {
  if (math == FlashMath::kFloat) return std::nullopt;
  const auto tiles = device::is_16_bit(act) ? flash_mma_tiles(head_size, device.info().local_mem_bytes) : std::nullopt;
  if (math == FlashMath::kEmulatedTensorCores) {
    if (!tiles) {
      throw ConfigError(fmt::format("flash attention on tensor cores needs 16-bit activations (not {}) and a head "
                                    "size that is a multiple of 16 up to {} (not {})",
                                    device::dtype_name(act), kFlashMmaMaxHeadSize, head_size));
    }
    return tiles;
  }
  if (!tiles || !tensor_cores_allowed() || !probe_tensor_cores(device.info(), cache).takes(act)) return std::nullopt;
  return tiles;
}

KernelSet flash_kernels(device::ProgramCache& cache, device::Device& device, device::DType act,
                        std::size_t head_size, const std::optional<FlashMmaTiles>& mma, const FlashTiles& tiles,
                        FlashMath math) {
  const std::initializer_list<const char*> names = {kernel_name(FlashKernel::kForward), kernel_name(FlashKernel::kDq),
                                                    kernel_name(FlashKernel::kDkDv)};
  if (!mma) {
    return KernelSet(cache, device, "flash_attention",
                     names,
                     fmt::format("{} -DHS={} -DFA_WG={} -DFWD_BR={} -DFWD_BC={} -DDQ_BR={} -DDQ_BC={} -DKV_BR={} "
                                 "-DKV_BC={}{}",
                                 device::dtype_build_option(act), head_size, tiles.group_size, tiles.forward.rows,
                                 tiles.forward.cols, tiles.dq.rows, tiles.dq.cols, tiles.dkdv.rows, tiles.dkdv.cols,
                                 vector_reads_option()));
  }
  const std::string options = fmt::format(
      "{} {} -DHS={} -DFWD_WARPS={} -DFWD_BC={} -DDQ_WARPS={} -DDQ_BC={} -DKV_WARPS={} -DKV_BC={}",
      act == device::DType::kBF16 ? "-DMMA_AB_BF16" : "-DMMA_AB_F16", device::dtype_build_option(act), head_size,
      mma->forward.warps, mma->forward.cols, mma->dq.warps, mma->dq.cols, mma->dkdv.warps, mma->dkdv.cols);
  device::Program program = math == FlashMath::kEmulatedTensorCores
                                ? load_program(cache, device, "flash_attention_mma", "-DPAX_MMA_EMULATE " + options)
                                : load_ptx_program(cache, device, "flash_attention_mma", options);
  return KernelSet(device, std::move(program), names);
}

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
                                             std::size_t head_size, FlashMath math)
    : act_(act),
      head_size_(head_size),
      mma_(mma_tiles_for(cache, device, act, head_size, math)),
      tiles_(mma_ ? FlashTiles{} : tiles_for(device, head_size)),
      set_(flash_kernels(cache, device, act, head_size, mma_, tiles_, math)) {}

std::string FlashAttentionKernels::describe() const {
  if (mma_) {
    const auto tile = [](const FlashMmaKernelTile& t) { return fmt::format("{}x{}", t.rows(), t.cols); };
    return fmt::format("flash attention on tensor cores (flash_attention_mma.cl, {}, head size {}, tiles {} forward, "
                       "{} dq, {} dk/dv, {} KiB of local memory)",
                       device::dtype_name(act_), head_size_, tile(mma_->forward), tile(mma_->dq), tile(mma_->dkdv),
                       (mma_->local_bytes + 1023) / 1024);
  }
  return fmt::format("flash attention in float32 FMAs (flash_attention_gpu.cl, head size {}, groups of {}, tiles "
                     "{}x{} forward, {}x{} dq, {}x{} dk/dv, {} KiB of local memory)",
                     head_size_, tiles_.group_size, tiles_.forward.rows, tiles_.forward.cols, tiles_.dq.rows,
                     tiles_.dq.cols, tiles_.dkdv.rows, tiles_.dkdv.cols, (tiles_.local_bytes + 1023) / 1024);
}

std::pair<std::size_t, std::size_t> FlashAttentionKernels::geometry(FlashKernel kernel) const {
  if (mma_) {
    const FlashMmaKernelTile& t = tile_of(*mma_, kernel);
    return {t.rows(), t.group_size()};
  }
  return {tile_of(tiles_, kernel).rows, tiles_.group_size};
}

template <typename... Args>
void FlashAttentionKernels::launch(FlashKernel kernel, std::size_t rows, std::size_t heads, std::size_t B,
                                   const Args&... args) {
  const auto [owned, group] = geometry(kernel);
  const std::array<std::size_t, 3> global = {(rows + owned - 1) / owned * group, heads, B}, local = {group, 1, 1};
  set_.launch_nd(kernel_name(kernel), global, local, args...);
}

namespace {
void check_heads(std::string_view kernel, const AttentionHeads& heads) {
  if (heads.head_size == 0 || heads.kv_heads == 0 || heads.heads % heads.kv_heads != 0) {
    throw DeviceError(fmt::format("{}: {} heads cannot share {} kv heads of size {}", kernel, heads.heads,
                                  heads.kv_heads, heads.head_size));
  }
}
// Columns first .. first+count-1 of rows `stride` wide.
void require_columns(std::string_view kernel, std::string_view what, std::size_t first, std::size_t count,
                     std::size_t stride) {
  if (first + count > stride) {
    throw DeviceError(fmt::format("{}: {} at columns {} .. {} run past rows of {}", kernel, what, first,
                                  first + count - 1, stride));
  }
}
// flash_attention_gpu.cl reads runs of 4 head dims with aligned vector loads (act_load4a) when the
// head size is a multiple of 4; each row stride and column offset must then be one too (wherever
// pax-ocl calls these kernels they are multiples of the head size). The tensor-core kernels check
// alignment themselves and fall back to element-wise loads.
void require_runs_of_4(std::size_t head_size, std::string_view kernel,
                       std::initializer_list<std::pair<std::string_view, std::size_t>> elements) {
  if (head_size % 4 != 0) return;
  for (const auto& [name, value] : elements) {
    if (value % 4 != 0) {
      throw DeviceError(fmt::format("{}: {} = {} is not a multiple of 4, which head size {} needs (aligned vector "
                                    "reads of 4 head dims)",
                                    kernel, name, value, head_size));
    }
  }
}
}  // namespace

void check_flash_forward(std::string_view kernel, const ActBuffer& q, std::size_t q_stride, const KeyValueRows& kv,
                         const ActBuffer& out, std::size_t out_stride, const FloatBuffer& lse,
                         std::size_t stats_stride, const AttentionHeads& heads, std::size_t B, std::size_t queries,
                         std::size_t p0) {
  check_heads(kernel, heads);
  if (kv.buffer == nullptr) throw DeviceError(fmt::format("{}: no key/value buffer", kernel));
  require_act(q.dtype(), kernel, *kv.buffer, out);
  const std::size_t H = heads.heads, Hkv = heads.kv_heads, hs = heads.head_size;
  require_columns(kernel, "the query heads", 0, H * hs, q_stride);
  require_columns(kernel, "the key heads", kv.k_col, Hkv * hs, kv.stride);
  require_columns(kernel, "the value heads", kv.v_col, Hkv * hs, kv.stride);
  require_columns(kernel, "the output heads", 0, H * hs, out_stride);
  if (B == 0 || queries == 0) return;
  if (p0 + queries > kv.rows_per_sequence || p0 + queries > stats_stride) {
    throw DeviceError(fmt::format("{}: positions up to {} exceed {} key rows or {} statistics per head", kernel,
                                  p0 + queries, kv.rows_per_sequence, stats_stride));
  }
  require_count(kernel, B * queries * q_stride, q);
  require_count(kernel, B * queries * out_stride, out);
  require_count(kernel, B * kv.rows_per_sequence * kv.stride, *kv.buffer);
  require_count(kernel, B * H * stats_stride, lse);
}

void check_flash_backward(std::string_view kernel, const ActBuffer& qkv, std::size_t width, std::size_t k_col,
                          std::size_t v_col, const ActBuffer& out, const ActBuffer& dout, const FloatBuffer& lse,
                          const ActBuffer& dqkv, const AttentionHeads& heads, std::size_t B, std::size_t T) {
  check_heads(kernel, heads);
  require_act(qkv.dtype(), kernel, out, dout, dqkv);
  const std::size_t H = heads.heads, Hkv = heads.kv_heads, hs = heads.head_size, D = H * hs;
  require_columns(kernel, "the query heads", 0, D, width);
  require_columns(kernel, "the key heads", k_col, Hkv * hs, width);
  require_columns(kernel, "the value heads", v_col, Hkv * hs, width);
  if (B == 0 || T == 0) return;
  require_count(kernel, B * T * width, qkv, dqkv);
  require_count(kernel, B * T * D, out, dout);
  require_count(kernel, B * H * T, lse);
}

void FlashAttentionKernels::require_head_size(const AttentionHeads& heads) const {
  if (heads.head_size != head_size_) {
    throw DeviceError(fmt::format("flash attention: heads of size {} handed to kernels built for size {}",
                                  heads.head_size, head_size_));
  }
}

void FlashAttentionKernels::forward(const ActBuffer& q, std::size_t q_stride, const KeyValueRows& kv, ActBuffer& out,
                                    std::size_t out_stride, FloatBuffer& lse, std::size_t stats_stride,
                                    const AttentionHeads& heads, std::size_t B, std::size_t queries, std::size_t p0) {
  require_head_size(heads);
  check_flash_forward("flash_attention_forward", q, q_stride, kv, out, out_stride, lse, stats_stride, heads, B, queries,
                      p0);
  require_act(act_, "flash_attention_forward", q);
  const std::size_t H = heads.heads, hs = heads.head_size;
  if (B == 0 || queries == 0) return;
  if (!mma_) require_runs_of_4(hs, "flash_attention_forward",
                    {{"q_stride", q_stride}, {"kv stride", kv.stride}, {"k_col", kv.k_col}, {"v_col", kv.v_col},
                     {"out_stride", out_stride}});
  launch(FlashKernel::kForward, queries, H, B, q, u32(q_stride), *kv.buffer, u32(kv.stride),
         u32(kv.rows_per_sequence), u32(kv.k_col), u32(kv.v_col), out, u32(out_stride), lse, u32(stats_stride),
         u32(queries), u32(p0), u32(H), u32(heads.group()), 1.0f / std::sqrt(float(hs)));
}

void FlashAttentionKernels::backward(const ActBuffer& qkv, std::size_t width, std::size_t k_col, std::size_t v_col,
                                     const ActBuffer& out, const ActBuffer& dout, const FloatBuffer& lse,
                                     FloatBuffer& delta, ActBuffer& dqkv, const AttentionHeads& heads, std::size_t B,
                                     std::size_t T) {
  require_head_size(heads);
  check_flash_backward("flash_attention_backward", qkv, width, k_col, v_col, out, dout, lse, dqkv, heads, B, T);
  require_act(act_, "flash_attention_backward", qkv);
  const std::size_t H = heads.heads, D = H * heads.head_size;
  if (B == 0 || T == 0) return;
  require_count("flash_attention_backward", B * H * T, delta);
  if (!mma_) require_runs_of_4(heads.head_size, "flash_attention_backward",
                    {{"width", width}, {"k_col", k_col}, {"v_col", v_col}, {"D", D}});
  const float scale = 1.0f / std::sqrt(float(heads.head_size));
  // The same arguments for both: dq (a group per query block and head) writes delta, dk/dv (per
  // key block and kv head) reads it.
  const std::pair<FlashKernel, std::size_t> passes[] = {{FlashKernel::kDq, H}, {FlashKernel::kDkDv, heads.kv_heads}};
  for (const auto& [kernel, head_groups] : passes) {
    launch(kernel, T, head_groups, B, qkv, u32(width), u32(k_col), u32(v_col), out, dout, u32(D), lse,
           delta, dqkv, u32(T), u32(H), u32(heads.group()), scale);
  }
}

}  // namespace paxocl::kernels
