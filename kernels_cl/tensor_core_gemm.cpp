#include "kernels_cl/tensor_core_gemm.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

#include "common/errors.h"
#include "kernels_cl/auto_gemm.h"
#include "kernels_cl/gemm_epilogue.h"
#include "kernels_cl/program_loader.h"

namespace paxocl::kernels {

namespace {
// Operand elements per 16-byte chunk (the kernel's cp.async unit).
std::size_t chunk_elements(device::DType ab) { return 16 / device::dtype_size(ab); }

// Names of the per-class tile choice's candidates: "tensor-core-128x128x32.w64x32.s2".
constexpr std::string_view kTilePrefix = "tensor-core-";
// Its stored choices: mma-tile-choices-<device fingerprint>.txt beside the program cache.
constexpr const char* kTileChoicesStem = "mma-tile-choices";

// Whether every 16-byte chunk cp.async copies of `x` (`chunk` elements) is aligned.
bool chunks_aligned(const GemmOperand& x, std::size_t batch, std::size_t chunk) {
  return x.offset % chunk == 0 && x.ld % chunk == 0 && (batch == 1 || x.batch_stride % chunk == 0);
}
}  // namespace

std::size_t MmaTile::local_bytes(std::size_t element_bytes) const {
  // gemm_mma.cl's row padding: PAD_K on rows along k, PAD_MN on rows along m or n; none swizzled.
  const int pad_k = swizzle ? 0 : element_bytes == 4 ? 4 : 8, pad_mn = swizzle ? 0 : 8;
  const auto stage = [&](int rows) {  // larger of (rows, BK + PAD_K) and (BK, rows + PAD_MN)
    return static_cast<std::size_t>(std::max(rows * (bk + pad_k), bk * (rows + pad_mn)));
  };
  return static_cast<std::size_t>(stages) * (stage(bm) + stage(bn)) * element_bytes;
}

std::string MmaTile::defines() const {
  return fmt::format("-DBM={} -DBN={} -DBK={} -DWM={} -DWN={} -DSTAGES={} -DSWIZZLE={}", bm, bn, bk, wm, wn, stages,
                     swizzle ? 1 : 0);
}

std::string MmaTile::name() const {
  return fmt::format("{}x{}x{}.w{}x{}.s{}{}", bm, bn, bk, wm, wn, stages, swizzle ? ".x" : "");
}

MmaTile MmaTile::parse(std::string_view name) {
  MmaTile t;
  char tail = 0;
  std::string s(name);
  if (s.ends_with(".x")) {
    t.swizzle = true;
    s.resize(s.size() - 2);
  }
  if (std::sscanf(s.c_str(), "%dx%dx%d.w%dx%d.s%d%c", &t.bm, &t.bn, &t.bk, &t.wm, &t.wn, &t.stages, &tail) != 6) {
    throw ConfigError(fmt::format("MMA tile '{}' is malformed; expected BMxBNxBK.wWMxWN.sSTAGES[.x], e.g. {}", name,
                                  MmaTile{}.name()));
  }
  const auto power_of_two = [](int x) { return x > 0 && (x & (x - 1)) == 0; };
  // gemm_mma.cl's own constraints, checked here so a bad tile fails before any build.
  const bool ok = t.wm > 0 && t.wn > 0 && t.bm % t.wm == 0 && t.bn % t.wn == 0 && t.wm % 16 == 0 && t.wn % 16 == 0 &&
                  t.bk > 0 && t.bk % 16 == 0 && t.stages >= 2 && t.stages <= 4 && t.threads() <= 1024 &&
                  (t.bm * t.bk / 8) % t.threads() == 0 && (t.bn * t.bk / 8) % t.threads() == 0 &&
                  (!t.swizzle || (power_of_two(t.bm) && power_of_two(t.bn) && power_of_two(t.bk)));
  if (!ok) throw ConfigError(fmt::format("MMA tile '{}' is not one gemm_mma.cl can run", name));
  return t;
}

std::vector<MmaTile> mma_tile_candidates(std::uint64_t local_mem_bytes, std::size_t element_bytes) {
  // First the tile measured best on an H100 and an H200 (docs/benchmarks.md). The swizzled ones
  // hold 128 x 128 x 32 in 3 stages, or 256 x 128 x 32 in 2, within 48 KiB (NVIDIA's OpenCL local
  // memory), where padded rows fit 2 stages of 128 x 128. The last padded one is for TF32 in 48 KiB:
  // 40 KiB with 4-byte elements.
  static const std::array<MmaTile, 11> kAll = {
      MmaTile{128, 128, 32, 64, 32, 2},       MmaTile{128, 128, 32, 64, 32, 3, true}, MmaTile{128, 128, 32, 64, 64, 3, true},
      MmaTile{256, 128, 32, 64, 64, 2, true}, MmaTile{128, 256, 32, 64, 64, 2, true}, MmaTile{128, 128, 16, 64, 32, 3},
      MmaTile{128, 128, 16, 64, 32, 4},       MmaTile{128, 256, 16, 64, 64, 2},       MmaTile{256, 128, 16, 64, 64, 2},
      MmaTile{128, 128, 32, 32, 64, 2},       MmaTile{128, 128, 16, 64, 32, 2}};
  std::vector<MmaTile> fit;
  for (const MmaTile& t : kAll) {
    if ((element_bytes == 2 || !t.swizzle) && t.local_bytes(element_bytes) <= local_mem_bytes) fit.push_back(t);
  }
  return fit;
}

std::vector<MmaTile> mma_auto_tiles(std::uint64_t local_mem_bytes) {
  // The measured best, and the three swizzled shapes that 48 KiB newly admits (deeper pipeline;
  // 64 x 64 warp tiles: twice the mma.sync per ldmatrix).
  std::vector<MmaTile> tiles;
  for (const MmaTile& t : mma_tile_candidates(local_mem_bytes)) {
    if ((tiles.empty() || t.swizzle) && tiles.size() < 4) tiles.push_back(t);
  }
  return tiles;
}

TensorCoreGemm::TensorCoreGemm(device::ProgramCache& cache, device::Device& device, std::unique_ptr<Gemm> fallback,
                               std::optional<MmaTile> tile, Mode mode, MatmulPrecision precision)
    : cache_(cache), device_(device), fallback_(std::move(fallback)), mode_(mode), precision_(precision) {
  if (mode == Mode::kPtx) tensor_cores_ = probe_tensor_cores(device.info(), cache);
  const std::uint64_t local_mem = device.info().local_mem_bytes;
  // The tiles plus, in the emulation, its exchange words (8 per work-item).
  const auto local_needed = [&](const MmaTile& t, std::size_t element_bytes) {
    return t.local_bytes(element_bytes) + (mode == Mode::kEmulated ? static_cast<std::size_t>(t.threads()) * 32 : 0);
  };
  std::vector<std::string> timed_tiles;  // the per-class choice's candidates, when no tile is given
  if (tile) {
    tile_ = *tile;
  } else if (const char* env = std::getenv(kMmaTileEnvVar); env != nullptr && *env != '\0') {
    tile_ = MmaTile::parse(env);
  } else {
    for (const MmaTile& t : mma_auto_tiles(local_mem)) {
      if (local_needed(t, 2) <= local_mem) timed_tiles.push_back(std::string(kTilePrefix) + t.name());
    }
    if (!timed_tiles.empty()) tile_ = MmaTile::parse(std::string_view(timed_tiles.front()).substr(kTilePrefix.size()));
  }
  tf32_tile_ = tile_;
  tf32_tile_.swizzle = false;  // TF32 fragments read single words: padded rows are conflict-free
  if (local_needed(tf32_tile_, 4) > local_mem) {
    const auto fit = mma_tile_candidates(local_mem, 4);
    if (!fit.empty()) tf32_tile_ = fit.front();
  }
  const auto require_fits = [&](const MmaTile& t, std::size_t element_bytes) {
    const std::size_t local = local_needed(t, element_bytes);
    if (local > local_mem) {
      throw ConfigError(fmt::format("MMA tile {} needs {} bytes of local memory; {} has {}", t.name(), local,
                                    device.info().name, local_mem));
    }
  };
  const bool sixteen_bit = mode == Mode::kEmulated || tensor_cores_.bf16 || tensor_cores_.f16;
  if (sixteen_bit) require_fits(tile_, 2);
  if (on_tensor_cores(device::DType::kF32, device::DType::kF32)) require_fits(tf32_tile_, 4);
  if (sixteen_bit && timed_tiles.size() > 1) {
    tile_choice_ = make_timed_gemm(
        device, cache, timed_tiles,
        [&cache, &device, mode](const std::string& name) -> std::unique_ptr<Gemm> {
          const MmaTile t = MmaTile::parse(std::string_view(name).substr(kTilePrefix.size()));
          return std::make_unique<TensorCoreGemm>(cache, device, nullptr, t, mode);
        },
        kTileChoicesStem);
  }
}

bool TensorCoreGemm::on_tensor_cores(device::DType a, device::DType b) const {
  if (a != b) return false;
  if (!device::is_16_bit(a)) return precision_ == MatmulPrecision::kTf32 && (mode_ == Mode::kEmulated || tensor_cores_.tf32);
  return mode_ == Mode::kEmulated || tensor_cores_.takes(a);
}

KernelSet& TensorCoreGemm::kernels(device::DType ab, device::DType c, bool async, bool epilogue) {
  const char* operands = ab == device::DType::kBF16 ? "-DMMA_AB_BF16" : ab == device::DType::kF16 ? "-DMMA_AB_F16" : "-DMMA_AB_TF32";
  const MmaTile& tile = tile_for(ab);
  const std::string options =
      fmt::format("{} {} -DASYNC_COPY={} {}{}", operands, device::dtype_build_option(c), async ? 1 : 0, tile.defines(),
                  epilogue ? " -DGEMM_EPILOGUE=1" : "");
  auto& set = programs_[options];
  if (!set) {
    device::Program program = mode_ == Mode::kPtx
                                  ? load_ptx_program(cache_, device_, "gemm_mma", options)
                                  : load_program(cache_, device_, "gemm_mma", "-DPAX_MMA_EMULATE " + options);
    set = std::make_unique<KernelSet>(device_, std::move(program),
                                      std::initializer_list<const char*>{"gemm_mma_nn", "gemm_mma_nt", "gemm_mma_tn",
                                                                         "gemm_mma_tt", "gemm_split_sum"});
  }
  return *set;
}

std::size_t TensorCoreGemm::split_k(const GemmShape& s, device::DType ab) const {
  const MmaTile& tile = tile_for(ab);
  return split_k_count(s, static_cast<std::size_t>(tile.bm), static_cast<std::size_t>(tile.bn),
                       device_.info().compute_units, chunk_elements(ab));
}

void TensorCoreGemm::launch(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                            const GemmOperand& c, bool async, const GemmEpilogue& epilogue) {
  const EpilogueArgs e(c, epilogue);
  const MmaTile& tile = tile_for(a.dtype);
  const std::size_t threads = static_cast<std::size_t>(tile.threads());
  const std::size_t blocks_n = (s.n + tile.bn - 1) / tile.bn, blocks_m = (s.m + tile.bm - 1) / tile.bm;
  const std::array<std::size_t, 3> global{blocks_n * threads, blocks_m, s.batch}, local{threads, 1, 1};
  const char ta = s.a == Transpose::kYes ? 't' : 'n', tb = s.b == Transpose::kYes ? 't' : 'n';
  kernels(a.dtype, c.dtype, async, e.bits != 0)
      .launch_nd(fmt::format("gemm_mma_{}{}", ta, tb), global, local, c.buffer, u32(c.offset), u32(c.ld),
                 u32(c.batch_stride), a.buffer, u32(a.offset), u32(a.ld), u32(a.batch_stride), b.buffer, u32(b.offset),
                 u32(b.ld), u32(b.batch_stride), u32(s.m), u32(s.n), u32(s.k), alpha, beta, e.bias, e.bias_offset,
                 e.aux, e.aux_offset, e.ld_aux, e.bits);
}

Gemm& TensorCoreGemm::fallback() {
  if (!fallback_) throw std::logic_error("tensor-core GEMM of one tile: no fallback for other dtypes");
  return *fallback_;
}

void TensorCoreGemm::run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                         const GemmOperand& c) {
  if (!on_tensor_cores(a.dtype, b.dtype)) {
    fallback().run(s, alpha, a, b, beta, c);
  } else if (tile_choice_ && device::is_16_bit(a.dtype)) {
    tile_choice_->run(s, alpha, a, b, beta, c);
  } else {
    multiply(s, alpha, a, b, beta, c, GemmEpilogue{});
  }
}

