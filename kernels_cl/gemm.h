// Gemm: the one matrix-multiply interface every layer uses, so a faster GEMM can replace the
// CLBlast one without touching layers. Row-major throughout:
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C,  op(X) = X or X^T
// With batch > 1 the same product repeats `batch` times, each operand advancing by its
// batch_stride (strided-batched GEMM, used by attention). Enqueued in order on the device's queue.
// Operands may be stored in 16 bits (mixed precision, device/dtype.h): products are accumulated
// in float32 whatever the operands' dtypes, and C is rounded once when stored. Implementations
// that cannot take a dtype say so (supports()).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "device/device.h"
#include "device/dtype.h"

namespace paxocl::kernels {

enum class Transpose { kNo, kYes };

// How GEMMs with float32 A and B multiply (MATMUL_PRECISION): in float32, or with A and B rounded
// to TF32 (10-bit mantissa, float32 accumulation) on tensor cores where the probe found them
// (tensor_core_gemm.h); float32 on every other device.
enum class MatmulPrecision { kFloat32, kTf32 };
MatmulPrecision matmul_precision_from_name(const std::string& name);  // "float32" | "tf32"; ConfigError otherwise

struct GemmOperand {
  cl_mem buffer = nullptr;
  std::size_t offset = 0;        // elements
  std::size_t ld = 0;            // leading dimension (row length as stored), elements
  std::size_t batch_stride = 0;  // elements between consecutive matrices (batch > 1)
  device::DType dtype = device::DType::kF32;
};

struct GemmShape {
  Transpose a = Transpose::kNo, b = Transpose::kNo;
  std::size_t m = 0, n = 0, k = 0;
  std::size_t batch = 1;
};

// A second, outer level of strided batching (Gemm::run_outer): `count` repetitions of a whole
// (possibly batched) GEMM, operand X of repetition o starting o * X-stride elements after X's
// offset. Attention uses it for several sequences at once, each a strided batch of heads.
struct GemmOuterBatch {
  std::size_t count = 1;
  std::size_t a_stride = 0, b_stride = 0, c_stride = 0;  // elements
};

// What a GEMM may apply as it stores C, saving an element-wise pass over C (Gemm::run_fused):
//   v = alpha * op(A) op(B) + beta * C + bias      bias (n) in C's dtype, added to every row
//   C = v, or with gelu_grad C = v * gelu'(Z)       Z (m, n): a GELU's input (its backward)
//   G = gelu(v)                                     G (m, n): a GELU's output (its forward)
// Each part is absent while its buffer is null; gelu and gelu_grad are not given together. G is
// computed from the float v, before C is rounded to its dtype. Z and G are in C's dtype, each with
// its own offset and ld.
struct GemmEpilogue {
  GemmOperand bias;       // offset and dtype used
  GemmOperand gelu;       // G: offset, ld and dtype used
  GemmOperand gelu_grad;  // Z: offset, ld and dtype used
};

struct GemmStats {
  long calls = 0;
  double device_ms = 0;  // time in GEMMs while profiling is on (queue drained around each call)
};

class Gemm {
 public:
  virtual ~Gemm() = default;
  virtual void run(const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
                   const GemmOperand& c) = 0;
  // run() with the epilogue applied as C is stored, where this implementation can (batch 1, the
  // epilogue's operands in C's dtype); false, having enqueued nothing, where it cannot: the caller
  // then applies the epilogue itself.
  virtual bool run_fused(const GemmShape&, float /*alpha*/, const GemmOperand& /*a*/, const GemmOperand& /*b*/,
                         float /*beta*/, const GemmOperand& /*c*/, const GemmEpilogue&) {
    return false;
  }
  // run() for each of outer.count repetitions (GemmOuterBatch); implementations that take the two
  // batch levels in one call (oneDNN) override it, the others run the repetitions one by one.
  virtual void run_outer(const GemmOuterBatch& outer, const GemmShape& shape, float alpha, const GemmOperand& a,
                         const GemmOperand& b, float beta, const GemmOperand& c) {
    for (std::size_t o = 0; o < outer.count; ++o) {
      GemmOperand ao = a, bo = b, co = c;
      ao.offset += o * outer.a_stride;
      bo.offset += o * outer.b_stride;
      co.offset += o * outer.c_stride;
      run(shape, alpha, ao, bo, beta, co);
    }
  }
  virtual std::string name() const = 0;
  // Whether run() takes operands of these dtypes (all float32 is always supported).
  virtual bool supports(device::DType a, device::DType b, device::DType c) const = 0;
  // Profiling for benchmarks: when on, each GEMM is timed alone (the queue is drained before and
  // after it, which serialises the step) and stats() sums those times since the last reset.
  virtual void set_profiling(bool on) = 0;
  virtual GemmStats stats() = 0;
  virtual void reset_stats() = 0;
};

// The bookkeeping of an implementation that runs on one queue: call counts and, while profiling,
// each call's time between two drains of the queue (start_call before its commands, end_call after).
class CountedGemm : public Gemm {
 public:
  void set_profiling(bool on) override { profiling_ = on; }
  GemmStats stats() override { return stats_; }
  void reset_stats() override { stats_ = {}; }

 protected:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_call(const device::Queue& queue) const {
    if (profiling_) queue.finish();
    return Clock::now();
  }
  void end_call(const device::Queue& queue, Clock::time_point start) {
    ++stats_.calls;
    if (!profiling_) return;
    queue.finish();
    stats_.device_ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  }

 private:
  bool profiling_ = false;
  GemmStats stats_;
};

// Whether all three dtypes are float32 (CLBlast and BLIS take nothing else).
inline bool all_float32(device::DType a, device::DType b, device::DType c) {
  return a == device::DType::kF32 && b == device::DType::kF32 && c == device::DType::kF32;
}

// CLBlast (Gemm / GemmStridedBatched) on `device`'s queue.
std::unique_ptr<Gemm> make_clblast_gemm(device::Device& device);

}  // namespace paxocl::kernels
