// Every GEMM implementation (pax-ocl's CPU and GPU variants, CLBlast, the tensor-core GEMM and the
// auto-tuned choice) against a float64 reference on awkward shapes: 1, 7, 33, 1000, sizes that are
// not tile multiples, every transpose, offsets, padded leading dimensions, beta != 0, strided
// batches (of several panels each way). The tensor-core kernel (gemm_mma.cl) runs for real where the probe passes (NVIDIA), and
// everywhere in its emulated build, which replaces only its PTX instructions.
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <optional>
#include <span>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "device/device_fingerprint.h"
#include "kernels_cl/auto_gemm.h"
#include "kernels_cl/blis_gemm.h"
#include "kernels_cl/host_gemm.h"
#include "kernels_cl/onednn_gemm.h"
#include "kernels_cl/direct_gemm.h"
#include "kernels_cl/direct_gemm_tuning.h"
#include "kernels_cl/tensor_core_gemm.h"
#include "tests/device_fixture.h"

namespace paxocl::testing {
namespace {

using kernels::GemmOperand;
using kernels::GemmShape;
using kernels::Transpose;

struct Case {
  std::size_t m, n, k, batch;
  Transpose a, b;
};

class GemmTest : public DeviceTest, public ::testing::WithParamInterface<std::string> {
 public:
  void SetUp() override {
    DeviceTest::SetUp();
    if ((GetParam() == "blis" || GetParam() == "onednn") && !kernels::host_gemm_available(*device_)) {
      GTEST_SKIP() << GetParam() << " runs as a native kernel: this device runs none";
    }
  }
};

// Operand dtypes: A, B, C.
struct DTypes {
  device::DType a = device::DType::kF32, b = device::DType::kF32, c = device::DType::kF32;
  bool tf32 = false;  // float32 A and B rounded to TF32 on the host (what MATMUL_PRECISION=tf32 multiplies)
};

// x rounded to TF32 as cvt.rna.tf32.f32 does: to 10 mantissa bits, ties away from zero.
double tf32_rounded(double x) {
  const float f = static_cast<float>(x);
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & 0xffffe000u;
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

// Operand placement: awkward (odd offsets, leading dimensions and batch strides) or aligned (all
// multiples of 8 elements: 16-byte chunks, the tensor-core GEMM's cp.async path), padded either way.
enum class Layout { kAwkward, kAligned };

// C before the GEMM: random values, or NaN inside the matrices (beta must then be 0, and C never read).
enum class CInit { kRandom, kNaN };

// The epilogue to fuse (Gemm::run_fused, batch 1): a bias per column of C, GELU of the result into
// G, or the result times gelu'(Z) (Z random, in the buffer G would use).
struct Fused {
  bool bias = false, gelu = false, gelu_grad = false;
};

// GELU's tanh form and its derivative in double, straight from the definition (gelu_math.cl
// evaluates them otherwise).
double gelu_reference(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}
double gelu_grad_reference(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi), t = std::tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// beta: -1.5 or 0 by k's parity unless given.
void check(DeviceTest& t, kernels::Gemm& gemm, const Case& c, std::uint64_t seed, DTypes dt = {},
           Layout layout = Layout::kAwkward, std::optional<float> beta_given = std::nullopt, CInit c_init = CInit::kRandom,
           std::optional<Fused> fused = std::nullopt) {
  const GemmShape s{c.a, c.b, c.m, c.n, c.k, c.batch};
  const auto r8 = [](std::size_t x) { return (x + 7) / 8 * 8; };
  const bool al = layout == Layout::kAligned;
  const std::size_t off = al ? 8 : 3;
  const std::size_t a_rows = c.a == Transpose::kNo ? c.m : c.k, a_cols = c.a == Transpose::kNo ? c.k : c.m;
  const std::size_t b_rows = c.b == Transpose::kNo ? c.k : c.n, b_cols = c.b == Transpose::kNo ? c.n : c.k;
  const std::size_t lda = al ? r8(a_cols) + 8 : a_cols + 5, ldb = al ? r8(b_cols) : b_cols + 1, ldc = c.n + 2;
  const std::size_t sa = a_rows * lda + (al ? 8 : 7), sb = b_rows * ldb + (al ? 16 : 1), sc = c.m * ldc + 3;
  // Inputs exactly representable in their dtypes, so the reference multiplies the same numbers.
  auto A = DeviceTest::rounded(dt.a, DeviceTest::random(off + sa * c.batch, seed));
  auto B = DeviceTest::rounded(dt.b, DeviceTest::random(off + sb * c.batch, seed + 1));
  if (dt.tf32) {
    for (double& x : A) x = tf32_rounded(x);
    for (double& x : B) x = tf32_rounded(x);
  }
  auto C = DeviceTest::rounded(dt.c, DeviceTest::random(off + sc * c.batch, seed + 2));
  if (c_init == CInit::kNaN) {
    for (std::size_t bi = 0; bi < c.batch; ++bi)
      for (std::size_t i = 0; i < c.m; ++i)
        for (std::size_t j = 0; j < c.n; ++j) C[off + bi * sc + i * ldc + j] = std::nan("");
  }
  auto ab = t.upload(dt.a, A), bb = t.upload(dt.b, B), cb = t.upload(dt.c, C);
  const float alpha = 0.75f, beta = beta_given.value_or(c.k % 2 ? 0.0f : -1.5f);  // both beta paths
  const GemmOperand ao{ab.get(), off, lda, sa, dt.a}, bo{bb.get(), off, ldb, sb, dt.b}, co{cb.get(), off, ldc, sc, dt.c};
  // The epilogue's operands, at offsets of their own and G with a leading dimension unlike C's (as
  // even as C's in the aligned layout, for the tensor-core GEMM's pair stores; odd otherwise).
  const std::size_t bias_off = 5, g_off = 2, ldg = c.n + (al ? 4 : 3);
  auto bias = DeviceTest::rounded(dt.c, DeviceTest::random(bias_off + c.n + 1, seed + 3));
  std::vector<double> G(g_off + c.m * ldg + 1, 0.25);
  if (fused && fused->gelu_grad) G = DeviceTest::rounded(dt.c, DeviceTest::random(G.size(), seed + 4));  // Z
  const std::vector<double> Z = G;
  auto biasb = t.upload(dt.c, bias), gb = t.upload(dt.c, G);
  if (fused) {
    kernels::GemmEpilogue e;
    if (fused->bias) e.bias = GemmOperand{biasb.get(), bias_off, 0, 0, dt.c};
    if (fused->gelu) e.gelu = GemmOperand{gb.get(), g_off, ldg, 0, dt.c};
    if (fused->gelu_grad) e.gelu_grad = GemmOperand{gb.get(), g_off, ldg, 0, dt.c};
    ASSERT_TRUE(gemm.run_fused(s, alpha, ao, bo, beta, co, e)) << gemm.name() << " refused the epilogue";
  } else {
    gemm.run(s, alpha, ao, bo, beta, co);
  }
  for (std::size_t bi = 0; bi < c.batch; ++bi)
    for (std::size_t i = 0; i < c.m; ++i)
      for (std::size_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (std::size_t p = 0; p < c.k; ++p) {
          const double a = c.a == Transpose::kNo ? A[off + bi * sa + i * lda + p] : A[off + bi * sa + p * lda + i];
          const double b = c.b == Transpose::kNo ? B[off + bi * sb + p * ldb + j] : B[off + bi * sb + j * ldb + p];
          acc += a * b;
        }
        double& out = C[off + bi * sc + i * ldc + j];
        out = alpha * acc + (beta != 0.0f ? beta * out : 0.0) + (fused && fused->bias ? bias[bias_off + j] : 0.0);
        if (fused && fused->gelu) G[g_off + i * ldg + j] = gelu_reference(out);
        if (fused && fused->gelu_grad) out *= gelu_grad_reference(Z[g_off + i * ldg + j]);
      }
  // Elements outside the matrices (padding, offsets) must be untouched: compare everything. Float32
  // accumulation (1e-4) plus one rounding of C to its dtype: half a unit in its last place. A GEMM
  // that accumulated in 16 bits would be off by ~sqrt(k) units at k = 1000.
  expect_close(t.download(cb, C.size()), C, 1e-4, 1e-4 + device::dtype_unit_roundoff(dt.c), gemm.name().c_str());
  if (fused) expect_close(t.download(gb, G.size()), G, 1e-4, 1e-4 + device::dtype_unit_roundoff(dt.c), "G");
}

TEST_P(GemmTest, MatchesFloat64ReferenceOnAwkwardShapes) {
  auto gemm = kernels::make_gemm(*device_, cache_, GetParam());
  std::uint64_t seed = 100;
  for (Transpose ta : {Transpose::kNo, Transpose::kYes})
    for (Transpose tb : {Transpose::kNo, Transpose::kYes}) {
      for (const Case& c : {Case{1, 1, 1, 1, ta, tb}, Case{7, 33, 1, 1, ta, tb}, Case{33, 7, 1000, 1, ta, tb},
                            Case{1, 1000, 7, 1, ta, tb}, Case{97, 50, 65, 1, ta, tb}, Case{7, 33, 19, 3, ta, tb},
                            Case{1, 7, 33, 2, ta, tb}, Case{33, 1, 7, 1, ta, tb},
                            Case{70, 65, 9, 3, ta, tb}}) {  // batches of two 64-panels each way
        check(*this, *gemm, c, seed);
        seed += 3;
      }
    }
}

// Gemm::run_outer: an outer batch of strided batches (attention's sequences x heads), the outer
// stride unlike a multiple of the inner one, against float64; oneDNN takes both levels in one call.
TEST_P(GemmTest, OuterBatchesMatchFloat64Reference) {
  auto gemm = kernels::make_gemm(*device_, cache_, GetParam());
  const std::size_t m = 7, n = 33, k = 19, batch = 2, outer = 3, off = 3;
  std::uint64_t seed = 300;
  for (const auto& [ta, tb] : {std::pair{Transpose::kNo, Transpose::kYes}, std::pair{Transpose::kNo, Transpose::kNo},
                               std::pair{Transpose::kYes, Transpose::kNo}}) {
    const std::size_t a_rows = ta == Transpose::kNo ? m : k, a_cols = ta == Transpose::kNo ? k : m;
    const std::size_t b_rows = tb == Transpose::kNo ? k : n, b_cols = tb == Transpose::kNo ? n : k;
    const std::size_t lda = a_cols + 5, ldb = b_cols + 1, ldc = n + 2;
    const std::size_t sa = a_rows * lda + 7, sb = b_rows * ldb + 1, sc = m * ldc + 3;             // inner strides
    const std::size_t oa = batch * sa + 11, ob = batch * sb + 4, oc = batch * sc + 9;            // outer strides
    const auto A = random(off + outer * oa, seed), B = random(off + outer * ob, seed + 1);
    auto C = random(off + outer * oc, seed + 2);
    auto ab = upload(device::DType::kF32, A), bb = upload(device::DType::kF32, B), cb = upload(device::DType::kF32, C);
    const float alpha = 0.75f, beta = -1.5f;
    gemm->run_outer(kernels::GemmOuterBatch{outer, oa, ob, oc}, GemmShape{ta, tb, m, n, k, batch}, alpha,
                    GemmOperand{ab.get(), off, lda, sa}, GemmOperand{bb.get(), off, ldb, sb}, beta,
                    GemmOperand{cb.get(), off, ldc, sc});
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t bi = 0; bi < batch; ++bi)
        for (std::size_t i = 0; i < m; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            const std::size_t a0 = off + o * oa + bi * sa, b0 = off + o * ob + bi * sb;
            double acc = 0;
            for (std::size_t p = 0; p < k; ++p) {
              acc += (ta == Transpose::kNo ? A[a0 + i * lda + p] : A[a0 + p * lda + i]) *
                     (tb == Transpose::kNo ? B[b0 + p * ldb + j] : B[b0 + j * ldb + p]);
            }
            double& out = C[off + o * oc + bi * sc + i * ldc + j];
            out = alpha * acc + beta * out;
          }
    // Everything compared: nothing outside the matrices may change.
    expect_close(download(cb, C.size()), C, 1e-4, 1e-4, gemm->name().c_str());
    seed += 3;
  }
}

TEST_P(GemmTest, LargerModelShapes) {
  if (GetParam() == "gpu-64x64" && device_->info().kind == device::DeviceKind::kCpu) {
    GTEST_SKIP() << "the GPU-shaped variant on a CPU device: checked on the smaller shapes, too slow here";
  }
  auto gemm = kernels::make_gemm(*device_, cache_, GetParam());
  check(*this, *gemm, Case{256, 384, 129, 1, Transpose::kNo, Transpose::kYes}, 7);   // x W^T
  check(*this, *gemm, Case{130, 96, 256, 1, Transpose::kYes, Transpose::kNo}, 8);    // dy^T x
  check(*this, *gemm, Case{64, 64, 32, 12, Transpose::kNo, Transpose::kYes}, 9);     // q k^T per head
}

// Mixed precision: 16-bit A and B with float32 C (weight gradients), all 16-bit (activations), and
// a float32 operand beside a 16-bit one (attention probabilities times values).
TEST_P(GemmTest, SixteenBitOperandsAccumulateInFloat32) {
  auto gemm = kernels::make_gemm(*device_, cache_, GetParam());
  using device::DType;
  // DirectGemmTest.SixteenBitOperandsAccumulateInFloat32 runs the direct GEMM through these mixes and
  // more on both tiles; here it takes the weight-gradient mix alone (each mix is a program of its own,
  // seconds of PoCL's compiler apiece).
  const bool direct = GetParam() == "gpu-direct";
  for (DType h : {DType::kBF16, DType::kF16}) {
    std::vector<DTypes> mixes = {{h, h, DType::kF32}, {h, h, h}, {DType::kF32, h, h}};
    if (direct) mixes.resize(1);
    for (const DTypes& dt : mixes) {
      if (!gemm->supports(dt.a, dt.b, dt.c)) {
        // oneDNN takes 16-bit operands only where the CPU has kernels for them (AVX-512 for bfloat16).
        EXPECT_TRUE(GetParam() == "clblast" || GetParam() == "blis" || GetParam() == "onednn")
            << "only CLBlast, BLIS and oneDNN (on CPUs without 16-bit kernels) take float32 alone";
        continue;
      }
      std::uint64_t seed = 500;
      for (const Case& c : {Case{33, 7, 1000, 1, Transpose::kNo, Transpose::kYes},
                            Case{97, 50, 65, 1, Transpose::kYes, Transpose::kNo},
                            Case{7, 33, 19, 3, Transpose::kNo, Transpose::kNo}, Case{1, 1, 1, 1, Transpose::kYes, Transpose::kYes}}) {
        check(*this, *gemm, c, seed += 3, dt);
      }
    }
  }
}

// A candidate named `name` that runs `inner` and takes the dtype mixes `inner` does, or float32
// alone (`float32_only`), refusing the rest at run() as oneDNN does where it has no such matmul.
class NamedCandidate final : public kernels::Gemm {
 public:
  // `slow_calls`: the first calls each take 15 ms longer, as in a busy spell of the host.
  NamedCandidate(std::string name, std::unique_ptr<kernels::Gemm> inner, bool float32_only, int slow_calls = 0)
      : name_(std::move(name)), inner_(std::move(inner)), float32_only_(float32_only), slow_calls_(slow_calls) {}
  void run(const GemmShape& s, float alpha, const GemmOperand& a, const GemmOperand& b, float beta,
           const GemmOperand& c) override {
    if (!supports(a.dtype, b.dtype, c.dtype)) throw DeviceError(name_ + " has no such matmul here");
    if (slow_calls_ > 0) {
      --slow_calls_;
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
    }
    inner_->run(s, alpha, a, b, beta, c);
  }
  std::string name() const override { return name_; }
  bool supports(device::DType a, device::DType b, device::DType c) const override {
    return float32_only_ ? kernels::all_float32(a, b, c) : inner_->supports(a, b, c);
  }
  void set_profiling(bool on) override { inner_->set_profiling(on); }
  kernels::GemmStats stats() override { return inner_->stats(); }
  void reset_stats() override { inner_->reset_stats(); }

