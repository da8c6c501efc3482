#include "kernels_cl/onednn_gemm.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_ocl.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"
#include "device/queue.h"
#include "device/buffer.h"
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

// Where operands start in their buffers: on CPU devices the native kernel gets pointers to the
// first element already; on GPUs the offset is part of the memory descriptor (offset0).
enum class Offsets { kInPointers, kInDescriptors };

// Operand x as (rows, cols) row-major: `ld` between rows, or between columns when stored
// transposed; with batch > 1, a leading batch dimension `batch_stride` apart; with outer > 1, an
// outer batch dimension before it, `outer_stride` apart (Gemm::run_outer).
memory::desc operand_desc(std::size_t batch, std::size_t rows, std::size_t cols, const GemmOperand& x, bool transposed,
                          Offsets offsets, std::size_t outer = 1, std::size_t outer_stride = 0) {
  const auto d = [](std::size_t v) { return static_cast<memory::dim>(v); };
  const memory::dim row_stride = transposed ? 1 : d(x.ld), col_stride = transposed ? d(x.ld) : 1;
  const memory::data_type t = onednn_dtype(x.dtype);
  memory::desc md;
  if (outer > 1 && batch > 1) {
    md = memory::desc({d(outer), d(batch), d(rows), d(cols)}, t,
                      {d(outer_stride), d(x.batch_stride), row_stride, col_stride});
  } else if (outer > 1 || batch > 1) {
    md = memory::desc({d(outer > 1 ? outer : batch), d(rows), d(cols)}, t,
                      {d(outer > 1 ? outer_stride : x.batch_stride), row_stride, col_stride});
  } else {
    md = memory::desc({d(rows), d(cols)}, t, {row_stride, col_stride});
  }
  if (offsets == Offsets::kInDescriptors) md.data.offset0 = d(x.offset);
  return md;
}

// C (m, n) = alpha op(A) op(B) + beta C as a matmul primitive descriptor (k at least 1).
dnnl::matmul::primitive_desc matmul_desc(const dnnl::engine& engine, const GemmShape& s, float alpha,
                                         const GemmOperand& a, const GemmOperand& b, float beta, const GemmOperand& c,
                                         Offsets offsets, const GemmOuterBatch& outer = {}) {
  const std::size_t k = std::max<std::size_t>(s.k, 1), o = outer.count;
  const auto ad = operand_desc(s.batch, s.m, k, a, s.a == Transpose::kYes, offsets, o, outer.a_stride);
  const auto bd = operand_desc(s.batch, k, s.n, b, s.b == Transpose::kYes, offsets, o, outer.b_stride);
  const auto cd = operand_desc(s.batch, s.m, s.n, c, false, offsets, o, outer.c_stride);
  dnnl::primitive_attr attr;
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops sum;
    sum.append_sum(beta);
    attr.set_post_ops(sum);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), attr, engine);
}

// C = beta C on host memory at `c` (oneDNN's matmul leaves C as it was when k == 0).
void scale_rows(void* c, const GemmShape& s, const GemmOperand& co, float beta) {
  const std::size_t size = device::dtype_size(co.dtype);
  for (std::size_t bi = 0; bi < s.batch; ++bi)
    for (std::size_t i = 0; i < s.m; ++i) {
      auto* bytes = static_cast<std::byte*>(c) + (bi * co.batch_stride + i * co.ld) * size;
      std::vector<float> row = device::decode(co.dtype, std::span<const std::byte>(bytes, s.n * size));
      for (float& x : row) x = beta == 0.0f ? 0.0f : beta * x;
      const auto encoded = device::encode(co.dtype, row);
      std::memcpy(bytes, encoded.data(), encoded.size());
    }
}

// A matmul primitive for one shape, layout, dtype mix, alpha and beta, with what the CPU's native
// kernel needs to run it.
struct PreparedMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;
  GemmShape shape;
  GemmOperand c;  // its layout, for k == 0
  float beta = 0;
  const dnnl::engine* engine = nullptr;
  dnnl::stream* stream = nullptr;
  device::NativeFailure* failure = nullptr;  // the queue's (CPU devices)
};

// The key of a PreparedMatmul: shape, transposes, dtypes, leading dimensions, batch strides,
// offsets (GPUs only), alpha, beta and the outer batch.
using MatmulKey = std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, bool, bool, int, int, int, std::size_t,
                             std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t,
                             std::size_t, float, float, std::size_t, std::size_t, std::size_t, std::size_t>;

