// SsmKernels: the launchers of kernels_cl/ssm.cl (the S4D state-space layer, models/layers/ssm.h;
// ssm_cpu.cl its CPU twin) and its FFT convolution through clFFT (kernels_cl/clfft.h, ssm_fft.cl).
// One per device and activation dtype, in the KernelLibrary; everything library-wide (clFFT's state,
// baked plans, the FFT scratch, the per-device self-check) lives here, not in the layers.
//
// Shapes: u, y, dy, du (B*T, C) rows b-major, in the activation dtype; K, dK (T, C) float;
// powers (>= T, N) complex float, powers[l, n] = W z^l with W = (exp(dt A) - 1) / A, z = exp(dt A);
// steps (N) float4 (Re z, Im z, Re W, Im W); c_re, c_im, dc_re, dc_im (N, C) float; d, dd (C) float;
// state (B, N, C) complex float. Gradients of parameters (dc_re, dc_im, dd) accumulate (+=).
//
// The FFT convolution zero-pads each (sequence, channel) column to n = 2 * (the smallest 7-smooth
// number >= T) points (a length clFFT handles, >= 2T so the circular convolution is the causal one),
// multiplies the real FFTs' spectra and transforms back. The first FFT request on a device runs a
// self-check (a small convolution against the direct kernel); if it fails, or clFFT cannot make a
// plan, one warning is logged and resolve() answers kDirect from then on. The log names the
// convolution a device runs, and why, the first time resolve() picks it there.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "device/typed_buffer.h"
#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

// kAuto is a request only (SSM_CONVOLUTION=auto): resolve() answers kFft or kDirect.
enum class SsmConvolution { kFft, kDirect, kAuto };
// "auto", "fft" or "direct" (SSM_CONVOLUTION, validated by SsmConfig).
SsmConvolution ssm_convolution_from_name(const std::string& name);

// The longest sequence SSM_CONVOLUTION=auto convolves directly on the CPU twin (ssm_cpu.cl): on a
// 2-core Xeon (AVX-512, PoCL 3.1; B 8, C 256; docs/benchmarks.md) the direct forward + backward took
// 6.1 ms against clFFT's 27.8 at T = 128, 44.5 against 51.4 at 256 and 161 against 79 at 512.
// Both scale with B x C, so the crossover is a sequence length.
inline constexpr std::size_t kSsmCpuDirectMaxPositions = 256;
// Whether a convolution of T positions asks for clFFT (which it then runs where clFFT passes its
// self-check): fft always, direct never, auto unless the kernels are the CPU twin and
// T <= kSsmCpuDirectMaxPositions (the portable kernels on GPUs: clFFT, unmeasured against them).
bool ssm_fft_requested(SsmConvolution requested, KernelVariant variant, std::size_t T);
// The same for SSM_CONVOLUTION=`convolution` on `device`'s kernel set, for plans (plan::LayoutSpec::ssm_fft).
bool ssm_fft_requested(const std::string& convolution, const device::DeviceInfo& device, std::size_t T);

class SsmKernels {
 public:
  using FloatBuffer = device::Buffer<float>;
  using ActBuffer = device::TypedBuffer;

  SsmKernels(device::ProgramCache& cache, device::Device& device, device::DType act);
  ~SsmKernels();
  SsmKernels(const SsmKernels&) = delete;
  SsmKernels& operator=(const SsmKernels&) = delete;

  // K (T, C) = Re sum_n (c_re + i c_im)[n, c] powers[l, n]   (overwritten)
  void kernel(FloatBuffer& K, const FloatBuffer& powers, const FloatBuffer& c_re, const FloatBuffer& c_im,
              std::size_t T, std::size_t C, std::size_t N);
  // dc_re[n, c] += sum_l dK[l, c] Re powers[l, n];  dc_im[n, c] -= sum_l dK[l, c] Im powers[l, n]
  void kernel_grad(FloatBuffer& dc_re, FloatBuffer& dc_im, const FloatBuffer& dK, const FloatBuffer& powers,
                   std::size_t T, std::size_t C, std::size_t N);