 private:
  std::string name_;
  std::unique_ptr<kernels::Gemm> inner_;
  bool float32_only_;
  int slow_calls_;
};

// A stored choice whose variant cannot run the class's dtypes here (a choices file written where
// oneDNN had bfloat16 matmuls, read where it has none) is timed again among the able candidates
// and replaced in the file, instead of failing the job at its first GEMM.
TEST_F(DeviceTest, AutoTimesAStoredChoiceThatCannotRunTheDtypesAgain) {
  using device::DType;
  const std::string stem = "test-choices";
  const Case c{33, 7, 100, 1, Transpose::kNo, Transpose::kYes};
  const std::string cls = kernels::gemm_shape_class(GemmShape{c.a, c.b, c.m, c.n, c.k, c.batch}) + ".bbf";
  const std::filesystem::path file =
      cache_.dir() / fmt::format("{}-{:016x}.txt", stem, device::device_fingerprint(device_->info()));
  std::ofstream(file) << "candidates able,float32-only\n" << cls << " float32-only\n";
  const kernels::GemmFactory make = [&](const std::string& name) -> std::unique_ptr<kernels::Gemm> {
    return std::make_unique<NamedCandidate>(name, kernels::make_gemm(*device_, cache_, "cpu-8x48"),
                                            name == "float32-only");
  };
  auto gemm = kernels::make_timed_gemm(*device_, cache_, {"able", "float32-only"}, make, stem);
  check(*this, *gemm, c, 77, DTypes{DType::kBF16, DType::kBF16, DType::kF32});
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(cls + " able"), std::string::npos) << text;
}

// Candidates with a rate bound are built only where the bound reaches the rate the unbounded ones
// measured on the class (the OpenCL tiles on a CPU whose oneDNN beats their float32 peak): one
// that cannot win is never built, one that might is timed with the others, and with no unbounded
// candidate every bounded one is timed. The bounds are extreme, so no timing can change the
// outcome.
TEST_F(DeviceTest, AutoBuildsABoundedCandidateOnlyWhereItsBoundReachesTheMeasuredRate) {
  const Case c{64, 48, 80, 1, Transpose::kNo, Transpose::kYes};
  std::vector<std::string> built;
  const kernels::GemmFactory make = [&](const std::string& name) -> std::unique_ptr<kernels::Gemm> {
    built.push_back(name);
    return std::make_unique<NamedCandidate>(name, kernels::make_gemm(*device_, cache_, "cpu-8x48"), false);
  };
  const kernels::GemmRateBound bound = [](const std::string& name) {
    return name == "cannot-win" ? 1e-9 : name == "might-win" ? 1e12 : 0.0;
  };
  struct Expect {
    std::vector<std::string> candidates, built;
  };
  for (const Expect& e : {Expect{{"unbounded", "cannot-win"}, {"unbounded"}},
                          Expect{{"unbounded", "might-win", "cannot-win"}, {"unbounded", "might-win"}},
                          Expect{{"cannot-win", "might-win"}, {"cannot-win", "might-win"}}}) {
    built.clear();
    std::filesystem::remove(cache_.dir() /
                            fmt::format("test-bounds-{:016x}.txt", device::device_fingerprint(device_->info())));
    auto gemm = kernels::make_timed_gemm(*device_, cache_, e.candidates, make, "test-bounds", bound);
    check(*this, *gemm, c, 91, DTypes{});
    EXPECT_EQ(built, e.built) << fmt::format("candidates {}", fmt::join(e.candidates, ","));
  }
}

// A busy spell of the host (the step-0 checkpoint written in the background) used to cover all
// five timing rounds of a lone candidate, and a bounded one was built for seconds to lose: the
// rounds now last 400 ms at least before a bounded candidate is built. The shape's 491,520 FLOPs
// take 15 ms in a slow call (0.03 GFLOP/s) and well under the bound's 4.9 ms in the others.
TEST_F(DeviceTest, AutoWaitsOutABusySpellBeforeBuildingABoundedCandidate) {
  const Case c{64, 48, 80, 1, Transpose::kNo, Transpose::kYes};
  std::vector<std::string> built;
  const kernels::GemmFactory make = [&](const std::string& name) -> std::unique_ptr<kernels::Gemm> {
    built.push_back(name);
    // 11 calls: the first untimed one and both of each of the five rounds (best of 15 ms: the
    // rounds run each candidate once untimed before its timed call).
    return std::make_unique<NamedCandidate>(name, kernels::make_gemm(*device_, cache_, "cpu-8x48"), false,
                                            name == "unbounded" ? 11 : 0);
  };
  const kernels::GemmRateBound bound = [](const std::string& name) { return name == "bounded" ? 0.1 : 0.0; };
  std::filesystem::remove(cache_.dir() /
                          fmt::format("test-busy-{:016x}.txt", device::device_fingerprint(device_->info())));
  auto gemm = kernels::make_timed_gemm(*device_, cache_, {"unbounded", "bounded"}, make, "test-busy", bound);
  check(*this, *gemm, c, 92, DTypes{});
  EXPECT_EQ(built, std::vector<std::string>{"unbounded"});
}

// Calls with no element of C to write: `auto` enqueues nothing, as its variants do. It used to run
// an outer batch of 0 repetitions once (writing C), and to time its candidates on an empty inner
// batch, dividing by it (a SIGFPE where PoCL's handler does not catch it) and recording the class.
using AutoGemmTest = DeviceTest;
TEST_F(AutoGemmTest, CallsWithNothingToWriteLeaveCAlone) {
  auto gemm = kernels::make_gemm(*device_, cache_, "auto");
  const std::vector<double> A(64, 1.0), B(64, 1.0), C(64, 2.0);
  auto ab = upload(device::DType::kF32, A), bb = upload(device::DType::kF32, B), cb = upload(device::DType::kF32, C);
  const GemmOperand a{ab.get(), 0, 4, 16}, b{bb.get(), 0, 4, 16}, c{cb.get(), 0, 4, 16};
  gemm->run_outer(kernels::GemmOuterBatch{0, 16, 16, 16}, GemmShape{Transpose::kNo, Transpose::kNo, 4, 4, 4, 1}, 1.0f,
                  a, b, 0.0f, c);
  gemm->run_outer(kernels::GemmOuterBatch{2, 32, 32, 32}, GemmShape{Transpose::kNo, Transpose::kNo, 4, 4, 4, 0}, 1.0f,
                  a, b, 0.0f, c);
  gemm->run(GemmShape{Transpose::kNo, Transpose::kNo, 0, 4, 4, 1}, 1.0f, a, b, 0.0f, c);
  gemm->run(GemmShape{Transpose::kNo, Transpose::kNo, 4, 4, 4, 0}, 1.0f, a, b, 0.0f, c);
  EXPECT_TRUE(gemm->run_fused(GemmShape{Transpose::kNo, Transpose::kNo, 4, 0, 4, 1}, 1.0f, a, b, 0.0f, c, {}));
  EXPECT_EQ(download(cb, C.size()), C);
  EXPECT_EQ(gemm->stats().calls, 0);
}

// A native kernel's failure (host GEMMs, the host's flash attention) reaches the host at the
// queue's next synchronisation, finish() or a blocking read, once; before, each library kept it
// until its own next call, so a failure in a step's last call fed that step's update and one in a
// job's last call was lost.
using NativeKernelTest = DeviceTest;
TEST_F(NativeKernelTest, AFailureIsThrownAtTheQueuesNextSynchronisation) {
  if (!device_->info().native_kernels) GTEST_SKIP() << "the device runs no native kernels";
  struct Args {
    device::NativeFailure* failure;
  };
  const auto fail = [](void* p) { static_cast<Args*>(p)->failure->record("the test's kernel failed"); };
  device::Queue& queue = device_->queue();
  const Args args{queue.native_failure()};
  queue.native("failing_kernel", fail, &args, sizeof args);
  EXPECT_EQ(error_message<DeviceError>([&] { queue.finish(); }), "the test's kernel failed");
  EXPECT_NO_THROW(queue.finish()) << "thrown once";

  auto buffer = upload(std::vector<double>(4, 1.0));
  queue.native("failing_kernel", fail, &args, sizeof args);
  std::vector<float> back(4);
  EXPECT_EQ(error_message<DeviceError>([&] { queue.read(buffer, std::span<float>(back)); }), "the test's kernel failed");
  EXPECT_NO_THROW(queue.read(buffer, std::span<float>(back)));
  EXPECT_EQ(back, std::vector<float>(4, 1.0f));
}

using GemmClBlast = DeviceTest;
TEST_F(GemmClBlast, RefusesSixteenBitOperandsWithAClearError) {
  auto gemm = kernels::make_gemm(*device_, cache_, "clblast");
  EXPECT_FALSE(gemm->supports(device::DType::kBF16, device::DType::kBF16, device::DType::kF32));
  auto a = upload(device::DType::kBF16, std::vector<double>(4, 1.0));
  auto c = zeros(4);
  try {
    gemm->run(GemmShape{Transpose::kNo, Transpose::kNo, 2, 2, 2}, 1.0f, GemmOperand{a.get(), 0, 2, 0, device::DType::kBF16},
              GemmOperand{a.get(), 0, 2, 0, device::DType::kBF16}, 0.0f, GemmOperand{c.get(), 0, 2});
    ADD_FAILURE() << "CLBlast ran a bfloat16 GEMM";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("float32 operands only"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, GemmTest,
                         ::testing::Values("blis", "onednn", "cpu-8x48", "cpu-12x32", "gpu-64x64", "gpu-direct", "clblast", "auto",
                                           "tensor-core"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

// The tensor-core kernel on 16-bit shapes: transposes, edges of every tile dimension, batches, C
// in each dtype, both copy paths (awkward placement: element loads; aligned: cp.async).
void check_mma(DeviceTest& t, kernels::Gemm& gemm, const std::vector<Case>& cases, const std::vector<DTypes>& dtypes) {
  std::uint64_t seed = 900;
  for (const DTypes& dt : dtypes)
    for (Layout layout : {Layout::kAwkward, Layout::kAligned})
      for (const Case& c : cases) check(t, gemm, c, seed += 3, dt, layout);
}

const std::vector<DTypes> kMmaDTypes = {{device::DType::kBF16, device::DType::kBF16, device::DType::kF32},
                                        {device::DType::kBF16, device::DType::kBF16, device::DType::kBF16},
                                        {device::DType::kF16, device::DType::kF16, device::DType::kF32},
                                        {device::DType::kF16, device::DType::kF16, device::DType::kF16}};

std::vector<Case> mma_cases(std::size_t big) {
  std::vector<Case> cases;
  for (Transpose ta : {Transpose::kNo, Transpose::kYes})
    for (Transpose tb : {Transpose::kNo, Transpose::kYes}) {
      cases.push_back(Case{1, 1, 1, 1, ta, tb});
      cases.push_back(Case{big + 3, big / 2 + 5, 100, 1, ta, tb});  // partial blocks, k not a multiple of 8
      cases.push_back(Case{17, 9, 48, 3, ta, tb});                  // batched
    }
  cases.push_back(Case{big, big, 0, 1, Transpose::kNo, Transpose::kNo});  // k = 0: C = beta C
  return cases;
}

// On a device whose probe passed: the PTX kernel itself (NVIDIA only).
using TensorCoreGemmTest = DeviceTest;
TEST_F(TensorCoreGemmTest, RunsOnTensorCoresWhereTheProbePasses) {
  const kernels::TensorCores& tc = kernels::probe_tensor_cores(device_->info(), cache_);
  if (!tc.bf16 || !tc.f16) GTEST_SKIP() << device_->info().name << ": " << tc.describe();
  kernels::TensorCoreGemm gemm(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_));
  ASSERT_TRUE(gemm.on_tensor_cores(device::DType::kBF16, device::DType::kBF16));
  check_mma(*this, gemm, mma_cases(300), kMmaDTypes);
  // Split k: one block of C, k = 1024 in splits of 256.
  ASSERT_GT(gemm.split_k(GemmShape{Transpose::kNo, Transpose::kNo, 40, 24, 1024}, device::DType::kBF16), 1u);
  for (Transpose ta : {Transpose::kNo, Transpose::kYes})
    for (Transpose tb : {Transpose::kNo, Transpose::kYes})
      for (const DTypes& dt : {kMmaDTypes[0], kMmaDTypes[3]}) check(*this, gemm, Case{40, 24, 1024, 1, ta, tb}, 79, dt, Layout::kAligned);
  // The epilogue, in the kernel's stores and in the split sum's.
  const DTypes bf16{device::DType::kBF16, device::DType::kBF16, device::DType::kBF16};
  for (const Case& c : {Case{300, 200, 96, 1, Transpose::kNo, Transpose::kYes}, Case{40, 24, 1024, 1, Transpose::kNo, Transpose::kYes}})
    check(*this, gemm, c, 80, bf16, Layout::kAligned, 1.0f, CInit::kRandom, Fused{true, true});
  for (const kernels::MmaTile& tile : kernels::mma_tile_candidates(device_->info().local_mem_bytes)) {
    kernels::TensorCoreGemm tuned(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_), tile);
    SCOPED_TRACE(tile.name());
    check(*this, tuned, Case{520, 260, 200, 1, Transpose::kNo, Transpose::kYes}, 77,
          DTypes{device::DType::kBF16, device::DType::kBF16, device::DType::kF32}, Layout::kAligned);
    check(*this, tuned, Case{260, 520, 72, 2, Transpose::kYes, Transpose::kNo}, 78,
          DTypes{device::DType::kF16, device::DType::kF16, device::DType::kF16}, Layout::kAligned);
  }
  if (!tc.tf32) return;
  kernels::TensorCoreGemm tf32(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_), std::nullopt,
                               kernels::TensorCoreGemm::Mode::kPtx, kernels::MatmulPrecision::kTf32);
  ASSERT_TRUE(tf32.on_tensor_cores(device::DType::kF32, device::DType::kF32));
  SCOPED_TRACE("tf32 " + tf32.tf32_tile().name());
  check_mma(*this, tf32, mma_cases(300), {DTypes{device::DType::kF32, device::DType::kF32, device::DType::kF32, true}});
}

// Everywhere: gemm_mma.cl built with its PTX replaced by portable emulations of the same per-lane
// semantics, so tiles, fragments, ldmatrix addressing, the stage pipeline, edges and the epilogue
// are checked against the float64 reference without a GPU. A small tile and the default one; two
// dtype mixes of the four (each is a program, and a CPU compiler takes seconds for one).
TEST_F(TensorCoreGemmTest, EmulatedKernelMatchesFloat64Reference) {
  using Mode = kernels::TensorCoreGemm::Mode;
  kernels::TensorCoreGemm small(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                                kernels::MmaTile::parse("32x32x32.w16x16.s3"), Mode::kEmulated);
  check_mma(*this, small, mma_cases(40), {kMmaDTypes[0], kMmaDTypes[3]});
  kernels::TensorCoreGemm standard(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                                   kernels::MmaTile{}, Mode::kEmulated);
  for (Transpose ta : {Transpose::kNo, Transpose::kYes})
    for (Transpose tb : {Transpose::kNo, Transpose::kYes})
      check(*this, standard, Case{131, 140, 40, 1, ta, tb}, 31, DTypes{device::DType::kBF16, device::DType::kBF16},
            Layout::kAligned);
}

// The swizzled layout (SWIZZLE=1: unpadded rows, chunks permuted by XOR), emulated: rows of 2, 4,
// 8, 16 and 32 chunks (BK 16 and 32; BM and BN 32 to 256), 64 x 64 warp tiles, every transpose, partial
// blocks, awkward offsets (plain loads) and aligned ones.
TEST_F(TensorCoreGemmTest, EmulatedSwizzledTilesMatchFloat64Reference) {
  using Mode = kernels::TensorCoreGemm::Mode;
  kernels::TensorCoreGemm small(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                                kernels::MmaTile::parse("32x32x32.w16x16.s3.x"), Mode::kEmulated);
  check_mma(*this, small, mma_cases(40), {kMmaDTypes[0], kMmaDTypes[3]});
  std::uint64_t seed = 1200;
  for (const char* name : {"64x64x16.w32x32.s2.x", "128x128x32.w64x32.s3.x", "128x128x32.w64x64.s3.x", "256x128x32.w64x64.s2.x"}) {
    kernels::TensorCoreGemm gemm(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                                 kernels::MmaTile::parse(name), Mode::kEmulated);
    SCOPED_TRACE(name);
    for (Transpose ta : {Transpose::kNo, Transpose::kYes})
      for (Transpose tb : {Transpose::kNo, Transpose::kYes})
        check(*this, gemm, Case{131, 140, 72, 1, ta, tb}, seed += 3, DTypes{device::DType::kBF16, device::DType::kBF16},
              ta == tb ? Layout::kAligned : Layout::kAwkward);
  }
}

// Small enough for Oclgrind (ctest Oclgrind.gemm_mma): the emulated mma kernel's local tiles, padded
// and swizzled (rows of 2, 4 and 8 chunks), every local read of a chunk some copy wrote and inside
// the tiles. (The emulation's own barriers order the stages too, so a missing pipeline barrier of
// the PTX build shows in neither; docs/testing.md.)
using TensorCoreGemmSmall = DeviceTest;
TEST_F(TensorCoreGemmSmall, PaddedAndSwizzledTiles) {
  std::uint64_t seed = 1400;
  for (const char* name : {"32x32x32.w16x16.s3", "32x32x32.w16x16.s3.x", "64x64x16.w32x32.s2.x"}) {
    kernels::TensorCoreGemm gemm(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                                 kernels::MmaTile::parse(name), kernels::TensorCoreGemm::Mode::kEmulated);
    SCOPED_TRACE(name);
    for (Transpose ta : {Transpose::kNo, Transpose::kYes})
      for (Transpose tb : {Transpose::kNo, Transpose::kYes})
        check(*this, gemm, Case{35, 40, 72, 1, ta, tb}, seed += 3, kMmaDTypes[1], ta == tb ? Layout::kAligned : Layout::kAwkward);
  }
}

// No tile given: each shape class of 16-bit GEMMs runs on the tile its first GEMM timed fastest
// among mma_auto_tiles() (emulated here, so any may win), every candidate correct, the choices
// stored beside the program cache; float32 GEMMs still go to the fallback.
TEST_F(TensorCoreGemmTest, EmulatedTileChoiceTimesTheAutoTilesPerShapeClass) {
  using Mode = kernels::TensorCoreGemm::Mode;
  kernels::TensorCoreGemm gemm(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                               std::nullopt, Mode::kEmulated);
  EXPECT_EQ(gemm.tile().name(), kernels::MmaTile{}.name());
  std::uint64_t seed = 1300;
  for (const Case& c : {Case{70, 40, 65, 1, Transpose::kNo, Transpose::kYes}, Case{70, 40, 65, 1, Transpose::kYes, Transpose::kNo},
                        Case{17, 9, 48, 3, Transpose::kNo, Transpose::kNo}}) {
    check(*this, gemm, c, seed += 3, kMmaDTypes[0], Layout::kAligned);
    if (c.batch == 1) check(*this, gemm, c, seed += 3, kMmaDTypes[0], Layout::kAwkward, 1.0f, CInit::kRandom, Fused{true, true});
  }
  check(*this, gemm, Case{33, 20, 17, 1, Transpose::kNo, Transpose::kNo}, seed += 3,
        DTypes{device::DType::kF32, device::DType::kF32, device::DType::kF32}, Layout::kAwkward);
  // The stored table: a header naming the candidates, then one line per 16-bit class timed here.
  std::vector<std::string> lines;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir_.path())) {
    if (!entry.path().filename().string().starts_with("mma-tile-choices-")) continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 3u) << "expected a header and two shape classes";
  EXPECT_TRUE(lines[0].starts_with("candidates tensor-core-" + kernels::MmaTile{}.name() + ",")) << lines[0];
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_NE(lines[i].find(".bbf tensor-core-"), std::string::npos) << lines[i];
    EXPECT_NE(lines[0].find(lines[i].substr(lines[i].find(' ') + 1)), std::string::npos) << lines[i];
  }
}