// What the CPU and GPU forms share: an engine, the dtype mixes it takes and its primitives.
class OneDnnGemmBase : public CountedGemm {
 public:
  std::string name() const override { return "onednn"; }

  // Float32 always; other mixes where oneDNN makes a non-reference matmul for them on this engine.
  bool supports(device::DType a, device::DType b, device::DType c) const override {
    if (all_float32(a, b, c)) return true;
    std::lock_guard lock(mutex_);
    const auto key = std::make_tuple(static_cast<int>(a), static_cast<int>(b), static_cast<int>(c));
    if (const auto it = supported_.find(key); it != supported_.end()) return it->second;
    bool ok = false;
    try {
      const GemmShape s{Transpose::kNo, Transpose::kNo, 64, 64, 64};
      ok = !std::string(matmul_desc(engine_, s, 1.0f, GemmOperand{nullptr, 0, 64, 0, a}, GemmOperand{nullptr, 0, 64, 0, b},
                                    0.0f, GemmOperand{nullptr, 0, 64, 0, c}, offsets_)
                            .impl_info_str())
                .starts_with("ref");
    } catch (const dnnl::error&) {
      ok = false;  // unimplemented here
    }
    spdlog::debug("oneDNN {} x {} -> {} matmul here: {}", device::dtype_name(a), device::dtype_name(b),
                  device::dtype_name(c), ok ? "yes" : "no");
    supported_.emplace(key, ok);
    return ok;
  }

 protected:
  OneDnnGemmBase(dnnl::engine engine, Offsets offsets) : engine_(std::move(engine)), offsets_(offsets) {}

  void check_dtypes(const GemmOperand& a, const GemmOperand& b, const GemmOperand& c) const {
    if (supports(a.dtype, b.dtype, c.dtype)) return;
    throw DeviceError(fmt::format("oneDNN has no {} x {} -> {} matmul here", device::dtype_name(a.dtype),
                                  device::dtype_name(b.dtype), device::dtype_name(c.dtype)));
  }

  PreparedMatmul& prepared(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                           const GemmOperand& c, const GemmOuterBatch& outer = {}) {
    const bool batched = s.batch > 1, offsets = offsets_ == Offsets::kInDescriptors;
    const MatmulKey key{s.m, s.n, s.k, s.batch, s.a == Transpose::kYes, s.b == Transpose::kYes,
                        static_cast<int>(a.dtype), static_cast<int>(b.dtype), static_cast<int>(c.dtype),
                        a.ld, b.ld, c.ld, batched ? a.batch_stride : 0, batched ? b.batch_stride : 0,
                        batched ? c.batch_stride : 0, offsets ? a.offset : 0, offsets ? b.offset : 0,
                        offsets ? c.offset : 0, alpha, beta, outer.count, outer.count > 1 ? outer.a_stride : 0,
                        outer.count > 1 ? outer.b_stride : 0, outer.count > 1 ? outer.c_stride : 0};
    std::lock_guard lock(mutex_);
    auto it = prepared_.find(key);
    if (it != prepared_.end()) return it->second;
    dnnl::matmul::primitive_desc pd;
    try {
      pd = matmul_desc(engine_, s, alpha, a, b, beta, c, offsets_, outer);
    } catch (const dnnl::error& e) {
      throw DeviceError(fmt::format("oneDNN could not make a {}x{}x{} (batch {} x {}) matmul: {}", s.m, s.n, s.k,
                                    outer.count, s.batch, e.what()));
    }
    spdlog::debug("oneDNN matmul {}x{}x{} batch {} x {}: {}", s.m, s.n, s.k, outer.count, s.batch, pd.impl_info_str());
    dnnl::matmul matmul(pd);
    PreparedMatmul p{std::move(pd), std::move(matmul), s, c, beta, &engine_, nullptr, nullptr};
    return prepared_.emplace(key, std::move(p)).first->second;  // node-based: its address stays
  }

  dnnl::engine engine_;

 private:
  Offsets offsets_;
  mutable std::mutex mutex_;
  mutable std::map<std::tuple<int, int, int>, bool> supported_;
  std::map<MatmulKey, PreparedMatmul> prepared_;
};

// ---- CPU devices: the matmul in a native kernel on the mapped operands ----

