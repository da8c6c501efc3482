// Every GEMM implementation (pax-ocl's CPU and GPU variants, CLBlast, and the auto-tuned choice)
// against a float64 reference on awkward shapes: 1, 7, 33, 1000, sizes that are not tile
// multiples, every transpose, offsets, padded leading dimensions, beta != 0, strided batches.
#include "kernels_cl/auto_gemm.h"
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

class GemmTest : public DeviceTest, public ::testing::WithParamInterface<std::string> {};

// Operand dtypes: A, B, C.
struct DTypes {
  device::DType a = device::DType::kF32, b = device::DType::kF32, c = device::DType::kF32;
};

void check(GemmTest& t, kernels::Gemm& gemm, const Case& c, std::uint64_t seed, DTypes dt = {}) {
  const GemmShape s{c.a, c.b, c.m, c.n, c.k, c.batch};
  const std::size_t off = 3, pad = 5;
  const std::size_t a_rows = c.a == Transpose::kNo ? c.m : c.k, a_cols = c.a == Transpose::kNo ? c.k : c.m;
  const std::size_t b_rows = c.b == Transpose::kNo ? c.k : c.n, b_cols = c.b == Transpose::kNo ? c.n : c.k;
  const std::size_t lda = a_cols + pad, ldb = b_cols + 1, ldc = c.n + 2;
  const std::size_t sa = a_rows * lda + 7, sb = b_rows * ldb + 1, sc = c.m * ldc + 3;
  // Inputs exactly representable in their dtypes, so the reference multiplies the same numbers.
  const auto A = GemmTest::rounded(dt.a, GemmTest::random(off + sa * c.batch, seed));
  const auto B = GemmTest::rounded(dt.b, GemmTest::random(off + sb * c.batch, seed + 1));
  auto C = GemmTest::rounded(dt.c, GemmTest::random(off + sc * c.batch, seed + 2));
  auto ab = t.upload(dt.a, A), bb = t.upload(dt.b, B), cb = t.upload(dt.c, C);
  const float alpha = 0.75f, beta = c.k % 2 ? 0.0f : -1.5f;  // both beta paths
  gemm.run(s, alpha, GemmOperand{ab.get(), off, lda, sa, dt.a}, GemmOperand{bb.get(), off, ldb, sb, dt.b}, beta,
           GemmOperand{cb.get(), off, ldc, sc, dt.c});
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
        out = alpha * acc + (beta != 0.0f ? beta * out : 0.0);
      }
  // Elements outside the matrices (padding, offsets) must be untouched: compare everything. Float32
  // accumulation (1e-4) plus one rounding of C to its dtype: half a unit in its last place. A GEMM
  // that accumulated in 16 bits would be off by ~sqrt(k) units at k = 1000.
  expect_close(t.download(cb, C.size()), C, 1e-4, 1e-4 + device::dtype_unit_roundoff(dt.c), gemm.name().c_str());
}

TEST_P(GemmTest, MatchesFloat64ReferenceOnAwkwardShapes) {
  auto gemm = kernels::make_gemm(*device_, cache_, GetParam());
  std::uint64_t seed = 100;
  for (Transpose ta : {Transpose::kNo, Transpose::kYes})
    for (Transpose tb : {Transpose::kNo, Transpose::kYes}) {
      for (const Case& c : {Case{1, 1, 1, 1, ta, tb}, Case{7, 33, 1, 1, ta, tb}, Case{33, 7, 1000, 1, ta, tb},
                            Case{1, 1000, 7, 1, ta, tb}, Case{97, 50, 65, 1, ta, tb}, Case{7, 33, 19, 3, ta, tb},
                            Case{1, 7, 33, 2, ta, tb}, Case{33, 1, 7, 1, ta, tb}}) {
        check(*this, *gemm, c, seed);
        seed += 3;
      }
    }
}

TEST_P(GemmTest, LargerModelShapes) {
  if (GetParam() == "gpu-64x64") GTEST_SKIP() << "work-group variant: correct on PoCL but too slow for large shapes";
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
  for (DType h : {DType::kBF16, DType::kF16}) {
    const std::vector<DTypes> mixes = {{h, h, DType::kF32}, {h, h, h}, {DType::kF32, h, h}};
    for (const DTypes& dt : mixes) {
      if (!gemm->supports(dt.a, dt.b, dt.c)) {
        EXPECT_EQ(GetParam(), "clblast") << "only CLBlast takes float32 alone";
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

INSTANTIATE_TEST_SUITE_P(Variants, GemmTest, ::testing::Values("cpu-8x48", "cpu-12x32", "gpu-64x64", "clblast", "auto"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(GemmPolicy, NamesAndErrors) {
  EXPECT_EQ(kernels::gemm_policy_from(std::string("cpu-8x48")), "cpu-8x48");
  EXPECT_THROW(kernels::gemm_policy_from(std::string("fastest")), ConfigError);
  EXPECT_EQ(kernels::gemm_shape_class(GemmShape{Transpose::kNo, Transpose::kNo, 2048, 64, 384, 1}), "mbig.n64.k512.single");
}

}  // namespace
}  // namespace paxocl::testing