// Split k on tensor cores (emulated): C of one or two blocks and k deep enough for 2 to 16 splits
// (PoCL's devices have 2 compute units, so the rule wants 16 blocks), every transpose, C in float32
// and in 16 bits (the sum rounds it once), beta != 0 read through the sum.
TEST_F(TensorCoreGemmTest, EmulatedKernelSplitsKWhereCHasFewBlocks) {
  using Mode = kernels::TensorCoreGemm::Mode;
  kernels::TensorCoreGemm gemm(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                               kernels::MmaTile::parse("32x32x32.w16x16.s3"), Mode::kEmulated);
  const auto splits = [&](std::size_t m, std::size_t n, std::size_t k, std::size_t batch = 1) {
    return gemm.split_k(GemmShape{Transpose::kNo, Transpose::kNo, m, n, k, batch}, device::DType::kBF16);
  };
  ASSERT_EQ(splits(40, 24, 1024), 4u);   // 2 blocks; splits of 256
  EXPECT_EQ(splits(40, 24, 1000), 1u);   // k not a whole number of chunks per split
  EXPECT_EQ(splits(40, 24, 1024, 2), 1u);  // batched
  // 64 blocks fill a device of up to 8 compute units (PoCL's here), not an H200's 132.
  EXPECT_EQ(splits(256, 256, 1024), device_->info().compute_units * 8 <= 64 ? 1u : 4u);
  std::uint64_t seed = 950;
  for (Transpose ta : {Transpose::kNo, Transpose::kYes})
    for (Transpose tb : {Transpose::kNo, Transpose::kYes})
      for (const DTypes& dt : {kMmaDTypes[0], kMmaDTypes[3]})
        check(*this, gemm, Case{40, 24, 1024, 1, ta, tb}, seed += 3, dt, Layout::kAligned);
  check(*this, gemm, Case{17, 9, 4096, 1, Transpose::kNo, Transpose::kYes}, seed += 3, kMmaDTypes[0], Layout::kAwkward);
}

