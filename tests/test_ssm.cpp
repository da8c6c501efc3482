// The S4D state-space layer (models/layers/ssm.h, kernels_cl/ssm.cl, the clFFT convolution) against
// the float64 reference (tests/reference_ssm.h), and the reference itself against finite
// differences and praxis's state matrices. The layer runs for every activation dtype, both
// convolutions (clFFT and direct), the 1-D and LegS state matrices, sequence lengths that are and
// are not powers of two (1, 7, 100, 128, 300), one sequence and three, C = 19 channels.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kernels_cl/ssm_fft_shape.h"
#include "models/layers/ssm.h"
#include "tests/device_fixture.h"
#include "tests/reference_ssm.h"

namespace paxocl::testing {
namespace {

using device::DType;
using kernels::SsmConvolution;
using models::SsmConfig;
namespace ref = reference;

SsmConfig config_of(const std::string& hippo, int N, const std::string& convolution = "fft") {
  SsmConfig c;
  c.state_size = N;
  c.hippo_type = hippo;
  c.convolution = convolution;
  return c;
}

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// |got - want| <= rel (max |want| + |want|): errors of float sums scale with the vector's size.
Tol scaled(const std::vector<double>& want, double rel) { return Tol{rel * max_abs(want), rel}; }

// ---- The state matrix against praxis (jax) ----

// Golden values: praxis's make_dplr_hippo (praxis/layers/ssm.py; its make_hippo / make_nplr_hippo /
// make_dplr_hippo copied verbatim) run with jax 0.10.2, jax_enable_x64, N = 4, printed with %.17g;
// the 1-D matrix's imaginary parts are praxis's jnp.arange for nh = 5.
TEST(SsmStateMatrix, LegsAndLagtMatchPraxisEigenvalues) {
  const std::vector<std::complex<double>> legs = {{-0.50000000000000022, -4.603293007066851},
                                                  {-0.50000000000000022, -0.55650111508374311},
                                                  {-0.50000000000000022, 0.556501115083743},
                                                  {-0.50000000000000022, 4.6032930070668501}};
  const std::vector<std::complex<double>> lagt = {{-0.49999999999999989, -4.8284271247461907},
                                                  {-0.49999999999999989, -0.82842712474618962},
                                                  {-0.49999999999999989, 0.82842712474618896},
                                                  {-0.49999999999999989, 4.8284271247461916}};
  for (const auto& [type, want] : {std::pair{"ss4d-legs", legs}, std::pair{"ss4d-lagt", lagt}}) {
    const auto got = models::ssm_state_matrix(config_of(type, 4));
    ASSERT_EQ(got.size(), want.size()) << type;
    for (std::size_t n = 0; n < want.size(); ++n) {
      EXPECT_NEAR(got[n].real(), want[n].real(), 1e-12) << type << " A[" << n << "]";
      EXPECT_NEAR(got[n].imag(), want[n].imag(), 1e-12) << type << " A[" << n << "]";
    }
  }
}

TEST(SsmStateMatrix, OneDimensionalMatchesPraxisArange) {
  const std::vector<double> want_imag = {-6.2831853071795862, -3.7699111843077517, -1.2566370614359172,
                                         1.2566370614359172, 3.7699111843077517};
  const auto got = models::ssm_state_matrix(config_of("ss4d-1d", 5));
  ASSERT_EQ(got.size(), want_imag.size());
  for (std::size_t n = 0; n < got.size(); ++n) {
    EXPECT_EQ(got[n].real(), -0.5);
    EXPECT_NEAR(got[n].imag(), want_imag[n], 1e-14) << "A[" << n << "]";
  }
  EXPECT_EQ(models::ssm_state_matrix(config_of("ss4d-1d", 64)).size(), 64u);
}

TEST(SsmConfigValidate, NamesTheBadField) {
  auto message = [](const SsmConfig& c, int max_seq_len) {
    return error_message<ConfigError>([&] { c.validate(max_seq_len); });
  };
  SsmConfig ok;
  EXPECT_EQ(message(ok, 128), "(no error)");
  SsmConfig c = ok;
  c.state_size = 1;
  EXPECT_NE(message(c, 128).find("SSM_NHEADS=1"), std::string::npos) << message(c, 128);
  c.hippo_type = "ss4d-legs";  // one state is a valid HiPPO matrix
  EXPECT_EQ(message(c, 128), "(no error)");
  c = ok;
  c.step_size = 0.0f;
  EXPECT_NE(message(c, 128).find("SSM_STEP_SIZE=0"), std::string::npos) << message(c, 128);
  c.step_size = std::nanf("");
  EXPECT_NE(message(c, 128).find("SSM_STEP_SIZE"), std::string::npos) << message(c, 128);
  c = ok;
  c.hippo_type = "legs";
  EXPECT_NE(message(c, 128).find("SSM_HIPPO_TYPE=legs"), std::string::npos) << message(c, 128);
  c = ok;
  c.l_max = 64;
  EXPECT_EQ(message(c, 128).rfind("SSM_L_MAX=64 is below MAX_SEQ_LEN=128: ", 0), 0u) << message(c, 128);
  c.l_max = -1;
  EXPECT_NE(message(c, 128).find("SSM_L_MAX=-1"), std::string::npos) << message(c, 128);
  c.l_max = 128;
  EXPECT_EQ(message(c, 128), "(no error)");
  c = ok;
  c.convolution = "winograd";
  EXPECT_NE(message(c, 128).find("SSM_CONVOLUTION=winograd"), std::string::npos) << message(c, 128);
  EXPECT_NE(error_message<ConfigError>([] { models::ssm_state_matrix(config_of("ss4d-1d", 1)); }).find("SSM_NHEADS"),
            std::string::npos);
}

// ---- The reference against finite differences and its own recurrent form ----

TEST(SsmReference, GradientsMatchFiniteDifferences) {
  const int B = 2, T = 6, C = 3, N = 3;
  for (const char* hippo : {"ss4d-1d", "ss4d-legs"}) {
    SCOPED_TRACE(hippo);
    SsmConfig config = config_of(hippo, N);
    config.step_size = 0.1f;  // larger steps: K's terms are not all near dt
    auto u = DeviceTest::random(B * T * C, 1), c_re = DeviceTest::random(N * C, 2, std::sqrt(0.5)),
         c_im = DeviceTest::random(N * C, 3, std::sqrt(0.5)), d = DeviceTest::random(C, 4),
         dy = DeviceTest::random(B * T * C, 5);
    // L = sum(dy * y): its gradient is the backward of dy.
    auto loss = [&] {
      const auto y = ref::ssm_forward(config, u, c_re, c_im, d, B, T, C);
      double l = 0.0;
      for (std::size_t i = 0; i < y.size(); ++i) l += dy[i] * y[i];
      return l;
    };
    const ref::SsmGrads g = ref::ssm_backward(config, u, dy, c_re, c_im, d, B, T, C);
    const double h = 1e-6;
    auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* what) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i];
        x[i] = keep + h;
        const double up = loss();
        x[i] = keep - h;
        const double down = loss();
        x[i] = keep;
        EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-7 * (1 + std::abs(grad[i]))) << what << "[" << i << "]";
      }
    };
    check(u, g.du, "du");
    check(c_re, g.dc_re, "dc_re");
    check(c_im, g.dc_im, "dc_im");
    check(d, g.dd, "dd");
  }
}