// The native kernel. Exceptions must not cross into the OpenCL runtime: they are recorded on the
// queue, whose next synchronisation (or this GEMM's next call) throws them.
void run_onednn_matmul(void* p) {
  const auto& g = *static_cast<const HostGemmArgs*>(p);
  const auto& prepared = *static_cast<const PreparedMatmul*>(g.library);
  try {
    if (g.k == 0) return scale_rows(g.c, prepared.shape, prepared.c, prepared.beta);
    omp_set_num_threads(static_cast<int>(g.threads));  // this thread's parallel regions only
    const dnnl::engine& engine = *prepared.engine;
    memory a(prepared.pd.src_desc(), engine, const_cast<void*>(g.a));
    memory b(prepared.pd.weights_desc(), engine, const_cast<void*>(g.b));
    memory c(prepared.pd.dst_desc(), engine, g.c);
    prepared.matmul.execute(*prepared.stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    prepared.stream->wait();
  } catch (const std::exception& e) {
    prepared.failure->record(std::string("oneDNN GEMM failed: ") + e.what());
  }
}

class OneDnnCpuGemm final : public OneDnnGemmBase {
 public:
  explicit OneDnnCpuGemm(device::Device& device)
      : OneDnnGemmBase(dnnl::engine(dnnl::engine::kind::cpu, 0), Offsets::kInPointers), device_(device) {
    static std::once_flag said;
    std::call_once(said, [] {
      spdlog::info("GEMM on CPU devices through {} (OpenMP waits: {})", onednn_description(), openmp_wait_policy());
    });
  }
  // The prepared matmuls are the queued native kernels' `library`: they must outlive those
  // commands, also when an exception unwinds past GEMMs still in flight (an allocation that fails
  // mid-forward, as the KV cache's in `pax-ocl sample`, crashed one such run in CI).
  ~OneDnnCpuGemm() override {
    try {
      device_.queue().finish();
    } catch (const std::exception& e) {
      spdlog::error("oneDNN GEMM: waiting for its queued matmuls: {}", e.what());
    }
  }
  OneDnnCpuGemm(const OneDnnCpuGemm&) = delete;
  OneDnnCpuGemm& operator=(const OneDnnCpuGemm&) = delete;

  void run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override {
    run_outer(GemmOuterBatch{}, s, alpha, a, b, beta, c);
  }
  // Both batch levels in one matmul (4-d memory descriptors); k == 0 one repetition at a time.
  void run_outer(const GemmOuterBatch& outer, const GemmShape& s, float alpha, const GemmOperand& a,
                 const GemmOperand& b, float beta, const GemmOperand& c) override {
    if (outer.count > 1 && s.k == 0) return Gemm::run_outer(outer, s, alpha, a, b, beta, c);
    check_dtypes(a, b, c);
    device_.queue().native_failure()->throw_if_recorded();
    if (s.m == 0 || s.n == 0 || s.batch == 0 || outer.count == 0) return;
    PreparedMatmul& p = prepared(s, alpha, a, b, beta, c, outer);
    if (p.stream == nullptr) {  // new: no native kernel reads it yet (later calls would race with one)
      p.stream = &stream_;
      p.failure = device_.queue().native_failure();
    }
    device::Queue& queue = device_.queue();
    const auto start = start_call(queue);
    enqueue_host_gemm(queue, "onednn_matmul", run_onednn_matmul, s, alpha, a, b, beta, c, host_gemm_threads(device_), &p,
                      outer);
    end_call(queue, start);
  }

 private:
  device::Device& device_;
  dnnl::stream stream_{engine_};  // used by this device's native kernels, one at a time (in-order queue)
};

// ---- GPUs: the matmul on the device's own context and queue (OpenCL interop) ----

class OneDnnGpuGemm final : public OneDnnGemmBase {
 public:
  OneDnnGpuGemm(device::Device& device, dnnl::engine engine)
      : OneDnnGemmBase(std::move(engine), Offsets::kInDescriptors),
        device_(device),
        stream_(dnnl::ocl_interop::make_stream(engine_, device.queue().get())) {}

  void run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override {
    check_dtypes(a, b, c);
    if (s.m == 0 || s.n == 0 || s.batch == 0) return;
    device::Queue& queue = device_.queue();
    const auto start = start_call(queue);
    if (s.k == 0) {
      scale_on_host(s, c, beta);
    } else {
      const PreparedMatmul& p = prepared(s, alpha, a, b, beta, c);
      using dnnl::ocl_interop::make_memory;
      using dnnl::ocl_interop::memory_kind;
      const memory am = make_memory(p.pd.src_desc(), engine_, memory_kind::buffer, a.buffer);
      const memory bm = make_memory(p.pd.weights_desc(), engine_, memory_kind::buffer, b.buffer);
      const memory cm = make_memory(p.pd.dst_desc(), engine_, memory_kind::buffer, c.buffer);
      // Enqueued on the device's in-order queue: ordered with every other command, no wait here.
      p.matmul.execute(stream_, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    }
    end_call(queue, start);
  }

 private:
  // k == 0: C = beta C through a blocking map (never on a model's path; correct, not fast).
  void scale_on_host(const GemmShape& s, const GemmOperand& c, float beta) {
    device::Queue& queue = device_.queue();
    void* host = queue.map(c.buffer, c.offset * device::dtype_size(c.dtype), span_bytes(c, s.m, s.n, s.batch),
                           CL_MAP_READ | CL_MAP_WRITE);
    queue.finish();
    scale_rows(host, s, c, beta);
    queue.unmap(c.buffer, host);
  }

  device::Device& device_;
  dnnl::stream stream_;
};

// A GPU by Intel ("Intel(R) Corporation"; a PoCL CPU device on an Intel CPU says "GenuineIntel").
bool is_intel_gpu(const device::DeviceInfo& info) {
  return info.kind == device::DeviceKind::kGpu &&
         (info.vendor.find("Intel") != std::string::npos || info.platform_name.find("Intel") != std::string::npos);
}

// C = A B on 16x16x16 float32 operands at offsets, against the host in double precision.
std::string check_numerics(Gemm& gemm, device::Device& device) {
  constexpr std::size_t n = 16, off = 5;
  std::vector<float> a(off + n * n), b(off + n * n), c(off + n * n, 0.0f);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>((i * 7) % 13) / 8.0f - 0.75f;
    b[i] = static_cast<float>((i * 5) % 11) / 8.0f - 0.5f;
  }
  device::Buffer<float> ab(device.context(), a.size(), "onednn_probe.a"), bb(device.context(), b.size(), "onednn_probe.b"),
      cb(device.context(), c.size(), "onednn_probe.c");
  device.queue().write(ab, std::span<const float>(a));
  device.queue().write(bb, std::span<const float>(b));
  device.queue().write(cb, std::span<const float>(c));
  gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, n, n, n}, 1.0f, GemmOperand{ab.get(), off, n}, GemmOperand{bb.get(), off, n},
           0.0f, GemmOperand{cb.get(), off, n});
  device.queue().read(cb, std::span<float>(c));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double want = 0;
      for (std::size_t p = 0; p < n; ++p) want += static_cast<double>(a[off + i * n + p]) * b[off + p * n + j];
      if (std::abs(c[off + i * n + j] - want) > 1e-3 * (1.0 + std::abs(want))) {
        return fmt::format("a probe GEMM gave {} where {} was due", c[off + i * n + j], want);
      }
    }
  return {};
}

}  // namespace