bool TensorCoreGemm::run_fused(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                               const GemmOperand& c, const GemmEpilogue& epilogue) {
  if (!on_tensor_cores(a.dtype, b.dtype)) return fallback().run_fused(s, alpha, a, b, beta, c, epilogue);
  if (tile_choice_ && device::is_16_bit(a.dtype)) return tile_choice_->run_fused(s, alpha, a, b, beta, c, epilogue);
  // Not GELU's gradient: its per-element reads of Z in the mma kernel's stores cost more than the
  // element-wise pass they save (an H200, T1024 B16 bfloat16: the backward's GEMMs 4.2 ms slower
  // against a 1.3 ms pass; docs/benchmarks.md). The bias and GELU forward pay for themselves.
  if (epilogue.gelu_grad.buffer || !epilogue_fusable(s, c, epilogue)) return false;
  multiply(s, alpha, a, b, beta, c, epilogue);
  return true;
}

void TensorCoreGemm::multiply(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b,
                              float beta, const GemmOperand& c, const GemmEpilogue& epilogue) {
  if (s.m == 0 || s.n == 0 || s.batch == 0) return;
  std::chrono::steady_clock::time_point start;
  if (profiling_) {
    device_.queue().finish();
    start = std::chrono::steady_clock::now();
  }
  // k = 0 runs no k step: C = beta C, as every GEMM here.
  const std::size_t chunk = chunk_elements(a.dtype), splits = split_k(s, a.dtype);
  const bool async = mode_ == Mode::kPtx && chunks_aligned(a, s.batch, chunk) && chunks_aligned(b, s.batch, chunk);
  if (splits == 1) {
    launch(s, alpha, a, b, beta, c, async, epilogue);
  } else {
    // The splits step by a whole number of 16-byte chunks along k, so the copy path stays the same.
    const SplitProducts p = split_products(s, splits, a, b,
                                           split_partials_.reserve(device_, splits * s.m * s.n,
                                                                   "tensor-core GEMM split-k partials"));
    launch(p.shape, 1.0f, p.a, p.b, 0.0f, p.c, async, GemmEpilogue{});
    const auto local = split_sum_local(), global = split_sum_global(s);
    const EpilogueArgs e(c, epilogue);
    kernels(a.dtype, c.dtype, async, e.bits != 0)
        .launch_nd("gemm_split_sum", global, local, c.buffer, u32(c.offset), u32(c.ld), p.c.buffer,
                   u32(s.m), u32(s.n), u32(splits), alpha, beta, e.bias, e.bias_offset, e.aux, e.aux_offset, e.ld_aux,
                   e.bits);
  }
  ++stats_.calls;
  if (profiling_) {
    device_.queue().finish();
    stats_.device_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
}

void TensorCoreGemm::set_profiling(bool on) {
  profiling_ = on;
  for (Gemm* g : {fallback_.get(), tile_choice_.get()}) {
    if (g) g->set_profiling(on);
  }
}

GemmStats TensorCoreGemm::stats() {
  GemmStats total = stats_;
  for (Gemm* g : {fallback_.get(), tile_choice_.get()}) {
    if (!g) continue;
    const GemmStats part = g->stats();
    total.calls += part.calls;
    total.device_ms += part.device_ms;
  }
  return total;
}

void TensorCoreGemm::reset_stats() {
  stats_ = {};
  for (Gemm* g : {fallback_.get(), tile_choice_.get()}) {
    if (g) g->reset_stats();
  }
}

}  // namespace paxocl::kernels
