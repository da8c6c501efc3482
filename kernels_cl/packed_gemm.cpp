#include "kernels_cl/packed_gemm.h"

#include <array>

#include <fmt/format.h>

namespace paxocl::kernels {

std::string GemmVariant::name() const {
  return kind == Kind::kCpu ? fmt::format("cpu-{}x{}", mr, nr) : fmt::format("gpu-{}x{}", mr, nr);
}

PackedGemm::PackedGemm(device::ProgramCache& cache, device::Device& device, GemmVariant variant)
    : cache_(cache), device_(device), variant_(variant) {
  if (variant.kind == GemmVariant::Kind::kCpu && (variant.nr % 16 != 0 || variant.mr < 1)) {
    throw DeviceError(fmt::format("GEMM variant {}: NR must be a multiple of 16", variant.name()));
  }
  if (variant.kind == GemmVariant::Kind::kGpu) variant_.mr = variant_.nr = 64;
  compute_kernels(device::DType::kF32);  // build errors show at construction, not mid-step
}

KernelSet& PackedGemm::pack_kernels(device::DType source) {
  auto& set = pack_[static_cast<std::size_t>(source)];
  if (!set) set = std::make_unique<KernelSet>(cache_, device_, "gemm_pack", std::initializer_list<const char*>{"gemm_pack"},
                                              device::dtype_build_option(source));
  return *set;
}

KernelSet& PackedGemm::compute_kernels(device::DType c) {
  auto& set = compute_[static_cast<std::size_t>(c)];
  if (!set) {
    const std::string dtype(device::dtype_build_option(c));
    set = variant_.kind == GemmVariant::Kind::kCpu
              ? std::make_unique<KernelSet>(cache_, device_, "gemm_cpu", std::initializer_list<const char*>{"gemm_cpu"},
                                            fmt::format("-DMR={} -DNR={} {}", variant_.mr, variant_.nr, dtype))
              : std::make_unique<KernelSet>(cache_, device_, "gemm_gpu", std::initializer_list<const char*>{"gemm_gpu"}, dtype);
  }
  return *set;
}

device::Buffer<float>& PackedGemm::workspace(device::Buffer<float>& buffer, std::size_t count, const char* name) {
  if (buffer.count() < count) buffer = device::Buffer<float>(device_.context(), count + count / 2, name);
  return buffer;
}

void PackedGemm::pack(device::Buffer<float>& dst, const GemmOperand& src, std::size_t x_stride, std::size_t k_stride,
                      std::size_t extent, std::size_t k, std::size_t panel, std::size_t panels, std::size_t batch) {
  const std::size_t kblocks = (k + 15) / 16, items = batch * panels * kblocks;
  pack_kernels(src.dtype).launch("gemm_pack", items, dst, src.buffer, u32(src.offset), u32(src.batch_stride),
                                 u32(x_stride), u32(k_stride), u32(extent), u32(k), u32(panel), u32(panels),
                                 u32(kblocks), u32(items));
}

void PackedGemm::run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                     const GemmOperand& c) {
  if (s.m == 0 || s.n == 0 || s.batch == 0) return;
  const auto start = start_call(device_.queue());
  const std::size_t mr = static_cast<std::size_t>(variant_.mr), nr = static_cast<std::size_t>(variant_.nr);
  const std::size_t m_panels = (s.m + mr - 1) / mr, n_panels = (s.n + nr - 1) / nr;
  const std::size_t k = std::max<std::size_t>(s.k, 1);  // k = 0 packs one zero row: C = beta C
  auto& ap = workspace(packed_a_, s.batch * m_panels * mr * k, "gemm.packed_a");
  auto& bp = workspace(packed_b_, s.batch * n_panels * nr * k, "gemm.packed_b");
  // X = op(A) (m, k): row-major A is x-major unless transposed; X = op(B)^T (n, k) the other way round.
  const bool ta = s.a == Transpose::kYes, tb = s.b == Transpose::kYes;
  pack(ap, a, ta ? 1 : a.ld, ta ? a.ld : 1, s.k == 0 ? 0 : s.m, k, mr, m_panels, s.batch);
  pack(bp, b, tb ? b.ld : 1, tb ? 1 : b.ld, s.k == 0 ? 0 : s.n, k, nr, n_panels, s.batch);
  const cl_mem cbuf = c.buffer;
  if (variant_.kind == GemmVariant::Kind::kCpu) {
    const std::size_t tiles = s.batch * m_panels * n_panels;
    const std::array<std::size_t, 1> global{tiles}, local{1};
    compute_kernels(c.dtype).launch_nd("gemm_cpu", global, local, cbuf, u32(c.offset), u32(c.ld), u32(c.batch_stride),
                                       ap, bp, u32(s.m), u32(s.n), u32(k), u32(m_panels), u32(n_panels), alpha, beta,
                                       u32(tiles));
  } else {
    const std::array<std::size_t, 3> global{n_panels * 16, m_panels * 16, s.batch}, local{16, 16, 1};
    compute_kernels(c.dtype).launch_nd("gemm_gpu", global, local, cbuf, u32(c.offset), u32(c.ld), u32(c.batch_stride),
                                       ap, bp, u32(s.m), u32(s.n), u32(k), u32(m_panels), u32(n_panels), alpha, beta);
  }
  end_call(device_.queue(), start);
}

}  // namespace paxocl::kernels
