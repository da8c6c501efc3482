#include "kernels_cl/host_gemm.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "device/queue.h"

namespace paxocl::kernels {

HostMapping::HostMapping(device::Queue& queue, cl_mem buffer, std::size_t offset, std::size_t bytes, cl_map_flags flags)
    : queue_(queue), buffer_(buffer), pointer_(queue.map(buffer, offset, bytes, flags)) {}

void HostMapping::unmap() {
  void* pointer = std::exchange(pointer_, nullptr);
  if (pointer != nullptr) queue_.unmap(buffer_, pointer);
}

HostMapping::~HostMapping() {
  try {
    unmap();
  } catch (const std::exception& e) {
    spdlog::error("native kernel: unmapping a buffer after an earlier failure: {}", e.what());
  }
}

std::size_t span_bytes(const GemmOperand& x, std::size_t rows, std::size_t cols, std::size_t batch, std::size_t outer,
                       std::size_t outer_stride) {
  return ((outer - 1) * outer_stride + (batch - 1) * x.batch_stride + (rows - 1) * x.ld + cols) *
         device::dtype_size(x.dtype);
}

bool host_gemm_available(const device::Device& device) {
  return device.info().kind == device::DeviceKind::kCpu && device.info().native_kernels;
}

void require_host_gemm(const device::Device& device, const std::string& policy) {
  if (host_gemm_available(device)) return;
  throw ConfigError(fmt::format("--gemm={}: device '{}' cannot run it: it runs as a native kernel on a CPU device that "
                                "reports CL_EXEC_NATIVE_KERNEL (PoCL's do); use --gemm=auto",
                                policy, device.info().name));
}

unsigned host_gemm_threads(const device::Device& device) {
  return std::max(1u, std::max(1u, device.info().compute_units) / device::OpenCpuDevice::sharers());
}

void enqueue_host_gemm(device::Queue& queue, const std::string& name, void (*kernel)(void*), const GemmShape& s,
                       float alpha, const GemmOperand& a, const GemmOperand& b, float beta, const GemmOperand& c,
                       unsigned threads, const void* library, const GemmOuterBatch& outer) {
  if (s.m == 0 || s.n == 0 || s.batch == 0 || outer.count == 0) return;
  const bool at = s.a == Transpose::kYes, bt = s.b == Transpose::kYes;
  // With k == 0 (C = beta C) nothing of A and B is read, and they are not mapped.
  const auto offset = [](const GemmOperand& x) { return x.offset * device::dtype_size(x.dtype); };
  std::optional<HostMapping> ma, mb;
  if (s.k > 0) {
    ma.emplace(queue, a.buffer, offset(a),
               span_bytes(a, at ? s.k : s.m, at ? s.m : s.k, s.batch, outer.count, outer.a_stride), CL_MAP_READ);
    mb.emplace(queue, b.buffer, offset(b),
               span_bytes(b, bt ? s.n : s.k, bt ? s.k : s.n, s.batch, outer.count, outer.b_stride), CL_MAP_READ);
  }
  HostMapping mc(queue, c.buffer, offset(c), span_bytes(c, s.m, s.n, s.batch, outer.count, outer.c_stride),
                 CL_MAP_READ | CL_MAP_WRITE);
  const HostGemmArgs args{.a = ma ? ma->get() : nullptr, .b = mb ? mb->get() : nullptr, .c = mc.get(),
                          .lda = a.ld, .ldb = b.ld, .ldc = c.ld,
                          .a_stride = a.batch_stride, .b_stride = b.batch_stride, .c_stride = c.batch_stride,
                          .m = s.m, .n = s.n, .k = s.k, .batch = s.batch,
                          .a_transposed = at, .b_transposed = bt,
                          .a_dtype = a.dtype, .b_dtype = b.dtype, .c_dtype = c.dtype,
                          .alpha = alpha, .beta = beta, .threads = threads, .library = library};
  queue.native(name, kernel, &args, sizeof args);
  mc.unmap();
  if (mb) mb->unmap();
  if (ma) ma->unmap();
}

}  // namespace paxocl::kernels
