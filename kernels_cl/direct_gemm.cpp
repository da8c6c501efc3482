#include "kernels_cl/direct_gemm.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <span>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/errors.h"
#include "kernels_cl/direct_gemm_tuning.h"
#include "kernels_cl/gemm_epilogue.h"

namespace paxocl::kernels {

namespace {
// gemm_direct.cl's A_DTYPE / B_DTYPE code.
int kind(device::DType t) { return t == device::DType::kBF16 ? 1 : t == device::DType::kF16 ? 2 : 0; }

// Whether every 4-element chunk along the operand's rows starts 4-aligned: the kernel's vector loads.
bool aligned4(const GemmOperand& x, std::size_t batch) {
  return x.offset % 4 == 0 && x.ld % 4 == 0 && (batch == 1 || x.batch_stride % 4 == 0);
}

// gemm_direct.cl's epilogue arguments: bias, its offset, aux (G or Z), its offset and ld, the
// DIRECT_* bits; C's buffer stands in for an absent part (never read or written then).
bool fits(const DirectTile& t, const device::DeviceInfo& d) {
  return static_cast<std::uint64_t>(t.threads()) <= d.max_work_group_size && t.local_bytes() <= d.local_mem_bytes;
}
}  // namespace

std::size_t DirectTile::local_bytes() const {
  return 2 * static_cast<std::size_t>(tk) * static_cast<std::size_t>(tm + 4 + tn + 4) * sizeof(float);
}

std::string DirectTile::defines() const {
  return fmt::format("-DTM={} -DTN={} -DTK={} -DWM={} -DWN={}{}", tm, tn, tk, wm, wn,
                     ku ? fmt::format(" -DKU={}", ku) : "");
}

std::string DirectTile::name() const {
  return fmt::format("{}x{}x{}.r{}x{}{}", tm, tn, tk, wm, wn, ku ? fmt::format(".u{}", ku) : "");
}

DirectTile DirectTile::parse(std::string_view name) {
  DirectTile t;
  char tail = 0;
  const std::string s(name);
  // Without a tail: TMxTNxTK.rWMxWN; with one: ... .uKU and nothing after it.
  const bool plain = std::sscanf(s.c_str(), "%dx%dx%d.r%dx%d%c", &t.tm, &t.tn, &t.tk, &t.wm, &t.wn, &tail) == 5;
  if (!plain &&
      std::sscanf(s.c_str(), "%dx%dx%d.r%dx%d.u%d%c", &t.tm, &t.tn, &t.tk, &t.wm, &t.wn, &t.ku, &tail) != 6) {
    throw ConfigError(fmt::format("direct GEMM tile '{}' is malformed; expected TMxTNxTK.rWMxWN[.uKU], e.g. {}", name,
                                  DirectTile{}.name()));
  }
  // gemm_direct.cl's #error conditions, checked here so a bad tile fails before any build; a
  // register tile beyond 8 x 16 would spill on any GPU.
  const bool ok = t.wm > 0 && t.wn > 0 && t.tk > 0 && t.wm % 4 == 0 && t.wn % 4 == 0 && t.tk % 4 == 0 &&
                  t.tm % t.wm == 0 && t.tn % t.wn == 0 && t.wm * t.wn <= 128 && t.threads() <= 1024 &&
                  (t.tm * t.tk / 4) % t.threads() == 0 && (t.tn * t.tk / 4) % t.threads() == 0 &&
                  t.tm * t.tk / 4 >= t.threads() && t.tn * t.tk / 4 >= t.threads() &&
                  (t.ku == 0 || (t.ku > 0 && t.ku < t.tk && t.tk % t.ku == 0));
  if (!ok) throw ConfigError(fmt::format("direct GEMM tile '{}' is not one gemm_direct.cl can run", name));
  return t;
}

std::vector<DirectTile> direct_tile_candidates(const device::DeviceInfo& device) {
  // Around the measured best (64x64, 8 x 4 on an H200): register tiles of 16 to 64, 64 to 256
  // work-items, slices of 8 to 32, and three partial unrolls that trade loop overhead for registers
  // (all slower than the whole slice on the H200; a compiler short of registers may differ).
  static const char* const kAll[] = {
      "128x64x16.r8x8", "64x64x16.r4x4",  "64x64x16.r8x4",    "128x128x16.r8x8",   "128x128x8.r8x8",   "128x64x8.r8x8",
      "64x128x16.r8x8", "128x32x16.r8x4", "64x32x16.r4x4",    "32x32x16.r4x4",     "64x64x8.r8x4",     "64x64x32.r8x4.u8",
      "64x64x16.r4x8",  "128x64x16.r8x4", "64x64x16.r8x4.u4", "128x64x16.r8x8.u4", "128x64x16.r8x4.u4"};
  std::vector<DirectTile> fit;
  for (const char* name : kAll) {
    const DirectTile t = DirectTile::parse(name);
    if (fits(t, device)) fit.push_back(t);
  }
  return fit;
}

std::vector<DirectTile> direct_auto_tiles(const device::DeviceInfo& device) {
  if (const auto tuned = tuned_direct_tile(device)) return {*tuned};
  std::vector<DirectTile> fit;
  for (const char* name : {"128x64x16.r8x8", "128x128x8.r8x8", "64x64x16.r8x4"}) {
    const DirectTile t = DirectTile::parse(name);
    if (fits(t, device)) fit.push_back(t);
  }
  return fit;
}

DirectTile DirectGemm::default_tile(const device::Device& device) {
  if (const auto tuned = tuned_direct_tile(device.info())) return *tuned;
  const auto fit = direct_tile_candidates(device.info());
  return fit.empty() ? DirectTile{} : fit.front();  // none fits: the constructor says why
}

DirectGemm::DirectGemm(device::ProgramCache& cache, device::Device& device, std::optional<DirectTile> tile)
    : cache_(cache), device_(device), tile_(tile ? *tile : default_tile(device)) {
  if (!fits(tile_, device.info())) {
    throw ConfigError(fmt::format("direct GEMM tile {} needs {} work-items and {} bytes of local memory; {} allows {} "
                                  "and has {}",
                                  tile_.name(), tile_.threads(), tile_.local_bytes(), device.info().name,
                                  device.info().max_work_group_size, device.info().local_mem_bytes));
  }
  kernels(device::DType::kF32, device::DType::kF32, device::DType::kF32, false);  // build errors at construction
}

KernelSet& DirectGemm::kernels(device::DType a, device::DType b, device::DType c, bool epilogue) {
  const std::string options = fmt::format("-DA_DTYPE={} -DB_DTYPE={} {} {}{}", kind(a), kind(b),
                                          device::dtype_build_option(c), tile_.defines(),
                                          epilogue ? " -DGEMM_EPILOGUE=1" : "");
  auto& set = programs_[options];
  if (!set) {
    set = std::make_unique<KernelSet>(
        cache_, device_, "gemm_direct",
        std::initializer_list<const char*>{"gemm_direct_nn", "gemm_direct_nt", "gemm_direct_tn", "gemm_direct_tt",
                                           "gemm_split_sum"},
        options);
  }
  return *set;
}

std::size_t DirectGemm::split_k(const GemmShape& s) const {
  return split_k_count(s, static_cast<std::size_t>(tile_.tm), static_cast<std::size_t>(tile_.tn),
                       device_.info().compute_units, 4);
}

void DirectGemm::launch(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                        const GemmOperand& c, const GemmEpilogue& epilogue) {
  const EpilogueArgs e(c, epilogue);
  const std::size_t nx = static_cast<std::size_t>(tile_.tn / tile_.wn), ny = static_cast<std::size_t>(tile_.tm / tile_.wm);
  const std::size_t blocks_n = (s.n + tile_.tn - 1) / tile_.tn, blocks_m = (s.m + tile_.tm - 1) / tile_.tm;
  const std::array<std::size_t, 3> global{blocks_n * nx, blocks_m * ny, s.batch}, local{nx, ny, 1};
  const char ta = s.a == Transpose::kYes ? 't' : 'n', tb = s.b == Transpose::kYes ? 't' : 'n';
  kernels(a.dtype, b.dtype, c.dtype, e.bits != 0)
      .launch_nd(fmt::format("gemm_direct_{}{}", ta, tb), global, local, c.buffer, u32(c.offset), u32(c.ld),
                 u32(c.batch_stride), a.buffer, u32(a.offset), u32(a.ld), u32(a.batch_stride), b.buffer, u32(b.offset),
                 u32(b.ld), u32(b.batch_stride), u32(s.m), u32(s.n), u32(s.k), alpha, beta,
                 cl_uint{aligned4(a, s.batch)}, cl_uint{aligned4(b, s.batch)}, e.bias, e.bias_offset, e.aux,
                 e.aux_offset, e.ld_aux, e.bits);
}

void DirectGemm::run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                     const GemmOperand& c) {
  multiply(s, alpha, a, b, beta, c, GemmEpilogue{});
}