// The bias / GELU epilogue on tensor cores (emulated), in the mma kernel's stores and in the split
// sum's, C and the epilogue's operands in 16 bits and in float32 (TF32 operands); GELU's gradient
// is left to its own pass there.
TEST_F(TensorCoreGemmTest, EmulatedKernelAppliesTheEpilogue) {
  using device::DType;
  using Mode = kernels::TensorCoreGemm::Mode;
  kernels::TensorCoreGemm gemm(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                               kernels::MmaTile::parse("32x32x32.w16x16.s3"), Mode::kEmulated,
                               kernels::MatmulPrecision::kTf32);
  const Case one_pass{70, 40, 65, 1, Transpose::kNo, Transpose::kYes}, split{33, 17, 1024, 1, Transpose::kNo, Transpose::kYes};
  ASSERT_EQ(gemm.split_k(GemmShape{one_pass.a, one_pass.b, one_pass.m, one_pass.n, one_pass.k}, DType::kBF16), 1u);
  ASSERT_GT(gemm.split_k(GemmShape{split.a, split.b, split.m, split.n, split.k}, DType::kBF16), 1u);
  const DTypes bf16{DType::kBF16, DType::kBF16, DType::kBF16}, tf32{DType::kF32, DType::kF32, DType::kF32, true};
  std::uint64_t seed = 7000;
  for (const Fused parts : {Fused{true, false}, Fused{false, true}, Fused{true, true}})
    for (const Case& c : {one_pass, split}) {
      check(*this, gemm, c, seed += 4, bf16, Layout::kAligned, 0.0f, CInit::kNaN, parts);
      check(*this, gemm, c, seed += 4, bf16, Layout::kAwkward, 1.0f, CInit::kRandom, parts);
    }
  check(*this, gemm, split, seed += 4, tf32, Layout::kAligned, 1.0f, CInit::kRandom, Fused{true, true});
  // Not fused: batched, a bias in another dtype than C's, GELU's gradient (slower fused, on an H200).
  auto c = upload(DType::kBF16, std::vector<double>(64, 1.0)), bias32 = upload(DType::kF32, std::vector<double>(8, 1.0));
  const GemmOperand c16{c.get(), 0, 8, 8, DType::kBF16};
  kernels::GemmEpilogue e;
  e.bias = c16;
  EXPECT_FALSE(gemm.run_fused(GemmShape{Transpose::kNo, Transpose::kNo, 2, 2, 2, 2}, 1.0f, c16, c16, 0.0f, c16, e));
  e.bias = GemmOperand{bias32.get(), 0, 0, 0, DType::kF32};
  EXPECT_FALSE(gemm.run_fused(GemmShape{Transpose::kNo, Transpose::kNo, 2, 2, 2}, 1.0f, c16, c16, 0.0f, c16, e));
  e = {};
  e.gelu_grad = c16;
  EXPECT_FALSE(gemm.run_fused(GemmShape{Transpose::kNo, Transpose::kNo, 2, 2, 2}, 1.0f, c16, c16, 0.0f, c16, e));
}