TEST(SsmReference, RecurrentFormEqualsConvolution) {
  const int B = 2, T = 40, C = 3;
  for (const char* hippo : {"ss4d-1d", "ss4d-legs", "ss4d-lagt"}) {
    const SsmConfig config = config_of(hippo, 5);
    const auto u = DeviceTest::random(B * T * C, 6), c_re = DeviceTest::random(5 * C, 7),
               c_im = DeviceTest::random(5 * C, 8), d = DeviceTest::random(C, 9);
    ref::SsmState state = ref::ssm_zero_state(config, B, C);
    expect_close(ref::ssm_recurrent(config, u, c_re, c_im, d, B, T, C, state),
                 ref::ssm_forward(config, u, c_re, c_im, d, B, T, C), 1e-12, 1e-12, hippo);
  }
}

// SSM_CONVOLUTION=auto convolves directly only on the CPU set, up to kSsmCpuDirectMaxPositions.
TEST(SsmConvolutionRule, AutoIsDirectOnlyOnTheCpuSetUpToTheCrossover) {
  using kernels::KernelVariant;
  const std::size_t most = kernels::kSsmCpuDirectMaxPositions;
  EXPECT_FALSE(kernels::ssm_fft_requested(SsmConvolution::kAuto, KernelVariant::kCpu, 1));
  EXPECT_FALSE(kernels::ssm_fft_requested(SsmConvolution::kAuto, KernelVariant::kCpu, most));
  EXPECT_TRUE(kernels::ssm_fft_requested(SsmConvolution::kAuto, KernelVariant::kCpu, most + 1));
  EXPECT_TRUE(kernels::ssm_fft_requested(SsmConvolution::kAuto, KernelVariant::kGpu, 8));
  EXPECT_TRUE(kernels::ssm_fft_requested(SsmConvolution::kAuto, KernelVariant::kPortable, 8));
  EXPECT_TRUE(kernels::ssm_fft_requested(SsmConvolution::kFft, KernelVariant::kCpu, 8));
  EXPECT_FALSE(kernels::ssm_fft_requested(SsmConvolution::kDirect, KernelVariant::kGpu, 100000));
  EXPECT_EQ(kernels::ssm_convolution_from_name("auto"), SsmConvolution::kAuto);
  EXPECT_EQ(kernels::ssm_convolution_from_name("fft"), SsmConvolution::kFft);
  EXPECT_EQ(kernels::ssm_convolution_from_name("direct"), SsmConvolution::kDirect);
}

