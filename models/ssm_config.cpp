#include "models/ssm_config.h"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <map>
#include <mutex>
#include <numbers>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/errors.h"

namespace paxocl::models {

namespace {
constexpr int kMaxStateSize = 4096;  // a HiPPO eigen-decomposition is O(N^3); far past any real N
// From this N on the eigen-decomposition takes seconds (N=512: a fraction of one; N=4096:
// minutes), so the log says it is running before it starts.
constexpr int kSlowStateSize = 1024;

bool is_hippo(const std::string& type) { return type == "ss4d-legs" || type == "ss4d-lagt"; }

void validate_state(const SsmConfig& c) {
  if (c.hippo_type != "ss4d-1d" && !is_hippo(c.hippo_type)) {
    throw ConfigError(fmt::format("SSM_HIPPO_TYPE={}: must be ss4d-1d, ss4d-legs or ss4d-lagt", c.hippo_type));
  }
  const int least = c.hippo_type == "ss4d-1d" ? 2 : 1;
  if (c.state_size < least || c.state_size > kMaxStateSize) {
    throw ConfigError(fmt::format("SSM_NHEADS={}: must be in [{}, {}]{}", c.state_size, least, kMaxStateSize,
                                  least == 2 ? " for ss4d-1d (its imaginary parts step by pi (N-1)/N, 0 for N=1)" : ""));
  }
}

// praxis make_nplr_hippo + make_dplr_hippo: S = A_hippo + p p^T, whose diagonal is constant -1/2;
// lambda = mean(diag S) + i eigh(-i S), eigh reading the Hermitian part (-i (S - S^T) / 2) as jax's
// symmetrizing eigh does.
std::vector<std::complex<double>> dplr_hippo(int n, bool legs) {
  Eigen::MatrixXd s(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      double a = 0.0, p_i = 0.0, p_j = 0.0;
      if (legs) {  // A = -(tril(sqrt(1+2i) sqrt(1+2j)) - diag(i)), p = sqrt(i + 1/2)
        a = j <= i ? -std::sqrt((1.0 + 2 * i) * (1.0 + 2 * j)) : 0.0;
        if (i == j) a += i;
        p_i = std::sqrt(i + 0.5), p_j = std::sqrt(j + 0.5);
      } else {  // LagT: A = -tril(ones), p = sqrt(1/2)
        a = j <= i ? -1.0 : 0.0;
        p_i = p_j = std::sqrt(0.5);
      }
      s(i, j) = a + p_i * p_j;
    }
  }
  const double lambda_real = s.diagonal().mean();
  const Eigen::MatrixXcd hermitian = std::complex<double>(0.0, -0.5) * (s - s.transpose()).cast<std::complex<double>>();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> solver(hermitian, Eigen::EigenvaluesOnly);
  if (solver.info() != Eigen::Success) {
    throw ConfigError(fmt::format("SSM_HIPPO_TYPE={}: the eigen-decomposition of the N={} HiPPO matrix did not "
                                  "converge",
                                  legs ? "ss4d-legs" : "ss4d-lagt", n));
  }
  std::vector<std::complex<double>> lambda(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {  // eigenvalues come ascending
    const double imag = solver.eigenvalues()(k) * (legs ? 1.0 : static_cast<double>(n));  // LagT is scaled by N
    lambda[static_cast<std::size_t>(k)] = {lambda_real, imag};
  }
  return lambda;
}
}  // namespace

void SsmConfig::validate(int max_seq_len) const {
  validate_state(*this);
  if (!(step_size > 0.0f) || !std::isfinite(step_size)) {
    throw ConfigError(fmt::format("SSM_STEP_SIZE={}: must be a positive number (the discretization step dt)",
                                  step_size));
  }
  if (l_max < 0) throw ConfigError(fmt::format("SSM_L_MAX={}: must be >= 0 (0: MAX_SEQ_LEN)", l_max));
  if (l_max != 0 && l_max < max_seq_len) {
    throw ConfigError(fmt::format("SSM_L_MAX={} is below MAX_SEQ_LEN={}: the convolution kernel must cover the "
                                  "longest sequence (0 sets it to MAX_SEQ_LEN)",
                                  l_max, max_seq_len));
  }
  if (convolution != "auto" && convolution != "fft" && convolution != "direct") {
    throw ConfigError(fmt::format("SSM_CONVOLUTION={}: must be auto, fft or direct", convolution));
  }
}

std::vector<std::complex<double>> ssm_state_matrix(const SsmConfig& config) {
  validate_state(config);
  const int n = config.state_size;
  if (is_hippo(config.hippo_type)) {
    // Once per (type, N) in the process: every SSM layer on every device shares the same A.
    static std::mutex mutex;
    static std::map<std::pair<std::string, int>, std::vector<std::complex<double>>> computed;
    const std::lock_guard lock(mutex);  // a second caller waits for the first's result
    auto it = computed.find({config.hippo_type, n});
    if (it == computed.end()) {
      spdlog::log(n >= kSlowStateSize ? spdlog::level::info : spdlog::level::debug,
                  "SSM_HIPPO_TYPE={}: eigen-decomposition of the N={} HiPPO matrix (O(N^3), on the host)",
                  config.hippo_type, n);
      it = computed.emplace(std::pair{config.hippo_type, n}, dplr_hippo(n, config.hippo_type == "ss4d-legs")).first;
    }
    return it->second;
  }
  // jnp.arange(-pi/2 (N-1), pi/(2N) (N-1)^2, pi/N (N-1)): (stop - start) / step = N - 1/2, so N values.
  const double pi = std::numbers::pi;
  std::vector<std::complex<double>> a(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    a[static_cast<std::size_t>(k)] = {-0.5, -pi / 2.0 * (n - 1) + k * pi / n * (n - 1)};
  }
  return a;
}

}  // namespace paxocl::models