// MATMUL_PRECISION=tf32 through the emulation: float32 A and B on the m16n8k8 path (fragments read
// element by element, rows padded differently from the 16-bit path, 4-element chunks), against
// the float64 product of the same TF32-rounded operands; the small tile, and the tile a 48 KiB
// device (NVIDIA's OpenCL) gets for TF32.
TEST_F(TensorCoreGemmTest, EmulatedTf32KernelMatchesFloat64Reference) {
  using Mode = kernels::TensorCoreGemm::Mode;
  const DTypes tf32{device::DType::kF32, device::DType::kF32, device::DType::kF32, true};
  kernels::TensorCoreGemm small(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                                kernels::MmaTile::parse("32x32x32.w16x16.s3"), Mode::kEmulated,
                                kernels::MatmulPrecision::kTf32);
  ASSERT_TRUE(small.on_tensor_cores(device::DType::kF32, device::DType::kF32));
  check_mma(*this, small, mma_cases(40), {tf32, DTypes{device::DType::kF32, device::DType::kF32, device::DType::kBF16, true}});

  const auto fit48k = kernels::mma_tile_candidates(48 * 1024, 4);
  ASSERT_FALSE(fit48k.empty()) << "no TF32 tile fits 48 KiB of local memory";
  kernels::TensorCoreGemm h100(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_), fit48k.front(),
                               Mode::kEmulated, kernels::MatmulPrecision::kTf32);
  SCOPED_TRACE(h100.tf32_tile().name());
  EXPECT_LE(h100.tf32_tile().local_bytes(4), 48u * 1024);
  for (Transpose ta : {Transpose::kNo, Transpose::kYes})
    for (Transpose tb : {Transpose::kNo, Transpose::kYes}) check(*this, h100, Case{131, 140, 40, 1, ta, tb}, 41, tf32, Layout::kAligned);
}

// The emulation rounds float32 operands to the nearest TF32, ties away from zero (cvt.rna), not by
// truncation: 1 + 2^-11 is a tie that goes up to 1 + 2^-10, 1 + 3 2^-12 rounds up, 1 + 2^-12 down.
// A float32 GEMM at float32 precision keeps every bit (the fallback runs it).
TEST_F(TensorCoreGemmTest, EmulatedTf32RoundsOperandsToNearest) {
  using Mode = kernels::TensorCoreGemm::Mode;
  const std::vector<double> a = {1 + std::ldexp(1.0, -11), -(1 + std::ldexp(1.0, -11)), 1 + 3 * std::ldexp(1.0, -12),
                                 1 + std::ldexp(1.0, -12), 0.0, 0.0, 0.0, 0.0};
  const std::vector<double> b = {1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0};  // picks a0 + a2 + a3
  const auto run = [&](kernels::MatmulPrecision precision) {
    kernels::TensorCoreGemm gemm(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                                 kernels::MmaTile::parse("32x32x32.w16x16.s3"), Mode::kEmulated, precision);
    auto ab = upload(a), bb = upload(b), cb = upload(std::vector<double>(1, 0.0));
    gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, 1, 1, a.size()}, 1.0f, {ab.get(), 0, a.size(), 0},
             {bb.get(), 0, 1, 0}, 0.0f, {cb.get(), 0, 1});
    return download(cb, 1).at(0);
  };
  EXPECT_EQ(run(kernels::MatmulPrecision::kTf32), (1 + std::ldexp(1.0, -10)) + (1 + std::ldexp(1.0, -10)) + 1.0);
  EXPECT_EQ(run(kernels::MatmulPrecision::kFloat32), a[0] + a[2] + a[3]);
}

// The emulation's float16 decoding, subnormals of both signs included (bfloat16 has none): a
// dot product of exactly representable values, so the float32 result is exact.
TEST_F(TensorCoreGemmTest, EmulatedKernelDecodesFloat16Subnormals) {
  kernels::TensorCoreGemm gemm(cache_, *device_, kernels::make_float32_accumulating_gemm(*device_, cache_),
                               kernels::MmaTile::parse("32x32x32.w16x16.s3"), kernels::TensorCoreGemm::Mode::kEmulated);
  const double sub = std::ldexp(1.0, -24);  // float16's smallest subnormal
  const std::vector<double> a = {16 * sub, -4 * sub, 3 * sub, -sub, 1023 * sub, -1000 * sub, std::ldexp(1.0, -14), 0.0};
  const std::vector<double> b(a.size(), 1.0);
  double want = 0;
  for (double x : a) want += x;
  auto ab = upload(device::DType::kF16, a), bb = upload(device::DType::kF16, b);
  auto cb = upload(std::vector<double>(1, 0.0));
  gemm.run(GemmShape{Transpose::kNo, Transpose::kNo, 1, 1, a.size()}, 1.0f, {ab.get(), 0, a.size(), 0, device::DType::kF16},
           {bb.get(), 0, 1, 0, device::DType::kF16}, 0.0f, {cb.get(), 0, 1});
  EXPECT_EQ(download(cb, 1).at(0), want);
}