// ---- The layer on the device ----

struct LayerCase {
  std::string hippo, convolution;
};

class SsmLayerTest : public DeviceTest, public ::testing::WithParamInterface<DType> {
 public:
  static constexpr int kC = 19, kN = 6, kMaxBatch = 3, kMaxSeq = 300;
  DType act_dtype() const override { return GetParam(); }
  std::vector<double> in(std::vector<double> values) const { return rounded(GetParam(), std::move(values)); }
  Tol stored(Tol f32) const { return testing::stored(GetParam(), f32); }

  // C and D as the layer reads them, gradients preset to `grad0` (the layer must add to them).
  struct Parameters {
    std::vector<double> c_re, c_im, d;
    models::Param p_re, p_im, p_d;
  };
  Parameters parameters(std::uint64_t seed, double grad0) {
    Parameters p{random(kN * kC, seed, std::sqrt(0.5)), random(kN * kC, seed + 1, std::sqrt(0.5)),
                 random(kC, seed + 2), {}, {}, {}};
    auto param = [&](const std::vector<double>& v) {
      return models::Param{upload(v), upload(std::vector<double>(v.size(), grad0)), {}};
    };
    p.p_re = param(p.c_re), p.p_im = param(p.c_im), p.p_d = param(p.d);
    return p;
  }
  models::Ssm layer(const SsmConfig& config, Parameters& p, std::size_t max_batch = kMaxBatch,
                    std::size_t max_seq = kMaxSeq) {
    return models::Ssm(*device_, GetParam(), p.p_re, p.p_im, p.p_d, config, kC, max_batch, max_seq, "ssm");
  }
  models::LayerContext context(std::size_t B, std::size_t T) { return models::LayerContext{*device_, *kernels_, *gemm_, B, T}; }
};

