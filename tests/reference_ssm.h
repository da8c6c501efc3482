// The float64 reference of praxis's S4D state-space layer (praxis/layers/ssm.py SSM; pax-ocl's
// models/layers/ssm.h): plain loops in double, direct convolution (no FFT), for the layer's tests
// and for reference models that contain SSM layers. Shapes: u, y, dy, du (B, T, C) row-major;
// c_re, c_im (N, C) with N = config.state_size; d (C); state (B, N, C) complex. A comes from
// models::ssm_state_matrix(config) and dt = config.step_size (as a float, then widened).
// Bad arguments throw std::invalid_argument ("reference: ...").
#pragma once

#include <complex>
#include <vector>

#include "models/ssm_config.h"

namespace paxocl::testing::reference {

using SsmVec = std::vector<double>;
using SsmState = std::vector<std::complex<double>>;  // (B, N, C)

// K (T, C): K[l, c] = Re sum_n C[n, c] (exp(dt A) - 1) / A exp(l dt A).
SsmVec ssm_kernel(const models::SsmConfig& config, const SsmVec& c_re, const SsmVec& c_im, int T, int C);

// y (B, T, C) = causal_conv(K, u) + D u: y[b, l, c] = sum_{j <= l} K[j, c] u[b, l - j, c] + d[c] u[b, l, c].
SsmVec ssm_forward(const models::SsmConfig& config, const SsmVec& u, const SsmVec& c_re, const SsmVec& c_im,
                   const SsmVec& d, int B, int T, int C);

// The gradients of sum(dy * y) (not accumulated: fresh vectors).
struct SsmGrads {
  SsmVec du;     // (B, T, C)
  SsmVec dc_re;  // (N, C)
  SsmVec dc_im;  // (N, C)
  SsmVec dd;     // (C)
};
SsmGrads ssm_backward(const models::SsmConfig& config, const SsmVec& u, const SsmVec& dy, const SsmVec& c_re,
                      const SsmVec& c_im, const SsmVec& d, int B, int T, int C);

// The zero state for B sequences.
SsmState ssm_zero_state(const models::SsmConfig& config, int B, int C);
// The recurrent form over T tokens per sequence, continuing `state` (updated):
// x_t = exp(dt A) x_{t-1} + (exp(dt A) - 1) / A u_t,  y_t = Re sum_n C[n] x_t[n] + d u_t.
SsmVec ssm_recurrent(const models::SsmConfig& config, const SsmVec& u, const SsmVec& c_re, const SsmVec& c_im,
                     const SsmVec& d, int B, int T, int C, SsmState& state);

}  // namespace paxocl::testing::reference
