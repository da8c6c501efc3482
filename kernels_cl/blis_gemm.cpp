#include "kernels_cl/blis_gemm.h"

#include <blis.h>

#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "device/queue.h"

namespace paxocl::kernels {

namespace {

// What the native kernel receives (copied by the runtime): host pointers to the first element of
// each operand's first matrix, mapped for the duration of the kernel.
struct NativeGemm {
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  std::size_t lda = 0, ldb = 0, ldc = 0;
  std::size_t a_stride = 0, b_stride = 0, c_stride = 0;  // elements between batch entries
  std::size_t m = 0, n = 0, k = 0, batch = 1;
  bool a_transposed = false, b_transposed = false;
  float alpha = 1, beta = 0;
  unsigned threads = 1;
};

// Row-major C (m, n) = alpha op(A) op(B) + beta C for batch entries first, first + step, ... : in
// BLIS's general-stride terms every stored matrix has row stride ld and column stride 1; the trans
// flags apply to the stored matrices.
void gemm_entries(const NativeGemm& g, std::size_t first, std::size_t step, unsigned threads) {
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(static_cast<dim_t>(threads), &rntm);
  float alpha = g.alpha, beta = g.beta;
  for (std::size_t i = first; i < g.batch; i += step) {
    bli_sgemm_ex(g.a_transposed ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, g.b_transposed ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 static_cast<dim_t>(g.m), static_cast<dim_t>(g.n), static_cast<dim_t>(g.k), &alpha,
                 const_cast<float*>(g.a + i * g.a_stride), static_cast<inc_t>(g.lda), 1,
                 const_cast<float*>(g.b + i * g.b_stride), static_cast<inc_t>(g.ldb), 1, &beta,
                 g.c + i * g.c_stride, static_cast<inc_t>(g.ldc), 1, nullptr, &rntm);
  }
}

// A batch of at least `threads` entries runs them side by side, one BLIS thread each: the small
// per-head attention GEMMs gain more that way than from BLIS splitting each matrix.
void run_native_gemm(void* p) {
  const auto& g = *static_cast<const NativeGemm*>(p);
  if (g.threads < 2 || g.batch < g.threads) return gemm_entries(g, 0, 1, g.threads);
  std::vector<std::thread> team;
  team.reserve(g.threads - 1);
  for (unsigned t = 1; t < g.threads; ++t) team.emplace_back(gemm_entries, std::cref(g), t, g.threads, 1u);
  gemm_entries(g, 0, g.threads, 1);
  for (std::thread& t : team) t.join();
}

// The bytes an operand's matrices span, from its first element: `rows` x `cols` as stored, `batch`
// of them `batch_stride` apart.
std::size_t span_bytes(const GemmOperand& x, std::size_t rows, std::size_t cols, std::size_t batch) {
  return ((batch - 1) * x.batch_stride + (rows - 1) * x.ld + cols) * sizeof(float);
}

// One operand mapped for the native kernel; unmapped (in queue order) when it goes.
class MappedOperand {
 public:
  MappedOperand(device::Queue& queue, const GemmOperand& x, std::size_t bytes, cl_map_flags flags)
      : queue_(queue), buffer_(x.buffer), pointer_(queue.map(x.buffer, x.offset * sizeof(float), bytes, flags)) {}
  MappedOperand(const MappedOperand&) = delete;
  MappedOperand& operator=(const MappedOperand&) = delete;
  // Unmaps in queue order (after the native kernel); throws if the driver refuses.
  void unmap() {
    void* pointer = std::exchange(pointer_, nullptr);
    if (pointer != nullptr) queue_.unmap(buffer_, pointer);
  }
  // Only reached still mapped when an exception is unwinding: it must not throw a second one.
  ~MappedOperand() {
    try {
      unmap();
    } catch (const std::exception& e) {
      spdlog::error("BLIS GEMM: unmapping an operand after an earlier failure: {}", e.what());
    }
  }
  float* get() const { return static_cast<float*>(pointer_); }

 private:
  device::Queue& queue_;
  cl_mem buffer_;
  void* pointer_;
};

class BlisGemm final : public CountedGemm {
 public:
  explicit BlisGemm(device::Device& device) : device_(device), threads_(std::max(1u, device.info().compute_units)) {
    static std::once_flag said;
    std::call_once(said, [] { spdlog::info("GEMM on CPU devices through {}", blis_description()); });
  }

  void run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override {
    if (!supports(a.dtype, b.dtype, c.dtype)) throw std::logic_error("BlisGemm takes float32 operands only");
    if (s.m == 0 || s.n == 0 || s.batch == 0) return;
    const bool at = s.a == Transpose::kYes, bt = s.b == Transpose::kYes;
    device::Queue& queue = device_.queue();
    const auto start = start_call(queue);
    {
      // Stored shapes: A (m, k) or (k, m), B (k, n) or (n, k), C (m, n). With k == 0 (C = beta C)
      // nothing of A and B is read, and they are not mapped.
      std::optional<MappedOperand> ma, mb;
      if (s.k > 0) {
        ma.emplace(queue, a, span_bytes(a, at ? s.k : s.m, at ? s.m : s.k, s.batch), CL_MAP_READ);
        mb.emplace(queue, b, span_bytes(b, bt ? s.n : s.k, bt ? s.k : s.n, s.batch), CL_MAP_READ);
      }
      MappedOperand mc(queue, c, span_bytes(c, s.m, s.n, s.batch), CL_MAP_READ | CL_MAP_WRITE);
      const NativeGemm g{.a = ma ? ma->get() : nullptr, .b = mb ? mb->get() : nullptr, .c = mc.get(),
                         .lda = a.ld, .ldb = b.ld, .ldc = c.ld,
                         .a_stride = a.batch_stride, .b_stride = b.batch_stride, .c_stride = c.batch_stride,
                         .m = s.m, .n = s.n, .k = s.k, .batch = s.batch,
                         .a_transposed = at, .b_transposed = bt,
                         .alpha = alpha, .beta = beta, .threads = threads()};
      queue.native("blis_sgemm", run_native_gemm, &g, sizeof g);
      mc.unmap();
      if (mb) mb->unmap();
      if (ma) ma->unmap();
    }
    end_call(queue, start);
  }

  std::string name() const override { return "blis"; }
  bool supports(device::DType a, device::DType b, device::DType c) const override { return all_float32(a, b, c); }

 private:
  device::Device& device_;
  // The device's compute units, shared with the process's other open CPU devices and the job's
  // other processes on this host (they run at once).
  unsigned threads() const { return std::max(1u, threads_ / device::OpenCpuDevice::sharers()); }
  unsigned threads_;
};

}  // namespace

bool blis_gemm_available(const device::Device& device) {
  return device.info().kind == device::DeviceKind::kCpu && device.info().native_kernels;
}

std::unique_ptr<Gemm> make_blis_gemm(device::Device& device) {
  if (!blis_gemm_available(device)) {
    throw ConfigError(fmt::format("--gemm=blis: device '{}' cannot run it: BLIS runs as a native kernel on a CPU "
                                  "device that reports CL_EXEC_NATIVE_KERNEL (PoCL's do); use --gemm=auto",
                                  device.info().name));
  }
  return std::make_unique<BlisGemm>(device);
}

std::string blis_description() {
  return fmt::format("BLIS {}, {} kernels", bli_info_get_version_str(), bli_arch_string(bli_arch_query_id()));
}

}  // namespace paxocl::kernels