// Off NVIDIA the probe builds nothing and says why; the tensor-core and auto policies then run
// the float32-accumulating GEMM (bitwise the same results), and no PTX program can be built.
TEST_F(TensorCoreGemmTest, ProbeBuildsNothingOffNvidia) {
  if (kernels::is_nvidia(device_->info())) GTEST_SKIP() << "an NVIDIA device: the probe runs there";
  const auto before = cache_.stats();
  const kernels::TensorCores& tc = kernels::probe_tensor_cores(device_->info(), cache_);
  const auto after = cache_.stats();
  EXPECT_EQ(after.hits + after.misses + after.rejected, before.hits + before.misses + before.rejected);
  EXPECT_FALSE(tc.bf16 || tc.f16 || tc.tf32);
  EXPECT_NE(tc.describe().find("no tensor cores (not an NVIDIA device"), std::string::npos) << tc.describe();
  EXPECT_NE(tc.describe().find("float32-accumulating GEMM"), std::string::npos) << tc.describe();
  EXPECT_THROW(kernels::load_ptx_program(cache_, *device_, "gemm_mma", "-DMMA_AB_BF16"), std::logic_error);
  EXPECT_THROW(kernels::load_ptx_program(cache_, *device_, "tensor_core_probe", "-DPROBE_BF16"), std::logic_error);

  auto tensor_core = kernels::make_gemm(*device_, cache_, "tensor-core");
  EXPECT_FALSE(dynamic_cast<kernels::TensorCoreGemm&>(*tensor_core).on_tensor_cores(device::DType::kBF16,
                                                                                     device::DType::kBF16));
  auto tf32 = kernels::make_gemm(*device_, cache_, "tensor-core", kernels::MatmulPrecision::kTf32);
  EXPECT_FALSE(dynamic_cast<kernels::TensorCoreGemm&>(*tf32).on_tensor_cores(device::DType::kF32, device::DType::kF32))
      << "MATMUL_PRECISION=tf32 stays float32 without TF32 tensor cores";
  auto automatic = kernels::make_gemm(*device_, cache_, "auto");
  EXPECT_EQ(automatic->name(), "auto");
  const auto ab = upload(device::DType::kBF16, rounded(device::DType::kBF16, random(64 * 48, 5)));
  std::vector<std::vector<double>> results;
  for (kernels::Gemm* g : {tensor_core.get(), automatic.get()}) {
    auto c = zeros(64 * 64);
    const GemmOperand x{ab.get(), 0, 48, 0, device::DType::kBF16};
    g->run(GemmShape{Transpose::kNo, Transpose::kYes, 64, 64, 48}, 1.0f, x, x, 0.0f, GemmOperand{c.get(), 0, 64});
    results.push_back(download(c, 64 * 64));
  }
  EXPECT_EQ(results[0], results[1]);
}

// DirectGemm (gpu-direct): no packing pass, so every layout reaches the kernel itself. Two tiles
// (the default 128x64x16.r8x8 and a small 32x32x8.r4x4.u4 whose blocks the shapes cross many times
// and whose slices run as two unrolled halves),
// each transpose, awkward placement (odd offsets and leading dimensions: scalar loads) and aligned
// placement (multiples of 8: vector loads), m, n and k each through 1, 7, 63, 65, 129 and 300.
const char* const kDirectTiles[] = {"128x64x16.r8x8", "32x32x8.r4x4.u4"};

std::vector<Case> direct_cases(Transpose ta, Transpose tb) {
  std::vector<Case> cases;
  for (std::size_t d : {1, 7, 63, 65, 129, 300}) {
    cases.push_back(Case{d, 65, 63, 1, ta, tb});
    cases.push_back(Case{63, d, 129, 1, ta, tb});
    cases.push_back(Case{129, 7, d, 1, ta, tb});
  }
  cases.push_back(Case{65, 63, 7, 3, ta, tb});   // batched, strided
  cases.push_back(Case{7, 129, 65, 2, ta, tb});  // batched, several blocks along n
  cases.push_back(Case{7, 9, 0, 1, ta, tb});     // k = 0: C = beta C
  return cases;
}

using DirectGemmTest = DeviceTest;
TEST_F(DirectGemmTest, MatchesFloat64ReferenceForEveryLayout) {
  // Also the other tiles `auto` times on GPUs (direct_auto_tiles), float32 only.
  for (const char* tile : {kDirectTiles[0], kDirectTiles[1], "128x128x8.r8x8", "64x64x16.r8x4"}) {
    kernels::DirectGemm gemm(cache_, *device_, kernels::DirectTile::parse(tile));
    SCOPED_TRACE(gemm.name());
    std::uint64_t seed = 2000;
    for (Transpose ta : {Transpose::kNo, Transpose::kYes})
      for (Transpose tb : {Transpose::kNo, Transpose::kYes})
        for (Layout layout : {Layout::kAwkward, Layout::kAligned})
          for (const Case& c : direct_cases(ta, tb)) check(*this, gemm, c, seed += 3, {}, layout);
  }
}

TEST_F(DirectGemmTest, BetaZeroNeverReadsCAndBetaOneAccumulates) {
  for (const char* tile : kDirectTiles) {
    kernels::DirectGemm gemm(cache_, *device_, kernels::DirectTile::parse(tile));
    SCOPED_TRACE(gemm.name());
    for (Layout layout : {Layout::kAwkward, Layout::kAligned}) {
      check(*this, gemm, Case{129, 65, 63, 2, Transpose::kNo, Transpose::kYes}, 31, {}, layout, 0.0f, CInit::kNaN);
      check(*this, gemm, Case{7, 300, 1, 1, Transpose::kYes, Transpose::kNo}, 32, {}, layout, 0.0f, CInit::kNaN);
      check(*this, gemm, Case{129, 65, 63, 2, Transpose::kYes, Transpose::kYes}, 33, {}, layout, 1.0f);
    }
  }
}

// Split k (weight-gradient shapes: few blocks of C, deep k): the partial products over k ranges and
// their in-order sum with alpha and beta, every transpose, both placements, beta 0 over a NaN C and
// beta 1, a 16-bit mix; k = 1000 splits in two (not a multiple of 16), 2048 in four or more.
TEST_F(DirectGemmTest, SplitKMatchesFloat64Reference) {
  kernels::DirectGemm gemm(cache_, *device_, kernels::DirectTile::parse(kDirectTiles[1]));
  const auto shape = [](std::size_t m, std::size_t n, std::size_t k, std::size_t batch = 1) {
    return GemmShape{Transpose::kYes, Transpose::kNo, m, n, k, batch};
  };
  ASSERT_GE(gemm.split_k(shape(33, 17, 2048)), 4u);
  EXPECT_EQ(gemm.split_k(shape(33, 65, 1000)), 2u);
  EXPECT_EQ(gemm.split_k(shape(33, 65, 300)), 1u);      // too shallow
  EXPECT_EQ(gemm.split_k(shape(33, 17, 2048, 2)), 1u);  // batched products are not split
  std::uint64_t seed = 5000;
  for (Transpose ta : {Transpose::kNo, Transpose::kYes})
    for (Transpose tb : {Transpose::kNo, Transpose::kYes})
      for (Layout layout : {Layout::kAwkward, Layout::kAligned}) {
        check(*this, gemm, Case{33, 17, 2048, 1, ta, tb}, seed += 3, {}, layout, 0.0f, CInit::kNaN);
        check(*this, gemm, Case{33, 65, 1000, 1, ta, tb}, seed += 3, {}, layout, 1.0f);
      }
  check(*this, gemm, Case{33, 65, 1000, 1, Transpose::kYes, Transpose::kNo}, 5100,
        DTypes{device::DType::kBF16, device::DType::kBF16, device::DType::kBF16}, Layout::kAligned, 1.0f);
}

// The fused epilogue (Linear's forward on GPUs, and the MLP's dx GEMM through GELU): bias, GELU
// without a bias, both, and gelu'(Z); one tile pass and a split-k pass (the epilogue then runs in
// the split sum), float32 and bfloat16 C, beta 0 over a NaN C and beta 1; batched products, 16-bit
// epilogue operands under a float32 C, and GELU with its gradient at once refused.
TEST_F(DirectGemmTest, FusedBiasAndGeluMatchFloat64Reference) {
  using device::DType;
  kernels::DirectGemm gemm(cache_, *device_, kernels::DirectTile::parse(kDirectTiles[1]));
  const Case one_pass{129, 67, 65, 1, Transpose::kNo, Transpose::kYes}, split{33, 17, 1000, 1, Transpose::kNo, Transpose::kYes};
  ASSERT_EQ(gemm.split_k(GemmShape{one_pass.a, one_pass.b, one_pass.m, one_pass.n, one_pass.k}), 1u);
  ASSERT_GT(gemm.split_k(GemmShape{split.a, split.b, split.m, split.n, split.k}), 1u);
  std::uint64_t seed = 6000;
  for (const Fused parts : {Fused{true, false}, Fused{false, true}, Fused{true, true}, Fused{false, false, true}})
    for (const Case& c : {one_pass, split})
      for (Layout layout : {Layout::kAwkward, Layout::kAligned}) {
        check(*this, gemm, c, seed += 4, {}, layout, 0.0f, CInit::kNaN, parts);
        check(*this, gemm, c, seed += 4, {}, layout, 1.0f, CInit::kRandom, parts);
      }
  check(*this, gemm, one_pass, 6100, DTypes{DType::kBF16, DType::kBF16, DType::kBF16}, Layout::kAligned, 0.0f,
        CInit::kRandom, Fused{true, true});
  check(*this, gemm, split, 6101, DTypes{DType::kBF16, DType::kBF16, DType::kBF16}, Layout::kAligned, 0.0f,
        CInit::kRandom, Fused{true, true});
  check(*this, gemm, one_pass, 6102, DTypes{DType::kBF16, DType::kBF16, DType::kBF16}, Layout::kAligned, 0.0f,
        CInit::kRandom, Fused{false, false, true});

  auto c = upload(DType::kF32, std::vector<double>(64, 1.0)), bias16 = upload(DType::kBF16, std::vector<double>(8, 1.0));
  const GemmOperand f32{c.get(), 0, 8, 8, DType::kF32};
  kernels::GemmEpilogue e;
  e.bias = GemmOperand{c.get(), 0, 0, 0, DType::kF32};
  EXPECT_FALSE(gemm.run_fused(GemmShape{Transpose::kNo, Transpose::kNo, 2, 2, 2, 2}, 1.0f, f32, f32, 0.0f, f32, e));
  e.bias = GemmOperand{bias16.get(), 0, 0, 0, DType::kBF16};
  EXPECT_FALSE(gemm.run_fused(GemmShape{Transpose::kNo, Transpose::kNo, 2, 2, 2}, 1.0f, f32, f32, 0.0f, f32, e));
  e = {};
  e.gelu = e.gelu_grad = f32;
  EXPECT_FALSE(gemm.run_fused(GemmShape{Transpose::kNo, Transpose::kNo, 2, 2, 2}, 1.0f, f32, f32, 0.0f, f32, e));
}

