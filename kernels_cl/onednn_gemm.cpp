#include "kernels_cl/onednn_gemm.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "device/queue.h"
#include "kernels_cl/host_gemm.h"
#include "kernels_cl/openmp_wait_policy.h"

namespace paxocl::kernels {

namespace {

using dnnl::memory;

memory::data_type onednn_dtype(device::DType t) {
  switch (t) {
    case device::DType::kBF16: return memory::data_type::bf16;
    case device::DType::kF16: return memory::data_type::f16;
    case device::DType::kF32: break;
  }
  return memory::data_type::f32;
}

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

// (rows, cols) of a row-major operand: `ld` between rows, or between columns when stored
// transposed; with batch > 1, a leading batch dimension `batch_stride` apart.
memory::desc operand_desc(std::size_t batch, std::size_t rows, std::size_t cols, std::size_t ld,
                          std::size_t batch_stride, bool transposed, device::DType dtype) {
  const auto d = [](std::size_t x) { return static_cast<memory::dim>(x); };
  const memory::dim row_stride = transposed ? 1 : d(ld), col_stride = transposed ? d(ld) : 1;
  if (batch == 1) return memory::desc({d(rows), d(cols)}, onednn_dtype(dtype), {row_stride, col_stride});
  return memory::desc({d(batch), d(rows), d(cols)}, onednn_dtype(dtype), {d(batch_stride), row_stride, col_stride});
}

// A matmul primitive for one shape, layout, dtype mix, alpha and beta.
struct PreparedMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;
  dnnl::engine* engine = nullptr;
  dnnl::stream* stream = nullptr;
  std::string* failure = nullptr;  // the GEMM's first execution failure (guarded by failure_mutex)
  std::mutex* failure_mutex = nullptr;
};

// The key of a PreparedMatmul: shape, strides, transposes, dtypes, alpha and beta.
using MatmulKey = std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t,
                             std::size_t, std::size_t, std::size_t, bool, bool, int, int, int, float, float>;

dnnl::matmul::primitive_desc matmul_desc(const dnnl::engine& engine, const HostGemmArgs& g) {
  const std::size_t batch = g.batch;
  const auto a = operand_desc(batch, g.m, g.k, g.lda, g.a_stride, g.a_transposed, g.a_dtype);
  const auto b = operand_desc(batch, g.k, g.n, g.ldb, g.b_stride, g.b_transposed, g.b_dtype);
  const auto c = operand_desc(batch, g.m, g.n, g.ldc, g.c_stride, false, g.c_dtype);
  dnnl::primitive_attr attr;
  if (g.alpha != 1.0f) attr.set_output_scales(0, {g.alpha});
  if (g.beta != 0.0f) {
    dnnl::post_ops sum;
    sum.append_sum(g.beta);
    attr.set_post_ops(sum);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine);
}

// C = beta C when k == 0 (oneDNN's matmul leaves C as it was there, sum post-op or not).
void scale_c(const HostGemmArgs& g) {
  std::vector<float> row(g.n);
  const std::size_t size = device::dtype_size(g.c_dtype);
  for (std::size_t bi = 0; bi < g.batch; ++bi)
    for (std::size_t i = 0; i < g.m; ++i) {
      auto* bytes = static_cast<std::byte*>(g.c) + (bi * g.c_stride + i * g.ldc) * size;
      row = device::decode(g.c_dtype, std::span<const std::byte>(bytes, g.n * size));
      for (float& x : row) x = g.beta == 0.0f ? 0.0f : g.beta * x;
      const auto encoded = device::encode(g.c_dtype, row);
      std::memcpy(bytes, encoded.data(), encoded.size());
    }
}

// The native kernel. Exceptions must not cross into the OpenCL runtime: the first is kept for run().
void run_onednn_matmul(void* p) {
  const auto& g = *static_cast<const HostGemmArgs*>(p);
  const auto& prepared = *static_cast<const PreparedMatmul*>(g.library);
  try {
    if (g.k == 0) return scale_c(g);
    omp_set_num_threads(static_cast<int>(g.threads));  // this thread's parallel regions only
    const dnnl::engine& engine = *prepared.engine;
    memory a(prepared.pd.src_desc(), engine, const_cast<void*>(g.a));
    memory b(prepared.pd.weights_desc(), engine, const_cast<void*>(g.b));
    memory c(prepared.pd.dst_desc(), engine, g.c);
    prepared.matmul.execute(*prepared.stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    prepared.stream->wait();
  } catch (const std::exception& e) {
    std::lock_guard lock(*prepared.failure_mutex);
    if (prepared.failure->empty()) *prepared.failure = e.what();
  }
}

class OneDnnGemm final : public CountedGemm {
 public:
  explicit OneDnnGemm(device::Device& device) : device_(device) {
    static std::once_flag said;
    std::call_once(said, [] {
      spdlog::info("GEMM on CPU devices through {} (OpenMP waits: {})", onednn_description(), openmp_wait_policy());
    });
  }

  void run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override {
    if (!supports(a.dtype, b.dtype, c.dtype)) {
      throw DeviceError(fmt::format("oneDNN has no {} x {} -> {} matmul on this CPU ({})", device::dtype_name(a.dtype),
                                    device::dtype_name(b.dtype), device::dtype_name(c.dtype), onednn_description()));
    }
    throw_failure();
    if (s.m == 0 || s.n == 0 || s.batch == 0) return;
    device::Queue& queue = device_.queue();
    const auto start = start_call(queue);
    enqueue_host_gemm(queue, "onednn_matmul", run_onednn_matmul, s, alpha, a, b, beta, c, host_gemm_threads(device_),
                      &prepared(s, alpha, a, b, beta, c));
    end_call(queue, start);
  }

  std::string name() const override { return "onednn"; }

  // Float32 always; other mixes where oneDNN makes a non-reference matmul for them here.
  bool supports(device::DType a, device::DType b, device::DType c) const override {
    if (all_float32(a, b, c)) return true;
    std::lock_guard lock(mutex_);
    const auto key = std::make_tuple(static_cast<int>(a), static_cast<int>(b), static_cast<int>(c));
    if (const auto it = supported_.find(key); it != supported_.end()) return it->second;
    bool ok = false;
    try {
      const HostGemmArgs probe{.lda = 64, .ldb = 64, .ldc = 64, .m = 64, .n = 64, .k = 64, .a_dtype = a, .b_dtype = b,
                               .c_dtype = c};
      ok = !std::string(matmul_desc(engine_, probe).impl_info_str()).starts_with("ref");
    } catch (const dnnl::error&) {
      ok = false;  // unimplemented for this CPU
    }
    spdlog::debug("oneDNN {} x {} -> {} matmul on this CPU: {}", device::dtype_name(a), device::dtype_name(b),
                  device::dtype_name(c), ok ? "yes" : "no");
    supported_.emplace(key, ok);
    return ok;
  }

 private:
  const PreparedMatmul& prepared(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                                 const GemmOperand& c) {
    const bool at = s.a == Transpose::kYes, bt = s.b == Transpose::kYes;
    const MatmulKey key{s.m, s.n, s.k, s.batch, a.ld, b.ld, c.ld,
                        s.batch > 1 ? a.batch_stride : 0, s.batch > 1 ? b.batch_stride : 0,
                        s.batch > 1 ? c.batch_stride : 0, at, bt, static_cast<int>(a.dtype),
                        static_cast<int>(b.dtype), static_cast<int>(c.dtype), alpha, beta};
    std::lock_guard lock(mutex_);
    auto it = prepared_.find(key);
    if (it != prepared_.end()) return it->second;
    const HostGemmArgs g{.lda = a.ld, .ldb = b.ld, .ldc = c.ld, .a_stride = a.batch_stride,
                         .b_stride = b.batch_stride, .c_stride = c.batch_stride,
                         .m = s.m, .n = s.n, .k = std::max<std::size_t>(s.k, 1), .batch = s.batch,
                         .a_transposed = at, .b_transposed = bt, .a_dtype = a.dtype, .b_dtype = b.dtype,
                         .c_dtype = c.dtype, .alpha = alpha, .beta = beta};
    dnnl::matmul::primitive_desc pd;
    try {
      pd = matmul_desc(engine_, g);
    } catch (const dnnl::error& e) {
      throw DeviceError(fmt::format("oneDNN could not make a {}x{}x{} (batch {}) matmul: {}", s.m, s.n, s.k, s.batch,
                                    e.what()));
    }
    spdlog::debug("oneDNN matmul {}x{}x{} batch {}: {}", s.m, s.n, s.k, s.batch, pd.impl_info_str());
    dnnl::matmul matmul(pd);
    it = prepared_.emplace(key, PreparedMatmul{std::move(pd), std::move(matmul), &engine_, &stream_, &failure_,
                                               &failure_mutex_}).first;
    return it->second;
  }

  // A failure inside an earlier native kernel, as an exception here (its results are not to be used).
  void throw_failure() {
    std::lock_guard lock(failure_mutex_);
    if (!failure_.empty()) throw DeviceError("oneDNN GEMM failed: " + failure_);
  }

  device::Device& device_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};  // used by this device's native kernels, one at a time (in-order queue)
  mutable std::mutex mutex_;
  mutable std::map<std::tuple<int, int, int>, bool> supported_;
  std::map<MatmulKey, PreparedMatmul> prepared_;  // node-based: kernels in flight keep their entry's address
  std::mutex failure_mutex_;
  std::string failure_;
};

}  // namespace

bool onednn_gemm_available(const device::Device& device) { return host_gemm_available(device); }

std::unique_ptr<Gemm> make_onednn_gemm(device::Device& device) {
  require_host_gemm(device, "onednn");
  return std::make_unique<OneDnnGemm>(device);
}

std::string onednn_description() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("oneDNN {}.{}.{}, {} kernels", v->major, v->minor, v->patch, isa_name(dnnl::get_effective_cpu_isa()));
}

}  // namespace paxocl::kernels