TEST_P(SsmLayerTest, ForwardAndGradientsMatchTheReference) {
  const double grad0 = 0.25;
  // auto: direct up to T = 256 on the CPU set, clFFT beyond it and on the other sets.
  for (const LayerCase& lc : {LayerCase{"ss4d-1d", "fft"}, LayerCase{"ss4d-1d", "direct"}, LayerCase{"ss4d-1d", "auto"},
                              LayerCase{"ss4d-legs", "fft"}, LayerCase{"ss4d-legs", "direct"}}) {
    const SsmConfig config = config_of(lc.hippo, kN, lc.convolution);
    for (int B : {1, 3}) {
      for (int T : {1, 7, 100, 128, 300}) {
        SCOPED_TRACE(fmt::format("{} {} B={} T={}", lc.hippo, lc.convolution, B, T));
        Parameters p = parameters(10 + static_cast<std::uint64_t>(T), grad0);
        models::Ssm ssm = layer(config, p);
        const auto u = in(random(B * T * kC, 20 + static_cast<std::uint64_t>(T)));
        const auto dy = in(random(B * T * kC, 30 + static_cast<std::uint64_t>(T)));
        auto u_b = upload(GetParam(), u), dy_b = upload(GetParam(), dy);
        models::LayerContext ctx = context(B, T);
        const auto& y = ssm.forward(ctx, u_b);
        const auto want_y = ref::ssm_forward(config, u, p.c_re, p.c_im, p.d, B, T, kC);
        expect_close(download(y, want_y.size()), want_y, stored(scaled(want_y, 2e-6)), "y");

        // du is complete when after_dx sees it (the weight gradients may still be running).
        const ref::SsmGrads g = ref::ssm_backward(config, u, dy, p.c_re, p.c_im, p.d, B, T, kC);
        const device::TypedBuffer* handed = nullptr;
        const auto& du = ssm.backward(ctx, dy_b, [&](device::TypedBuffer& dx) {
          handed = &dx;
          expect_close(download(dx, g.du.size()), g.du, stored(scaled(g.du, 2e-6)), "du at after_dx");
        });
        EXPECT_EQ(handed, &du);
        expect_close(download(du, g.du.size()), g.du, stored(scaled(g.du, 2e-6)), "du");
        auto plus_grad0 = [&](std::vector<double> v) {  // gradients accumulate
          for (double& x : v) x += grad0;
          return v;
        };
        const auto dc_re = plus_grad0(g.dc_re), dc_im = plus_grad0(g.dc_im), dd = plus_grad0(g.dd);
        expect_close(download(p.p_re.grad, dc_re.size()), dc_re, scaled(dc_re, 1e-5), "dc_re");
        expect_close(download(p.p_im.grad, dc_im.size()), dc_im, scaled(dc_im, 1e-5), "dc_im");
        expect_close(download(p.p_d.grad, dd.size()), dd, scaled(dd, 1e-5), "dd");
      }
    }
  }
}

// Decoding runs the recurrent form; it must give the convolutional form's outputs token for token:
// all tokens in one call, and a prompt followed by one token at a time.
TEST_P(SsmLayerTest, DecodingEqualsTheConvolutionTokenForToken) {
  const int B = 3, T = 50, prompt = 20;
  for (const char* hippo : {"ss4d-1d", "ss4d-legs"}) {
    SCOPED_TRACE(hippo);
    const SsmConfig config = config_of(hippo, kN);
    Parameters p = parameters(40, 0.0);
    models::Ssm ssm = layer(config, p, B, T);
    const auto u = in(random(B * T * kC, 41));
    const auto want = ref::ssm_forward(config, u, p.c_re, p.c_im, p.d, B, T, kC);
    ref::SsmState state = ref::ssm_zero_state(config, B, kC);
    expect_close(ref::ssm_recurrent(config, u, p.c_re, p.c_im, p.d, B, T, kC, state), want, 1e-9, 1e-9,
                 "reference recurrent");
    const Tol tol = stored(scaled(want, 2e-6));

    auto u_b = upload(GetParam(), u);
    models::LayerContext ctx = context(B, T);
    const auto conv = download(ssm.forward(ctx, u_b), want.size());
    expect_close(conv, want, tol, "convolution");
    expect_close(download(ssm.forward(ctx, u_b, 0), want.size()), want, tol, "recurrent, all tokens at once");

    // Rows of token range [t0, t0 + n) of every sequence, (B, n, C).
    auto tokens = [&](const std::vector<double>& all, int t0, int n) {
      std::vector<double> part;
      for (int b = 0; b < B; ++b) {
        const auto first = all.begin() + (static_cast<std::ptrdiff_t>(b) * T + t0) * kC;
        part.insert(part.end(), first, first + static_cast<std::ptrdiff_t>(n) * kC);
      }
      return part;
    };
    auto decode = [&](int t0, int n) {
      auto chunk = upload(GetParam(), tokens(u, t0, n));
      models::LayerContext step = context(B, static_cast<std::size_t>(n));
      const auto got = download(ssm.forward(step, chunk, static_cast<std::size_t>(t0)), static_cast<std::size_t>(B * n * kC));
      expect_close(got, tokens(want, t0, n), tol, fmt::format("tokens [{}, {})", t0, t0 + n).c_str());
      // Two stored results: each within one rounding of the same float value, so two apart at most.
      expect_close(got, tokens(conv, t0, n), Tol{2 * tol.atol, 2 * tol.rtol}, fmt::format("tokens [{}, {}) against the layer's convolution", t0, t0 + n).c_str());
    };
    decode(0, prompt);  // position 0 starts afresh, whatever the state held
    for (int t = prompt; t < T; ++t) decode(t, 1);

    // A position that does not continue the state, and a backward after decoding, are refused.
    models::LayerContext one = context(B, 1);
    auto chunk = upload(GetParam(), tokens(u, 0, 1));
    EXPECT_NE(error_message<DataError>([&] { ssm.forward(one, chunk, 7); }).find("position 7"), std::string::npos);
    EXPECT_NE(error_message<DataError>([&] { ssm.backward(one, chunk); }).find("backward"), std::string::npos);
  }
}

