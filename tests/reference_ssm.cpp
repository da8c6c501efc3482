#include "tests/reference_ssm.h"

#include "tests/reference_common.h"

namespace paxocl::testing::reference {

namespace {
using Complex = std::complex<double>;

struct Modes {
  std::vector<Complex> z, w;  // exp(dt A), (exp(dt A) - 1) / A, per state
  double dt;
};
Modes modes_of(const models::SsmConfig& config) {
  const std::vector<Complex> a = models::ssm_state_matrix(config);
  Modes m{{}, {}, static_cast<double>(config.step_size)};
  for (const Complex& an : a) {
    m.z.push_back(std::exp(m.dt * an));
    m.w.push_back((m.z.back() - 1.0) / an);
  }
  return m;
}
// W exp(l dt A) per state, exp evaluated directly at l.
std::vector<Complex> powers_at(const models::SsmConfig& config, const Modes& m, int l) {
  const std::vector<Complex> a = models::ssm_state_matrix(config);
  std::vector<Complex> p(a.size());
  for (size_t n = 0; n < a.size(); ++n) p[n] = m.w[n] * std::exp(static_cast<double>(l) * m.dt * a[n]);
  return p;
}

void check(const models::SsmConfig& config, const SsmVec& c_re, const SsmVec& c_im, int T, int C) {
  require_dims({T, C, config.state_size});
  require_size(c_re, sz(config.state_size) * sz(C), "c_re (N, C)");
  require_size(c_im, sz(config.state_size) * sz(C), "c_im (N, C)");
}
}  // namespace

SsmVec ssm_kernel(const models::SsmConfig& config, const SsmVec& c_re, const SsmVec& c_im, int T, int C) {
  check(config, c_re, c_im, T, C);
  const Modes m = modes_of(config);
  const size_t N = sz(config.state_size);
  SsmVec K(sz(T) * sz(C), 0.0);
  for (int l = 0; l < T; ++l) {
    const std::vector<Complex> p = powers_at(config, m, l);
    for (size_t c = 0; c < sz(C); ++c) {
      double acc = 0.0;
      for (size_t n = 0; n < N; ++n) acc += (Complex(c_re[n * sz(C) + c], c_im[n * sz(C) + c]) * p[n]).real();
      K[sz(l) * sz(C) + c] = acc;
    }
  }
  return K;
}

SsmVec ssm_forward(const models::SsmConfig& config, const SsmVec& u, const SsmVec& c_re, const SsmVec& c_im,
                   const SsmVec& d, int B, int T, int C) {
  require_dims({B});
  require_size(u, sz(B) * sz(T) * sz(C), "u (B, T, C)");
  require_size(d, sz(C), "d (C)");
  const SsmVec K = ssm_kernel(config, c_re, c_im, T, C);
  SsmVec y(u.size(), 0.0);
  for (size_t b = 0; b < sz(B); ++b)
    for (size_t l = 0; l < sz(T); ++l)
      for (size_t c = 0; c < sz(C); ++c) {
        const size_t at = (b * sz(T) + l) * sz(C) + c;
        double acc = d[c] * u[at];
        for (size_t j = 0; j <= l; ++j) acc += K[j * sz(C) + c] * u[(b * sz(T) + l - j) * sz(C) + c];
        y[at] = acc;
      }
  return y;
}

SsmGrads ssm_backward(const models::SsmConfig& config, const SsmVec& u, const SsmVec& dy, const SsmVec& c_re,
                      const SsmVec& c_im, const SsmVec& d, int B, int T, int C) {
  require_dims({B});
  require_size(u, sz(B) * sz(T) * sz(C), "u (B, T, C)");
  require_size(dy, u.size(), "dy (B, T, C)");
  require_size(d, sz(C), "d (C)");
  const SsmVec K = ssm_kernel(config, c_re, c_im, T, C);
  const size_t N = sz(config.state_size), Cs = sz(C), Ts = sz(T);
  SsmGrads g{SsmVec(u.size(), 0.0), SsmVec(N * Cs, 0.0), SsmVec(N * Cs, 0.0), SsmVec(Cs, 0.0)};
  SsmVec dK(Ts * Cs, 0.0);
  for (size_t b = 0; b < sz(B); ++b)
    for (size_t l = 0; l < Ts; ++l)
      for (size_t c = 0; c < Cs; ++c) {
        const size_t at = (b * Ts + l) * Cs + c;
        double acc = d[c] * dy[at];
        for (size_t j = l; j < Ts; ++j) acc += K[(j - l) * Cs + c] * dy[(b * Ts + j) * Cs + c];
        g.du[at] = acc;
        g.dd[c] += dy[at] * u[at];
        for (size_t j = 0; j <= l; ++j) dK[j * Cs + c] += dy[at] * u[(b * Ts + l - j) * Cs + c];
      }
  const Modes m = modes_of(config);
  for (int l = 0; l < T; ++l) {
    const std::vector<Complex> p = powers_at(config, m, l);
    for (size_t n = 0; n < N; ++n)
      for (size_t c = 0; c < Cs; ++c) {
        g.dc_re[n * Cs + c] += dK[sz(l) * Cs + c] * p[n].real();
        g.dc_im[n * Cs + c] -= dK[sz(l) * Cs + c] * p[n].imag();
      }
  }
  return g;
}

SsmState ssm_zero_state(const models::SsmConfig& config, int B, int C) {
  require_dims({B, C, config.state_size});
  return SsmState(sz(B) * sz(config.state_size) * sz(C));
}

SsmVec ssm_recurrent(const models::SsmConfig& config, const SsmVec& u, const SsmVec& c_re, const SsmVec& c_im,
                     const SsmVec& d, int B, int T, int C, SsmState& state) {
  check(config, c_re, c_im, T, C);
  require_dims({B});
  require_size(u, sz(B) * sz(T) * sz(C), "u (B, T, C)");
  require_size(d, sz(C), "d (C)");
  const size_t N = sz(config.state_size), Cs = sz(C), Ts = sz(T);
  require(state.size() == sz(B) * N * Cs, "state must be (B, N, C)");
  const Modes m = modes_of(config);
  SsmVec y(u.size(), 0.0);
  for (size_t b = 0; b < sz(B); ++b)
    for (size_t t = 0; t < Ts; ++t)
      for (size_t c = 0; c < Cs; ++c) {
        const size_t at = (b * Ts + t) * Cs + c;
        double acc = d[c] * u[at];
        for (size_t n = 0; n < N; ++n) {
          Complex& x = state[(b * N + n) * Cs + c];
          x = m.z[n] * x + m.w[n] * u[at];
          acc += (Complex(c_re[n * Cs + c], c_im[n * Cs + c]) * x).real();
        }
        y[at] = acc;
      }
  return y;
}

}  // namespace paxocl::testing::reference