// 16-bit A, B and C in several mixes, both placements: four mixes on the small tile, two on the
// default one (each mix is a program of its own, seconds of PoCL's compiler apiece).
TEST_F(DirectGemmTest, SixteenBitOperandsAccumulateInFloat32) {
  using device::DType;
  const std::vector<DTypes> mixes = {{DType::kBF16, DType::kBF16, DType::kF32}, {DType::kF16, DType::kF16, DType::kF16},
                                     {DType::kF32, DType::kBF16, DType::kBF16}, {DType::kBF16, DType::kF16, DType::kF32}};
  for (const char* tile : kDirectTiles) {
    kernels::DirectGemm gemm(cache_, *device_, kernels::DirectTile::parse(tile));
    SCOPED_TRACE(gemm.name());
    std::uint64_t seed = 3000;
    const std::size_t count = gemm.tile() == kernels::DirectTile{} ? 2 : mixes.size();
    for (const DTypes& dt : std::span(mixes).first(count))
      for (Layout layout : {Layout::kAwkward, Layout::kAligned})
        for (const Case& c : {Case{33, 7, 300, 1, Transpose::kNo, Transpose::kYes},
                              Case{129, 65, 63, 1, Transpose::kYes, Transpose::kNo},
                              Case{7, 65, 19, 3, Transpose::kNo, Transpose::kNo},
                              Case{1, 1, 1, 1, Transpose::kYes, Transpose::kYes}}) {
          check(*this, gemm, c, seed += 3, dt, layout);
        }
  }
}

// Small shapes for Oclgrind (--data-races --uninitialized): every transpose, both placements,
// partial blocks along m, n and k, a batch, C NaN with beta 0, a 16-bit mix; both tiles.
using DirectGemmSmall = DeviceTest;
TEST_F(DirectGemmSmall, EdgesTransposesBatchesAndDtypes) {
  for (const char* tile : kDirectTiles) {
    kernels::DirectGemm gemm(cache_, *device_, kernels::DirectTile::parse(tile));
    SCOPED_TRACE(gemm.name());
    std::uint64_t seed = 4000;
    for (Transpose ta : {Transpose::kNo, Transpose::kYes})
      for (Transpose tb : {Transpose::kNo, Transpose::kYes})
        for (Layout layout : {Layout::kAwkward, Layout::kAligned}) {
          check(*this, gemm, Case{35, 67, 21, 2, ta, tb}, seed += 3, {}, layout, 0.0f, CInit::kNaN);
        }
    check(*this, gemm, Case{7, 9, 20, 1, Transpose::kNo, Transpose::kNo}, 4100, {}, Layout::kAligned, 1.0f);
    check(*this, gemm, Case{33, 5, 17, 1, Transpose::kYes, Transpose::kNo}, 4101,
          DTypes{device::DType::kBF16, device::DType::kF16, device::DType::kBF16}, Layout::kAligned);
    // Split k: two partial products and their sum (beta 1 reads C once, in the sum).
    const Case deep{33, 17, 512, 1, Transpose::kYes, Transpose::kNo};
    ASSERT_EQ(gemm.split_k(GemmShape{deep.a, deep.b, deep.m, deep.n, deep.k, 1}), 2u);
    check(*this, gemm, deep, 4102, {}, Layout::kAligned, 1.0f);
    // The fused bias and GELU, and GELU's gradient, in the tile's stores and in the split sum's.
    check(*this, gemm, Case{35, 67, 21, 1, Transpose::kNo, Transpose::kYes}, 4103, {}, Layout::kAwkward, 0.0f,
          CInit::kNaN, Fused{true, true});
    check(*this, gemm, deep, 4104, {}, Layout::kAligned, 0.0f, CInit::kNaN, Fused{true, true});
    check(*this, gemm, deep, 4105, {}, Layout::kAwkward, 0.0f, CInit::kNaN, Fused{false, false, true});
  }
}

TEST_F(DirectGemmTest, PolicyAndAutoCandidate) {
  auto direct = kernels::make_gemm(*device_, cache_, "gpu-direct");
  EXPECT_EQ(direct->name(), "gpu-direct-" + kernels::DirectGemm::default_tile(*device_).name());
  check(*this, *direct, Case{65, 63, 7, 2, Transpose::kNo, Transpose::kYes}, 51);
  // A tile that needs more work-items than any device allows is refused before any build.
  EXPECT_THROW(kernels::DirectGemm(cache_, *device_, kernels::DirectTile{1024, 1024, 16, 4, 4}), ConfigError);
}

