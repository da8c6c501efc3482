// The SSM's FFT convolution sizes (kernels_cl/ssm_kernels.h), header-only so that `pax-ocl plan`
// (plan/, no device code) counts the same workspace the kernels allocate.
#pragma once

#include <algorithm>
#include <cstddef>

namespace paxocl::kernels {

// The FFT length for T positions: 2 * (the smallest 2^a 3^b 5^c 7^d >= T), a length clFFT handles
// and at least 2T, so the circular convolution is the causal one.
inline std::size_t ssm_fft_length(std::size_t T) {
  auto smooth = [](std::size_t m) {
    for (std::size_t p : {2, 3, 5, 7}) {
      while (m % p == 0) m /= p;
    }
    return m == 1;
  };
  std::size_t m = std::max<std::size_t>(T, 1);
  while (!smooth(m)) ++m;
  return 2 * m;
}

// Floats of a device's FFT workspace for B sequences of T positions and C channels (n the FFT
// length, F = n/2 + 1 complex bins): the padded inputs (B*C, n), the spectra of u and of dy or the
// products (B*C, F) complex each, of K and of dK (C, F) complex each.
inline std::size_t ssm_fft_scratch_floats(std::size_t B, std::size_t T, std::size_t C) {
  const std::size_t n = ssm_fft_length(T), F = n / 2 + 1;
  return B * C * n + 2 * (2 * B * C * F) + 2 * (2 * C * F);
}

}  // namespace paxocl::kernels
