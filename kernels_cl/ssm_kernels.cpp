#include "kernels_cl/ssm_kernels.h"

#include <cmath>
#include <map>
#include <mutex>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/announce_once.h"
#include "kernels_cl/clfft.h"
#include "kernels_cl/launch_checks.h"
#include "kernels_cl/ssm_fft_shape.h"

namespace paxocl::kernels {

namespace {
// The self-check's verdict per device: clFFT's convolution agreed with the direct kernel's.
std::mutex self_check_mutex;
std::map<cl_device_id, bool>& self_checks() {
  static std::map<cl_device_id, bool> verdicts;
  return verdicts;
}

void grow(device::Buffer<float>& buffer, const device::Context& context, std::size_t count, const char* name) {
  if (buffer.count() < count) buffer = device::Buffer<float>(context, count, name);
}
}  // namespace

// clFFT's plans for this device and the FFT scratch, grown to the largest shape run so far. Only
// the device's (in-order) queue uses them, so one set serves every SSM layer on the device.
struct SsmKernels::Fft {
  FftLibrary library;
  FftPlanCache plans;
  FloatBuffer time;             // (B*C, n) reals: packed inputs, inverse transforms' outputs
  FloatBuffer spectrum;         // (B*C, F) complex: u's
  FloatBuffer work;             // (B*C, F) complex: dy's, the products
  FloatBuffer kernel_spectrum;  // (C, F) complex: K's
  FloatBuffer grad_spectrum;    // (C, F) complex: dK's