TEST(DirectGemmTuning, RoundTripsAndRejectsBadFiles) {
  TempDir dir;
  device::DeviceInfo info;
  info.name = "Test Device";
  const auto file = dir.path() / "direct_gemm" / "test.json";
  const kernels::DirectTile tile = kernels::DirectTile::parse("64x128x16.r8x8");
  kernels::save_direct_gemm_tuning(file, info, tile, "a test");
  EXPECT_EQ(kernels::load_direct_gemm_tuning(file), tile);
  const auto expect_error = [&](const std::string& text, const char* says) {
    { std::ofstream(file) << text; }
    try {
      kernels::load_direct_gemm_tuning(file);
      ADD_FAILURE() << "loaded: " << text;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
      EXPECT_NE(what.find(says), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  expect_error("not json", "parse error");
  expect_error(R"({"device": "x"})", "tile");
  expect_error(R"({"tile": "128x64x16.r8x7"})", "not one gemm_direct.cl can run");
  std::filesystem::remove(file);
  EXPECT_THROW(kernels::load_direct_gemm_tuning(file), ConfigError);
  EXPECT_EQ(kernels::direct_tile_candidates(info).size(), 0u);  // a device with no work-items fits none
  info.max_work_group_size = 1024;
  info.local_mem_bytes = 48 * 1024;
  const auto fit = kernels::direct_tile_candidates(info);
  ASSERT_FALSE(fit.empty());
  EXPECT_EQ(fit.front(), kernels::DirectTile{});
  // auto's direct candidates without a tuned tile: three sizes on an H100-like device, default
  // first; 20 KiB of local memory leaves out the default (2 x 16 x (132 + 68) floats = 25600 bytes).
  const auto auto_names = [&] {
    std::vector<std::string> names;
    for (const auto& t : kernels::direct_auto_tiles(info)) names.push_back(t.name());
    return names;
  };
  EXPECT_EQ(auto_names(), (std::vector<std::string>{"128x64x16.r8x8", "128x128x8.r8x8", "64x64x16.r8x4"}));
  info.local_mem_bytes = 20 * 1024;
  EXPECT_EQ(auto_names(), (std::vector<std::string>{"128x128x8.r8x8", "64x64x16.r8x4"}));
}

// The host libraries (BLIS, oneDNN) with k == 0: C = beta C, and A and B never read (or mapped).
TEST_F(GemmClBlast, HostGemmsWithKZeroScaleC) {
  if (!kernels::host_gemm_available(*device_)) GTEST_SKIP() << "host GEMMs run as native kernels: this device runs none";
  for (const char* policy : {"blis", "onednn"}) {
    auto gemm = kernels::make_gemm(*device_, cache_, policy);
    check(*this, *gemm, Case{7, 33, 0, 2, Transpose::kNo, Transpose::kYes}, 41, {}, Layout::kAwkward, -1.5f);
    check(*this, *gemm, Case{5, 3, 0, 1, Transpose::kYes, Transpose::kNo}, 43, {}, Layout::kAwkward, 0.0f, CInit::kNaN);
  }
}

// FPROP_DTYPE=auto's measurement (device/auto_fprop_dtype.h): both rates where oneDNN has a
// non-reference bfloat16 matmul here, which is what the GEMM's own supports() says; float32 always.
TEST_F(GemmClBlast, OneDnnBfloat16MeasurementAgreesWithTheGemmsDtypes) {
  if (!kernels::host_gemm_available(*device_)) GTEST_SKIP() << "host GEMMs run as native kernels: this device runs none";
  const device::Bf16GemmRates rates = kernels::measure_onednn_bf16_gemm(1);
  EXPECT_GT(rates.f32_gflops, 0.0) << rates.what;
  auto gemm = kernels::make_gemm(*device_, cache_, "onednn");
  const device::DType bf16 = device::DType::kBF16, f32 = device::DType::kF32;
  EXPECT_EQ(rates.bf16_gflops > 0.0, gemm->supports(bf16, bf16, f32)) << rates.what;
  EXPECT_NE(rates.what.find("1024^3, 1 thread"), std::string::npos) << rates.what;
}

// oneDNN's GPU form runs on Intel GPUs only, probed once per device. On any other device the probe
// says why not, and oneDNN itself refuses the device cleanly when asked anyway (PoCL's: "could not
// create an engine"). On an Intel GPU its probe GEMM must pass and the form matches the reference.
TEST_F(GemmClBlast, OneDnnGpuFormRunsOnIntelGpusAndIsRefusedCleanlyElsewhere) {
  const std::string why = kernels::onednn_gpu_refusal(*device_);
  const bool intel_gpu = device_->info().kind == device::DeviceKind::kGpu &&
                         device_->info().vendor.find("Intel") != std::string::npos;
  if (intel_gpu) {
    ASSERT_EQ(why, "") << "oneDNN on " << device_->info().name;
    auto gemm = kernels::make_onednn_gpu_gemm(*device_);
    check(*this, *gemm, Case{97, 50, 65, 3, Transpose::kYes, Transpose::kNo}, 61);
    return;
  }
  EXPECT_NE(why.find("not an Intel GPU"), std::string::npos) << why;
  try {
    kernels::make_onednn_gpu_gemm(*device_, /*require_intel=*/false);
    ADD_FAILURE() << "oneDNN accepted " << device_->info().name << " as a GPU";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("oneDNN refused the device"), std::string::npos) << e.what();
  }
}

// The library and the instruction set its kernels were chosen for, as the log states them; BLIS's
// kernels from CPUID where the CPU reports AVX-512 and the user left BLIS_ARCH_TYPE alone.
TEST(HostGemm, DescriptionsAndBlisKernelsByInstructionSet) {
  EXPECT_NE(kernels::onednn_description().find("oneDNN "), std::string::npos) << kernels::onednn_description();
  EXPECT_NE(kernels::onednn_description().find(" kernels"), std::string::npos) << kernels::onednn_description();
  EXPECT_NE(kernels::blis_description().find("BLIS "), std::string::npos) << kernels::blis_description();
  // BLIS's AVX2 kernels on an AVX-512 CPU (a brand string BLIS 0.9 cannot read, or Zen 4) keep it
  // out of auto; its AVX-512 kernels, or any kernels on a CPU without AVX-512, do not.
  EXPECT_EQ(kernels::blis_narrower_than_cpu(false, "haswell"), "");
  EXPECT_EQ(kernels::blis_narrower_than_cpu(true, "skx"), "");
  EXPECT_NE(kernels::blis_narrower_than_cpu(true, "haswell").find("'haswell'"), std::string::npos);
  EXPECT_NE(kernels::blis_narrower_than_cpu(true, "zen3"), "");
}

TEST(GemmPolicy, NamesAndErrors) {
  EXPECT_EQ(kernels::gemm_policy_from(std::string("onednn")), "onednn");
  EXPECT_EQ(kernels::gemm_policy_from(std::string("cpu-8x48")), "cpu-8x48");
  EXPECT_EQ(kernels::gemm_policy_from(std::string("tensor-core")), "tensor-core");
  EXPECT_EQ(kernels::MmaTile::parse("128x256x16.w64x64.s2").name(), "128x256x16.w64x64.s2");
  EXPECT_THROW(kernels::MmaTile::parse("128x128"), ConfigError);
  EXPECT_THROW(kernels::MmaTile::parse("128x128x8.w64x32.s2"), ConfigError);  // BK not a multiple of 16
  // Swizzled tiles: ".x", unpadded rows, powers of two only.
  const kernels::MmaTile swizzled = kernels::MmaTile::parse("128x128x32.w64x32.s3.x");
  EXPECT_TRUE(swizzled.swizzle);
  EXPECT_EQ(swizzled.name(), "128x128x32.w64x32.s3.x");
  EXPECT_EQ(swizzled.local_bytes(), 3u * (128 + 128) * 32 * 2);  // 48 KiB: 3 stages, no padding
  EXPECT_NE(swizzled.defines().find("-DSWIZZLE=1"), std::string::npos);
  EXPECT_NE(kernels::MmaTile{}.defines().find("-DSWIZZLE=0"), std::string::npos);
  EXPECT_THROW(kernels::MmaTile::parse("96x128x32.w32x32.s2.x"), ConfigError);  // BM not a power of two
  EXPECT_THROW(kernels::MmaTile::parse("128x128x32.w64x32.s2.y"), ConfigError);
  // Every candidate fits NVIDIA's 48 KiB of local memory with 16-bit elements; with TF32's 4-byte
  // ones only the two-stage 128x128x16 tile does (40 KiB), and none is swizzled.
  EXPECT_EQ(kernels::mma_tile_candidates(48 * 1024).size(), 11u);
  EXPECT_EQ(kernels::mma_tile_candidates(48 * 1024).front().name(), kernels::MmaTile{}.name());
  // The per-class choice times the measured best and the three swizzled shapes 48 KiB admits.
  const auto auto_tiles = kernels::mma_auto_tiles(48 * 1024);
  ASSERT_EQ(auto_tiles.size(), 4u);
  EXPECT_EQ(auto_tiles.front().name(), kernels::MmaTile{}.name());
  for (std::size_t i = 1; i < auto_tiles.size(); ++i) EXPECT_TRUE(auto_tiles[i].swizzle) << auto_tiles[i].name();
  EXPECT_EQ(kernels::mma_auto_tiles(40 * 1024).size(), 1u);  // only the padded 2-stage tile fits
  ASSERT_EQ(kernels::mma_tile_candidates(48 * 1024, 4).size(), 1u);
  EXPECT_EQ(kernels::mma_tile_candidates(48 * 1024, 4).front().name(), "128x128x16.w64x32.s2");
  EXPECT_EQ(kernels::mma_tile_candidates(48 * 1024, 4).front().local_bytes(4), 40960u);
  EXPECT_EQ(kernels::gemm_policy_from(std::string("gpu-direct")), "gpu-direct");
  EXPECT_EQ(kernels::DirectTile::parse("128x64x16.r8x8"), kernels::DirectTile{});
  EXPECT_THROW(kernels::DirectTile::parse("128x64"), ConfigError);
  EXPECT_THROW(kernels::DirectTile::parse("128x64x16.r8x6"), ConfigError);  // WN not a multiple of 4
  const kernels::DirectTile unrolled = kernels::DirectTile::parse("64x64x16.r8x4.u4");
  EXPECT_EQ(unrolled.ku, 4);
  EXPECT_EQ(unrolled.name(), "64x64x16.r8x4.u4");
  EXPECT_NE(unrolled.defines().find("-DKU=4"), std::string::npos);
  EXPECT_EQ(kernels::DirectTile{}.defines().find("KU"), std::string::npos);  // the whole slice: no define
  EXPECT_THROW(kernels::DirectTile::parse("64x64x16.r8x4.u3"), ConfigError);   // KU not dividing TK
  EXPECT_THROW(kernels::DirectTile::parse("64x64x16.r8x4.u16"), ConfigError);  // KU = TK is the plain name
  EXPECT_THROW(kernels::DirectTile::parse("64x64x16.r8x4.u4x"), ConfigError);
  EXPECT_THROW(kernels::DirectTile::parse("64x64x16.r8x4u4"), ConfigError);
  EXPECT_THROW(kernels::gemm_policy_from(std::string("fastest")), ConfigError);
  EXPECT_EQ(kernels::gemm_shape_class(GemmShape{Transpose::kNo, Transpose::kNo, 2048, 64, 384, 1}), "mbig.n64.k512.single");
  // The LM head's vocabulary-long dimension is a class of its own.
  EXPECT_EQ(kernels::gemm_shape_class(GemmShape{Transpose::kNo, Transpose::kNo, 2048, 384, 16384, 1}), "mbig.n512.khuge.single");
  EXPECT_EQ(kernels::gemm_shape_class(GemmShape{Transpose::kNo, Transpose::kYes, 4096, 4097, 8, 3}), "mbig.nhuge.k64.batched");
}

// The timed shape, by hand: m and n at most the cap, k at most 4x it, the multiply-adds at most cap^3.
TEST(GemmPolicy, TimingShapeKeepsALongKWithinTheBudget) {
  const auto timed = [](std::size_t m, std::size_t n, std::size_t k, std::size_t cap) {
    const GemmShape s = kernels::gemm_timing_shape(GemmShape{Transpose::kYes, Transpose::kNo, m, n, k, 6}, cap);
    EXPECT_EQ(s.a, Transpose::kYes);
    EXPECT_EQ(s.batch, 6u);  // the batch is tune's to cap
    return std::array<std::size_t, 3>{s.m, s.n, s.k};
  };
  using Dims = std::array<std::size_t, 3>;
  EXPECT_EQ(timed(2048, 1152, 384, 2048), (Dims{2048, 1152, 384}));      // within every cap: unchanged
  EXPECT_EQ(timed(16384, 384, 2048, 2048), (Dims{2048, 384, 2048}));     // m capped
  EXPECT_EQ(timed(2048, 384, 16384, 2048), (Dims{2048, 384, 8192}));     // k to 4x: 6.4e9 <= 2048^3
  EXPECT_EQ(timed(2048, 2048, 16384, 2048), (Dims{1024, 1024, 8192}));   // then m and n halved: 8.6e9
  EXPECT_EQ(timed(4096, 4096, 65536, 1024), (Dims{512, 512, 4096}));     // m and n at cap / 2: the budget exactly
  EXPECT_EQ(timed(150, 90, 1 << 20, 100), (Dims{50, 45, 400}));         // the larger of m and n halved each time
  EXPECT_EQ(timed(3000, 5000, 7000, 4096), (Dims{3000, 2048, 7000}));    // n capped, then halved: below m
}

}  // namespace
}  // namespace paxocl::testing