TEST_P(SsmLayerTest, RefusesShapesBeyondItsBuffersAndShortParameters) {
  Parameters p = parameters(50, 0.0);
  models::Ssm ssm = layer(config_of("ss4d-1d", kN), p, 2, 16);
  auto u_b = upload(GetParam(), std::vector<double>(3 * 17 * kC, 0.0));
  models::LayerContext too_long = context(1, 17), too_wide = context(3, 4);
  EXPECT_NE(error_message<DataError>([&] { ssm.forward(too_long, u_b); }).find("T=17"), std::string::npos);
  EXPECT_NE(error_message<DataError>([&] { ssm.forward(too_wide, u_b, 0); }).find("B=3"), std::string::npos);
  Parameters short_d = parameters(51, 0.0);
  short_d.p_d.value = upload(std::vector<double>(kC - 1, 1.0));
  EXPECT_NE(error_message<ConfigError>([&] { layer(config_of("ss4d-1d", kN), short_d); }).find("D holds 18"),
            std::string::npos);
  SsmConfig bad = config_of("ss4d-1d", kN);
  bad.l_max = 8;
  EXPECT_NE(error_message<ConfigError>([&] { layer(bad, p, 2, 16); }).find("SSM_L_MAX=8 is below MAX_SEQ_LEN=16"),
            std::string::npos);
}

// clFFT passes its self-check on the test devices (else the fft cases above ran direct), and the
// FFT lengths are twice a 7-smooth number >= T.
TEST_P(SsmLayerTest, ClfftIsUsedWhereItWorks) {
  EXPECT_EQ(kernels_->ssm.resolve(SsmConvolution::kFft, 3, 300, kC), SsmConvolution::kFft);
  EXPECT_EQ(kernels_->ssm.resolve(SsmConvolution::kDirect, 3, 300, kC), SsmConvolution::kDirect);
  const bool cpu_set = kernels::requested_variant(device_->info()) == kernels::KernelVariant::kCpu;
  EXPECT_EQ(kernels_->ssm.resolve(SsmConvolution::kAuto, 3, 128, kC), cpu_set ? SsmConvolution::kDirect : SsmConvolution::kFft);
  EXPECT_EQ(kernels_->ssm.resolve(SsmConvolution::kAuto, 3, 300, kC), SsmConvolution::kFft);
  EXPECT_EQ(kernels::SsmKernels::fft_length(1), 2u);
  EXPECT_EQ(kernels::SsmKernels::fft_length(7), 14u);
  EXPECT_EQ(kernels::SsmKernels::fft_length(11), 24u);
  EXPECT_EQ(kernels::SsmKernels::fft_length(128), 256u);
  EXPECT_EQ(kernels::SsmKernels::fft_length(300), 600u);
  // The FFT workspace after the largest shape these tests run is what `pax-ocl plan` counts for it.
  SsmConfig config;
  config.state_size = kN;
  Parameters p = parameters(11, 0.0);
  models::Ssm ssm = layer(config, p);
  models::LayerContext ctx = context(kMaxBatch, kMaxSeq);
  const auto u = upload(GetParam(), random(kMaxBatch * kMaxSeq * kC, 12));
  ssm.backward(ctx, ssm.forward(ctx, u));
  device_->queue().finish();
  EXPECT_EQ(kernels_->ssm.fft_scratch_bytes(), kernels::ssm_fft_scratch_floats(kMaxBatch, kMaxSeq, kC) * sizeof(float));
}

INSTANTIATE_TEST_SUITE_P(DTypes, SsmLayerTest, ::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
                         [](const ::testing::TestParamInfo<DType>& param_info) {
                           return std::string(device::dtype_name(param_info.param));
                         });

}  // namespace
}  // namespace paxocl::testing
