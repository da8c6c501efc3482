#include "kernels_cl/blis_gemm.h"

#include <blis.h>

#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "common/host_isa.h"
#include "device/queue.h"
#include "kernels_cl/host_gemm.h"

namespace paxocl::kernels {

namespace {

// Row-major C (m, n) = alpha op(A) op(B) + beta C for batch entries first, first + step, ... : in
// BLIS's general-stride terms every stored matrix has row stride ld and column stride 1; the trans
// flags apply to the stored matrices.
void gemm_entries(const HostGemmArgs& g, std::size_t first, std::size_t step, unsigned threads) {
  rntm_t rntm = BLIS_RNTM_INITIALIZER;
  bli_rntm_set_num_threads(static_cast<dim_t>(threads), &rntm);
  float alpha = g.alpha, beta = g.beta;
  for (std::size_t i = first; i < g.batch; i += step) {
    bli_sgemm_ex(g.a_transposed ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, g.b_transposed ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 static_cast<dim_t>(g.m), static_cast<dim_t>(g.n), static_cast<dim_t>(g.k), &alpha,
                 const_cast<float*>(static_cast<const float*>(g.a) + i * g.a_stride), static_cast<inc_t>(g.lda), 1,
                 const_cast<float*>(static_cast<const float*>(g.b) + i * g.b_stride), static_cast<inc_t>(g.ldb), 1, &beta,
                 static_cast<float*>(g.c) + i * g.c_stride, static_cast<inc_t>(g.ldc), 1, nullptr, &rntm);
  }
}

// A batch of at least `threads` entries runs them side by side, one BLIS thread each: the small
// per-head attention GEMMs gain more that way than from BLIS splitting each matrix.
void run_native_gemm(void* p) {
  const auto& g = *static_cast<const HostGemmArgs*>(p);
  if (g.threads < 2 || g.batch < g.threads) return gemm_entries(g, 0, 1, g.threads);
  std::vector<std::thread> team;
  team.reserve(g.threads - 1);
  for (unsigned t = 1; t < g.threads; ++t) team.emplace_back(gemm_entries, std::cref(g), t, g.threads, 1u);
  gemm_entries(g, 0, g.threads, 1);
  for (std::thread& t : team) t.join();
}

class BlisGemm final : public CountedGemm {
 public:
  explicit BlisGemm(device::Device& device) : device_(device) {
    static std::once_flag said;
    std::call_once(said, [] { spdlog::info("GEMM on CPU devices through {}", blis_description()); });
  }

  void run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override {
    if (!supports(a.dtype, b.dtype, c.dtype)) throw std::logic_error("BlisGemm takes float32 operands only");
    if (s.m == 0 || s.n == 0 || s.batch == 0) return;
    device::Queue& queue = device_.queue();
    const auto start = start_call(queue);
    enqueue_host_gemm(queue, "blis_sgemm", run_native_gemm, s, alpha, a, b, beta, c, host_gemm_threads(device_));
    end_call(queue, start);
  }

  std::string name() const override { return "blis"; }
  bool supports(device::DType a, device::DType b, device::DType c) const override { return all_float32(a, b, c); }

 private:
  device::Device& device_;
};

}  // namespace

std::unique_ptr<Gemm> make_blis_gemm(device::Device& device) {
  require_host_gemm(device, "blis");
  return std::make_unique<BlisGemm>(device);
}

std::string blis_narrower_than_cpu(bool cpu_avx512, const std::string& blis_config) {
  if (!cpu_avx512 || blis_config == "skx" || blis_config == "knl") return "";
  return fmt::format("BLIS chose its '{}' kernels (AVX2 at most) on a CPU whose CPUID reports AVX-512", blis_config);
}

std::string blis_auto_refusal() { return blis_narrower_than_cpu(host_isa().avx512, bli_arch_string(bli_arch_query_id())); }

std::string ignore_blis_arch_type_where_it_aborts() {
  const char* user = std::getenv("BLIS_ARCH_TYPE");
  if (user == nullptr || std::string(bli_info_get_version_str()) != "0.9.0") return "";
  std::string warning =
      fmt::format("BLIS_ARCH_TYPE={} ignored: BLIS 0.9.0 aborts whenever it is set; BLIS picks its kernels itself", user);
  unsetenv("BLIS_ARCH_TYPE");
  return warning;
}

std::string blis_description() {
  return fmt::format("BLIS {}, {} kernels", bli_info_get_version_str(), bli_arch_string(bli_arch_query_id()));
}

}  // namespace paxocl::kernels
