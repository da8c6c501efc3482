// SsmConfig: the hyper-parameters of praxis's S4D state-space layer (praxis/layers/ssm.py, class
// SSM: diagonal A, zero-order hold, B = 1), and the frozen state matrix A they define. Host only.
// Per channel c and state n: K[l, c] = Re sum_n C[n, c] (exp(dt A[n]) - 1) / A[n] exp(l dt A[n]),
// y = causal_conv(K, u) + D u (models/layers/ssm.h runs it).
#pragma once

#include <complex>
#include <string>
#include <vector>

namespace paxocl::models {

struct SsmConfig {
  int state_size = 64;                 // SSM_NHEADS (N), >= 2 for ss4d-1d
  float step_size = 0.01f;             // SSM_STEP_SIZE (dt) > 0
  std::string hippo_type = "ss4d-1d";  // SSM_HIPPO_TYPE: ss4d-1d | ss4d-legs | ss4d-lagt
  int l_max = 0;                       // SSM_L_MAX: longest sequence the kernel covers (0: MAX_SEQ_LEN)
  // SSM_CONVOLUTION: auto (the direct kernels on CPU devices up to 256 positions, else clFFT;
  // kernels_cl/ssm_kernels.h) | fft (clFFT; direct if clFFT fails its self-check) | direct
  std::string convolution = "auto";
  // ConfigError naming the first bad field and the rule ("SSM_L_MAX=64 is below MAX_SEQ_LEN=128: ...").
  void validate(int max_seq_len) const;
};

// A: the N diagonal values of the frozen state matrix, in double (the same for every channel, as
// praxis tiles it). ss4d-1d: -0.5 + i (-pi/2 (N-1) + k pi (N-1)/N), k < N (praxis's jnp.arange);
// ss4d-legs / ss4d-lagt: make_dplr_hippo's mean(diag S) + i eigh(-i S) ascending (x N for LagT),
// S = the HiPPO matrix plus its rank-one normalising term. Throws ConfigError as validate does for
// the fields it reads (state_size, hippo_type). A HiPPO's decomposition (O(N^3)) runs once per
// (type, N) in the process, announced in the log when N is large enough to take seconds.
std::vector<std::complex<double>> ssm_state_matrix(const SsmConfig& config);

}  // namespace paxocl::models