std::unique_ptr<Gemm> make_onednn_gemm(device::Device& device) {
  if (device.info().kind != device::DeviceKind::kCpu) {
    if (const std::string why = onednn_gpu_refusal(device); !why.empty()) {
      throw ConfigError(fmt::format("--gemm=onednn: device '{}' cannot run it: {}; use --gemm=auto", device.info().name, why));
    }
    return make_onednn_gpu_gemm(device);
  }
  require_host_gemm(device, "onednn");
  return std::make_unique<OneDnnCpuGemm>(device);
}

std::unique_ptr<Gemm> make_onednn_gpu_gemm(device::Device& device, bool require_intel) {
  if (require_intel && !is_intel_gpu(device.info())) {
    throw DeviceError(fmt::format("not an Intel GPU: {} ({})", device.info().vendor, device::to_string(device.info().kind)));
  }
  dnnl::engine engine;
  try {
    engine = dnnl::ocl_interop::make_engine(device.info().id, device.context().get());
  } catch (const dnnl::error& e) {
    throw DeviceError(fmt::format("oneDNN refused the device: {}", e.what()));
  }
  return std::make_unique<OneDnnGpuGemm>(device, std::move(engine));
}

std::string onednn_gpu_refusal(device::Device& device) {
  static std::mutex mutex;
  static std::map<cl_device_id, std::string> refusals;  // per device, once per process
  std::lock_guard lock(mutex);
  if (const auto it = refusals.find(device.info().id); it != refusals.end()) return it->second;
  std::string why;
  try {
    auto gemm = make_onednn_gpu_gemm(device);
    why = check_numerics(*gemm, device);
  } catch (const std::exception& e) {
    why = e.what();
  }
  // Said at info where it matters (Intel GPUs), at debug for every other device.
  spdlog::log(is_intel_gpu(device.info()) ? spdlog::level::info : spdlog::level::debug, "oneDNN GEMM on {}: {}",
              device.info().name, why.empty() ? "yes (its OpenCL interop passed a probe GEMM)" : "no (" + why + ")");
  return refusals.emplace(device.info().id, why).first->second;
}

