// The CLBlast implementation of kernels::Gemm.
#include <clblast.h>


#include <fmt/format.h>

#include "device/cl_error.h"
#include "kernels_cl/clblast_tuning.h"
#include "kernels_cl/gemm.h"

namespace paxocl::kernels {

namespace {

clblast::Transpose to_clblast(Transpose t) { return t == Transpose::kYes ? clblast::Transpose::kYes : clblast::Transpose::kNo; }

std::string describe(const GemmShape& s) {
  return fmt::format("GEMM {}{} m={} n={} k={} batch={}", s.a == Transpose::kYes ? 'T' : 'N',
                     s.b == Transpose::kYes ? 'T' : 'N', s.m, s.n, s.k, s.batch);
}

class ClBlastGemm final : public CountedGemm {
 public:
  // With a `pax-ocl tune` result for the device, CLBlast uses those parameters (ClearCache, below,
  // forgets overrides too, so every instance applies them again).
  explicit ClBlastGemm(device::Device& device) : device_(device) { apply_clblast_tuning(device); }
  // CLBlast keeps compiled programs in a process-wide cache; release them while their context is
  // alive, not from a static destructor at exit, after the OpenCL driver may be gone.
  ~ClBlastGemm() override { clblast::ClearCache(); }

  void run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override {
    if (!supports(a.dtype, b.dtype, c.dtype)) {
      throw DeviceError("the CLBlast GEMM takes float32 operands only; use a pax-ocl GEMM for 16-bit ones");
    }
    if (s.m == 0 || s.n == 0 || s.batch == 0) return;
    cl_command_queue queue = device_.queue().get();
    // Profiling times the GEMM on the host between two queue drains: CLBlast may run several
    // kernels (padding, transposes, the product) per call and returns only the last one's event.
    const auto start = start_call(device_.queue());
    clblast::StatusCode status;
    if (s.batch == 1) {
      status = clblast::Gemm<float>(clblast::Layout::kRowMajor, to_clblast(s.a), to_clblast(s.b), s.m, s.n, s.k, alpha,
                                    a.buffer, a.offset, a.ld, b.buffer, b.offset, b.ld, beta, c.buffer, c.offset, c.ld,
                                    &queue, nullptr);
    } else {
      status = clblast::GemmStridedBatched<float>(clblast::Layout::kRowMajor, to_clblast(s.a), to_clblast(s.b), s.m,
                                                  s.n, s.k, alpha, a.buffer, a.offset, a.ld, a.batch_stride, b.buffer,
                                                  b.offset, b.ld, b.batch_stride, beta, c.buffer, c.offset, c.ld,
                                                  c.batch_stride, s.batch, &queue, nullptr);
    }
    if (status != clblast::StatusCode::kSuccess) {
      const int code = static_cast<int>(status);
      // CLBlast passes OpenCL errors through as their codes; its own start at -1024.
      const std::string name = code > -1024 ? std::string(device::cl_error_name(code)) : fmt::format("CLBlast status {}", code);
      throw DeviceError(fmt::format("CLBlast failed with {} ({}) in {}", name, code, describe(s)));
    }
    end_call(device_.queue(), start);
  }

  std::string name() const override { return "clblast"; }
  bool supports(device::DType a, device::DType b, device::DType c) const override { return all_float32(a, b, c); }

 private:
  device::Device& device_;
};

}  // namespace

std::unique_ptr<Gemm> make_clblast_gemm(device::Device& device) { return std::make_unique<ClBlastGemm>(device); }

}  // namespace paxocl::kernels