  // How a convolution of this shape will run: kDirect where ssm_fft_requested says no, else kFft if
  // clFFT passed its self-check on this device and has its plans for the shape (made and baked
  // here), else kDirect (after one warning). Blocks on the device the first time (the self-check).
  SsmConvolution resolve(SsmConvolution requested, std::size_t B, std::size_t T, std::size_t C);
  // y (B*T, C) = causal_conv(K, u) + d u   (`method` from resolve())
  void conv_forward(SsmConvolution method, ActBuffer& y, const ActBuffer& u, const FloatBuffer& K,
                    const FloatBuffer& d, std::size_t B, std::size_t T, std::size_t C);
  // du (B*T, C) = corr(dy, K) + d dy, i.e. du[b, l] = sum_{j >= l} K[j - l] dy[b, j] + d dy[b, l];
  // then `after_du(du)` if given (du is enqueued); then dK (T, C) = sum_b corr(u, dy)
  // (dK[j] = sum_b sum_l dy[b, l] u[b, l - j], overwritten) and dd (C) += sum_rows dy u.
  void conv_backward(SsmConvolution method, ActBuffer& du, FloatBuffer& dK, FloatBuffer& dd, const ActBuffer& dy,
                     const ActBuffer& u, const FloatBuffer& K, const FloatBuffer& d, std::size_t B, std::size_t T,
                     std::size_t C, const std::function<void(ActBuffer&)>& after_du = {});

  // The recurrent form over T new tokens per sequence: for each t, x = z x + W u_t (state (B, N, C),
  // zeroed first when `reset`), y_t = Re sum_n C[n] x[n] + d u_t.
  void decode(ActBuffer& y, FloatBuffer& state, const ActBuffer& u, const FloatBuffer& c_re, const FloatBuffer& c_im,
              const FloatBuffer& d, const FloatBuffer& steps, std::size_t B, std::size_t T, std::size_t C,
              std::size_t N, bool reset);

  // The FFT length for T: 2 * (the smallest 2^a 3^b 5^c 7^d >= T).
  static std::size_t fft_length(std::size_t T);
  // Bytes of FFT scratch this device holds now (grown to the largest shape run so far).
  std::size_t fft_scratch_bytes() const;

 private:
  struct Fft;  // clFFT plans and scratch, made on the first FFT request
  Fft& fft();
  bool fft_passes_self_check();
  // `method`, after logging it and `why` the first time this device runs it.
  SsmConvolution announced(SsmConvolution method, const std::string& why) const;
  void transform_kernel_and_input(Fft& f, const FloatBuffer& K, const ActBuffer& u, std::size_t B, std::size_t T,
                                  std::size_t C);
  void fft_forward(ActBuffer& y, const ActBuffer& u, const FloatBuffer& K, const FloatBuffer& d, std::size_t B,
                   std::size_t T, std::size_t C);
  void fft_backward(ActBuffer& du, FloatBuffer& dK, const ActBuffer& dy, const ActBuffer& u, const FloatBuffer& K,
                    const FloatBuffer& d, std::size_t B, std::size_t T, std::size_t C,
                    const std::function<void(ActBuffer&)>& after_du);

  // Work-items of an ssm.cl kernel over `rows` rows of C channels: one per channel, or in the CPU
  // twin one per 16 channels.
  std::size_t channel_items(std::size_t rows, std::size_t C) const;

  device::Device* device_;
  KernelSet set_;      // ssm.cl or its CPU twin: K, dC, the direct convolution, decoding
  KernelSet fft_set_;  // ssm_fft.cl: the FFT convolution's packing and spectrum products
  device::DType act_;
  std::unique_ptr<Fft> fft_;
  std::string fft_unusable_;  // why clFFT is not used here, once the self-check or a plan failed
};

}  // namespace paxocl::kernels