std::string onednn_description() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("oneDNN {}.{}.{}, {} kernels", v->major, v->minor, v->patch, isa_name(dnnl::get_effective_cpu_isa()));
}

device::Bf16GemmRates measure_onednn_bf16_gemm(unsigned threads) {
  constexpr memory::dim n = 1024;
  constexpr int kRuns = 5;
  using dt = memory::data_type;
  const std::string what = fmt::format("{}, {}^3, {} thread{}", onednn_description(), n, threads, threads == 1 ? "" : "s");
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    // One matmul of each dtype on its own operands: C (n, n) f32 = A (n, n) x B^T, B stored (n, n).
    struct Timed {
      dnnl::matmul::primitive_desc pd;
      dnnl::matmul matmul;
      memory a, b, c;
      double best = 1e30;
    };
    const auto make = [&](dt in) {
      const memory::desc ad({n, n}, in, {n, 1}), bd({n, n}, in, {1, n}), cd({n, n}, dt::f32, {n, 1});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), engine);
      Timed t{pd, dnnl::matmul(pd), memory(ad, engine), memory(bd, engine), memory(cd, engine)};
      // Small varied values (bit patterns of floats in [-1, 1) for either dtype's memory).
      for (memory* m : {&t.a, &t.b}) {
        const std::size_t elements = static_cast<std::size_t>(n * n);
        std::vector<float> values(elements);
        for (std::size_t i = 0; i < elements; ++i) values[i] = static_cast<float>((i * 7919) % 2048) / 1024.0f - 1.0f;
        const device::DType d = in == dt::bf16 ? device::DType::kBF16 : device::DType::kF32;
        const std::vector<std::byte> encoded = device::encode(d, values);
        std::memcpy(m->get_data_handle(), encoded.data(), encoded.size());
      }
      return t;
    };
    // float32 always (the rate beside which bfloat16 is judged, and the probe's record where there
    // is none); bfloat16 where oneDNN has more than its reference matmul (not on AVX2-only CPUs).
    Timed f32 = make(dt::f32);
    std::optional<Timed> bf16;
    std::string no_bf16;
    try {
      bf16.emplace(make(dt::bf16));
      if (std::string(bf16->pd.impl_info_str()).starts_with("ref")) {
        bf16.reset();
        no_bf16 = "oneDNN has only its reference bfloat16 matmul here";
      }
    } catch (const dnnl::error& e) {
      no_bf16 = fmt::format("oneDNN made no bfloat16 matmul ({})", e.what());
    }
    // The probe's thread count for this thread's parallel regions, the caller's again on every way out.
    struct OpenMpThreads {
      int saved = omp_get_max_threads();
      explicit OpenMpThreads(int n) { omp_set_num_threads(n); }
      ~OpenMpThreads() { omp_set_num_threads(saved); }
      OpenMpThreads(const OpenMpThreads&) = delete;
      OpenMpThreads& operator=(const OpenMpThreads&) = delete;
    } scoped_threads(static_cast<int>(threads));
    std::vector<Timed*> timed{&f32};
    if (bf16) timed.push_back(&*bf16);
    for (int run = -1; run < kRuns; ++run) {  // run -1 warms both up; then they alternate
      for (Timed* t : timed) {
        const auto start = std::chrono::steady_clock::now();
        t->matmul.execute(stream, {{DNNL_ARG_SRC, t->a}, {DNNL_ARG_WEIGHTS, t->b}, {DNNL_ARG_DST, t->c}});
        stream.wait();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (run >= 0) t->best = std::min(t->best, seconds);
      }
    }
    const double flops = 2.0 * static_cast<double>(n) * n * n;
    if (!bf16) return {0, flops / f32.best * 1e-9, fmt::format("{}: {}", what, no_bf16)};
    return {flops / bf16->best * 1e-9, flops / f32.best * 1e-9, what};
  } catch (const dnnl::error& e) {
    return {0, 0, fmt::format("{}: oneDNN made no float32 matmul ({})", what, e.what())};
  }
}

}  // namespace paxocl::kernels