bool DirectGemm::run_fused(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                           const GemmOperand& c, const GemmEpilogue& epilogue) {
  if (!epilogue_fusable(s, c, epilogue)) return false;
  multiply(s, alpha, a, b, beta, c, epilogue);
  return true;
}

void DirectGemm::multiply(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                          const GemmOperand& c, const GemmEpilogue& epilogue) {
  if (s.m == 0 || s.n == 0 || s.batch == 0) return;
  const auto start = start_call(device_.queue());
  const std::size_t splits = split_k(s);
  if (splits == 1) {
    launch(s, alpha, a, b, beta, c, epilogue);
  } else {
    const SplitProducts p = split_products(s, splits, a, b,
                                           split_partials_.reserve(device_, splits * s.m * s.n,
                                                                   "direct GEMM split-k partials"));
    launch(p.shape, 1.0f, p.a, p.b, 0.0f, p.c, GemmEpilogue{});
    const auto local = split_sum_local(), global = split_sum_global(s);
    const EpilogueArgs e(c, epilogue);
    kernels(a.dtype, b.dtype, c.dtype, e.bits != 0)
        .launch_nd("gemm_split_sum", global, local, c.buffer, u32(c.offset), u32(c.ld), p.c.buffer,
                   u32(s.m), u32(s.n), u32(splits), alpha, beta, e.bias, e.bias_offset, e.aux, e.aux_offset,
                   e.ld_aux, e.bits);
  }
  end_call(device_.queue(), start);
}

}  // namespace paxocl::kernels