  // ssm_fft_scratch_floats (ssm_fft_shape.h) counts these for `pax-ocl plan`.
  void reserve(const device::Context& context, std::size_t B, std::size_t C, std::size_t n) {
    const std::size_t F = n / 2 + 1;
    grow(time, context, B * C * n, "ssm.fft.time");
    grow(spectrum, context, 2 * B * C * F, "ssm.fft.spectrum");
    grow(work, context, 2 * B * C * F, "ssm.fft.work");
    grow(kernel_spectrum, context, 2 * C * F, "ssm.fft.kernel_spectrum");
    grow(grad_spectrum, context, 2 * C * F, "ssm.fft.grad_spectrum");
  }
  FftPlan& plan(device::Device& device, FftKind kind, std::size_t n, std::size_t batch) {
    return plans.get(device, kind, n, batch);
  }
};

SsmKernels::SsmKernels(device::ProgramCache& cache, device::Device& device, device::DType act)
    : device_(&device),
      set_(act_program(cache, device, "ssm",
                       {"ssm_kernel", "ssm_kernel_grad", "ssm_conv_forward", "ssm_conv_backward_input",
                        "ssm_conv_backward_kernel", "ssm_skip_grad", "ssm_decode"},
                       act)),
      fft_set_(act_program(cache, device, "ssm_fft",
                           {"ssm_pack", "ssm_pack_kernel", "ssm_unpack", "ssm_unpack_kernel", "ssm_spectrum_product",
                            "ssm_spectrum_correlate"},
                           act)),
      act_(act) {}

SsmKernels::~SsmKernels() = default;

std::size_t SsmKernels::fft_length(std::size_t T) { return ssm_fft_length(T); }

std::size_t SsmKernels::channel_items(std::size_t rows, std::size_t C) const {
  return rows * (set_.cpu_variant() ? (C + kCpuElementsPerItem - 1) / kCpuElementsPerItem : C);
}

std::size_t SsmKernels::fft_scratch_bytes() const {
  if (!fft_) return 0;
  return (fft_->time.count() + fft_->spectrum.count() + fft_->work.count() + fft_->kernel_spectrum.count() +
          fft_->grad_spectrum.count()) *
         sizeof(float);
}

void SsmKernels::kernel(FloatBuffer& K, const FloatBuffer& powers, const FloatBuffer& c_re, const FloatBuffer& c_im,
                        std::size_t T, std::size_t C, std::size_t N) {
  require_count("ssm_kernel", T * C, K);
  require_count("ssm_kernel", 2 * T * N, powers);
  require_count("ssm_kernel", N * C, c_re, c_im);
  set_.launch("ssm_kernel", channel_items(T, C), K, powers, c_re, c_im, u32(T), u32(C), u32(N));
}

void SsmKernels::kernel_grad(FloatBuffer& dc_re, FloatBuffer& dc_im, const FloatBuffer& dK, const FloatBuffer& powers,
                             std::size_t T, std::size_t C, std::size_t N) {
  require_count("ssm_kernel_grad", T * C, dK);
  require_count("ssm_kernel_grad", 2 * T * N, powers);
  require_count("ssm_kernel_grad", N * C, dc_re, dc_im);
  set_.launch("ssm_kernel_grad", channel_items(N, C), dc_re, dc_im, dK, powers, u32(T), u32(C), u32(N));
}

SsmKernels::Fft& SsmKernels::fft() {
  if (!fft_) fft_ = std::make_unique<Fft>();
  return *fft_;
}

SsmConvolution ssm_convolution_from_name(const std::string& name) {
  if (name == "fft") return SsmConvolution::kFft;
  if (name == "direct") return SsmConvolution::kDirect;
  if (name == "auto") return SsmConvolution::kAuto;
  throw std::logic_error("SSM_CONVOLUTION=" + name + " reached the kernels unvalidated");
}

bool ssm_fft_requested(SsmConvolution requested, KernelVariant variant, std::size_t T) {
  if (requested != SsmConvolution::kAuto) return requested == SsmConvolution::kFft;
  return variant != KernelVariant::kCpu || T > kSsmCpuDirectMaxPositions;
}

bool ssm_fft_requested(const std::string& convolution, const device::DeviceInfo& device, std::size_t T) {
  return ssm_fft_requested(ssm_convolution_from_name(convolution), requested_variant(device), T);
}

SsmConvolution SsmKernels::resolve(SsmConvolution requested, std::size_t B, std::size_t T, std::size_t C) {
  if (requested == SsmConvolution::kDirect) return announced(SsmConvolution::kDirect, "SSM_CONVOLUTION=direct");
  if (!ssm_fft_requested(requested, set_.variant(), T)) {
    return announced(SsmConvolution::kDirect,
                     fmt::format("SSM_CONVOLUTION=auto: {} positions, at most {} on the CPU kernel set, where they "
                                 "run faster than clFFT",
                                 T, kSsmCpuDirectMaxPositions));
  }
  if (!fft_unusable_.empty()) return announced(SsmConvolution::kDirect, fft_unusable_);
  const std::size_t n = fft_length(T);
  try {
    if (!fft_passes_self_check()) {
      fft_unusable_ = "clFFT failed its self-check";
      return announced(SsmConvolution::kDirect, fft_unusable_);
    }
    for (std::size_t batch : {C, B * C}) {
      fft().plan(*device_, FftKind::kRealToComplex, n, batch);
      fft().plan(*device_, FftKind::kComplexToReal, n, batch);
    }
  } catch (const DeviceError& e) {
    spdlog::warn("SSM convolution on {}: clFFT cannot run length {} ({}); using the direct kernels",
                 device_->info().name, n, e.what());
    fft_unusable_ = fmt::format("clFFT cannot run length {}", n);
    return announced(SsmConvolution::kDirect, fft_unusable_);
  }
  return announced(SsmConvolution::kFft, fmt::format("FFTs of {} points for {} positions; it passed its self-check", n, T));
}

SsmConvolution SsmKernels::announced(SsmConvolution method, const std::string& why) const {
  const bool fft = method == SsmConvolution::kFft;
  if (announce_once(fmt::format("ssm convolution {} {}", fmt::ptr(device_->info().id), fft ? "fft" : "direct"))) {
    spdlog::info("SSM convolution on {}: {} ({})", device_->info().name, fft ? "clFFT" : "direct kernels", why);
  }
  return method;
}

// A small convolution (B=2, T=5, C=3, values exact in every activation dtype) through clFFT and
// through the direct kernel; they must agree to within the output's rounding.
bool SsmKernels::fft_passes_self_check() {
  const std::lock_guard lock(self_check_mutex);
  const auto known = self_checks().find(device_->info().id);
  if (known != self_checks().end()) return known->second;
  constexpr std::size_t B = 2, T = 5, C = 3;
  std::vector<float> u(B * T * C), K(T * C), d(C, 0.5f);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.25f;
  for (std::size_t i = 0; i < K.size(); ++i) K[i] = static_cast<float>(static_cast<int>(i % 5) - 2) * 0.125f;
  const device::Context& context = device_->context();
  ActBuffer u_b(context, act_, u.size(), "ssm.check.u"), y_fft(context, act_, u.size(), "ssm.check.y_fft"),
      y_direct(context, act_, u.size(), "ssm.check.y_direct");
  FloatBuffer K_b(context, K.size(), "ssm.check.K"), d_b(context, C, "ssm.check.d");
  u_b.write(device_->queue(), u);
  device_->queue().write(K_b, std::span<const float>(K));
  device_->queue().write(d_b, std::span<const float>(d));
  bool passed = false;
  std::string why;
  try {
    fft_forward(y_fft, u_b, K_b, d_b, B, T, C);
    conv_forward(SsmConvolution::kDirect, y_direct, u_b, K_b, d_b, B, T, C);
    const std::vector<float> got = y_fft.read(device_->queue()), want = y_direct.read(device_->queue());
    passed = true;
    for (std::size_t i = 0; i < got.size() && passed; ++i) {
      if (!(std::abs(got[i] - want[i]) <= 1e-2f * (1.0f + std::abs(want[i])))) {
        passed = false;
        why = fmt::format("element {} is {} through clFFT, {} direct", i, got[i], want[i]);
      }
    }
  } catch (const DeviceError& e) {
    why = e.what();
  }
  if (!passed) {
    spdlog::warn("SSM convolution on {}: clFFT failed its self-check ({}); using the direct kernels",
                 device_->info().name, why);
  }
  self_checks()[device_->info().id] = passed;
  return passed;
}

void SsmKernels::conv_forward(SsmConvolution method, ActBuffer& y, const ActBuffer& u, const FloatBuffer& K,
                              const FloatBuffer& d, std::size_t B, std::size_t T, std::size_t C) {
  require_act(act_, "ssm_conv_forward", y, u);
  require_count("ssm_conv_forward", B * T * C, y, u);
  require_count("ssm_conv_forward", T * C, K);
  require_count("ssm_conv_forward", C, d);
  if (method == SsmConvolution::kFft) {
    fft_forward(y, u, K, d, B, T, C);
  } else {
    set_.launch("ssm_conv_forward", channel_items(B * T, C), y, u, K, d, u32(B), u32(T), u32(C));
  }
}

void SsmKernels::conv_backward(SsmConvolution method, ActBuffer& du, FloatBuffer& dK, FloatBuffer& dd,
                               const ActBuffer& dy, const ActBuffer& u, const FloatBuffer& K, const FloatBuffer& d,
                               std::size_t B, std::size_t T, std::size_t C,
                               const std::function<void(ActBuffer&)>& after_du) {
  require_act(act_, "ssm_conv_backward", du, dy, u);
  require_count("ssm_conv_backward", B * T * C, du, dy, u);
  require_count("ssm_conv_backward", T * C, K, dK);
  require_count("ssm_conv_backward", C, d, dd);
  if (method == SsmConvolution::kFft) {
    fft_backward(du, dK, dy, u, K, d, B, T, C, after_du);
  } else {
    set_.launch("ssm_conv_backward_input", channel_items(B * T, C), du, dy, K, d, u32(B), u32(T), u32(C));
    if (after_du) after_du(du);
    set_.launch("ssm_conv_backward_kernel", channel_items(T, C), dK, dy, u, u32(B), u32(T), u32(C));
  }
  set_.launch("ssm_skip_grad", channel_items(1, C), dd, dy, u, u32(B * T), u32(C));
}

// The prologue both directions share: the scratch reserved for the shape; K (T, C) zero-padded and
// transformed into kernel_spectrum (C, F); u (B*T, C) likewise into spectrum (B*C, F).
void SsmKernels::transform_kernel_and_input(Fft& f, const FloatBuffer& K, const ActBuffer& u, std::size_t B,
                                            std::size_t T, std::size_t C) {
  const std::size_t n = fft_length(T);
  f.reserve(device_->context(), B, C, n);
  device::Queue& q = device_->queue();
  fft_set_.launch("ssm_pack_kernel", C * n, f.time, K, u32(T), u32(C), u32(n));
  f.plan(*device_, FftKind::kRealToComplex, n, C).enqueue(q, f.time.get(), f.kernel_spectrum.get());
  fft_set_.launch("ssm_pack", B * C * n, f.time, u, u32(B), u32(T), u32(C), u32(n));
  f.plan(*device_, FftKind::kRealToComplex, n, B * C).enqueue(q, f.time.get(), f.spectrum.get());
}

void SsmKernels::fft_forward(ActBuffer& y, const ActBuffer& u, const FloatBuffer& K, const FloatBuffer& d,
                             std::size_t B, std::size_t T, std::size_t C) {
  const std::size_t n = fft_length(T), F = n / 2 + 1;
  Fft& f = fft();
  device::Queue& q = device_->queue();
  // K's and u's spectra; their product; back to (B*C, n) reals.
  transform_kernel_and_input(f, K, u, B, T, C);
  fft_set_.launch("ssm_spectrum_product", B * C * F, f.spectrum, f.kernel_spectrum, u32(B * C), u32(C), u32(F),
                  cl_uint{0});
  f.plan(*device_, FftKind::kComplexToReal, n, B * C).enqueue(q, f.spectrum.get(), f.time.get());
  fft_set_.launch("ssm_unpack", B * T * C, y, f.time, u, d, u32(B), u32(T), u32(C), u32(n));
}

void SsmKernels::fft_backward(ActBuffer& du, FloatBuffer& dK, const ActBuffer& dy, const ActBuffer& u,
                              const FloatBuffer& K, const FloatBuffer& d, std::size_t B, std::size_t T, std::size_t C,
                              const std::function<void(ActBuffer&)>& after_du) {
  const std::size_t n = fft_length(T), F = n / 2 + 1;
  Fft& f = fft();
  device::Queue& q = device_->queue();
  // The spectra of K, u and dy (recomputed rather than kept from the forward: the scratch is shared).
  transform_kernel_and_input(f, K, u, B, T, C);
  fft_set_.launch("ssm_pack", B * C * n, f.time, dy, u32(B), u32(T), u32(C), u32(n));
  f.plan(*device_, FftKind::kRealToComplex, n, B * C).enqueue(q, f.time.get(), f.work.get());
  // dK's spectrum, summed over the batch, before dy's spectrum is overwritten by du's.
  fft_set_.launch("ssm_spectrum_correlate", C * F, f.grad_spectrum, f.spectrum, f.work, u32(B), u32(C), u32(F));
  fft_set_.launch("ssm_spectrum_product", B * C * F, f.work, f.kernel_spectrum, u32(B * C), u32(C), u32(F),
                  cl_uint{1});
  f.plan(*device_, FftKind::kComplexToReal, n, B * C).enqueue(q, f.work.get(), f.time.get());
  fft_set_.launch("ssm_unpack", B * T * C, du, f.time, dy, d, u32(B), u32(T), u32(C), u32(n));
  if (after_du) after_du(du);
  f.plan(*device_, FftKind::kComplexToReal, n, C).enqueue(q, f.grad_spectrum.get(), f.time.get());
  fft_set_.launch("ssm_unpack_kernel", T * C, dK, f.time, u32(T), u32(C), u32(n));
}

void SsmKernels::decode(ActBuffer& y, FloatBuffer& state, const ActBuffer& u, const FloatBuffer& c_re,
                        const FloatBuffer& c_im, const FloatBuffer& d, const FloatBuffer& steps, std::size_t B,
                        std::size_t T, std::size_t C, std::size_t N, bool reset) {
  require_act(act_, "ssm_decode", y, u);
  require_count("ssm_decode", B * T * C, y, u);
  require_count("ssm_decode", 2 * B * N * C, state);
  require_count("ssm_decode", N * C, c_re, c_im);
  require_count("ssm_decode", C, d);
  require_count("ssm_decode", 4 * N, steps);
  set_.launch("ssm_decode", channel_items(B, C), y, state, u, c_re, c_im, d, steps, u32(B), u32(T), u32(C), u32(N),
              cl_uint{reset});
}

}  // namespace paxocl::kernels
