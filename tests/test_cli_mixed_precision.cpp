// FPROP_DTYPE as users run it: 200 training steps in bfloat16 and in float16 follow float32's
// loss curve; float16's dynamic loss scale halves on overflow, grows back, and is reported in
// TensorBoard; the start-up lines show the activation memory halved; MATMUL_PRECISION=tf32 without
// tensor cores trains in float32. (Resuming 16-bit runs bitwise: test_cli_checkpoint.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

const std::string kBinary = PAXOCL_BINARY;
// The synthetic data's small GPT, 200 steps, a summary every 20 (each the mean of 20 steps' losses).
const std::string kJob =
    " train --fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=256"
    " --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.EVAL_INTERVAL_STEPS=0"
    " --fdl.EVAL_LOOP_NUM_BATCHES=1 --fdl.LR_COS_WARMUP=10 --fdl.LR_COS_DECAY_START=11 --fdl.LR_COS_DECAY_END=200"
    " --fdl.ENABLE_CHECKPOINT_SAVING=False --fdl.SUMMARY_INTERVAL_STEPS=20";

CommandResult train(const TempDir& dir, const std::string& name, const std::string& args, const std::string& env = "") {
  const auto r = run_command(env + kBinary + kJob + args + " --job_log_dir=" + (dir.path() / name).string());
  EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
  return r;
}

// The losses (TensorBoard's float32 values) of 16-bit runs stay within one unit roundoff u of the
// format (relative: 2^-8 bfloat16, 2^-11 float16) of float32's at every summary, and the loss
// falls by more than 2 nats: the curves are the same. Measured on PoCL (2-core EPYC): at most
// 0.062 u for bfloat16 and 0.014 u for float16; a kernel that mishandled 16 bits, a loss scale
// left in the gradients or a lost update would move them by far more.
TEST(CliMixedPrecision, TwoHundredStepsInSixteenBitsFollowFloat32sLossCurve) {
  TempDir dir;
  const auto f32 = train(dir, "float32", " --fdl.MAX_STEPS=200 --fdl.FPROP_DTYPE=float32");
  const auto want = read_scalars(dir.path() / "float32" / "summaries" / "train")["loss"];
  ASSERT_EQ(want.size(), 10u);
  EXPECT_LT(want.back().value, want.front().value - 2.0) << "the loss must fall";
  struct Format {
    std::string name;
    double u;  // 2^-(mantissa bits + 1)
  };
  for (const Format& format : {Format{"bfloat16", std::ldexp(1.0, -8)}, Format{"float16", std::ldexp(1.0, -11)}}) {
    const std::string& name = format.name;
    const auto r = train(dir, name, " --fdl.MAX_STEPS=200 --fdl.FPROP_DTYPE=" + name);
    const auto got = read_scalars(dir.path() / name / "summaries" / "train")["loss"];
    ASSERT_EQ(got.size(), want.size()) << name;
    const double u = format.u;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].step, want[i].step);
      const double rel = std::abs(got[i].value - want[i].value) / want[i].value;
      EXPECT_LE(rel, u) << name << " at step " << got[i].step << ": " << got[i].value << " vs " << want[i].value;
      worst = std::max(worst, rel);
    }
    std::printf("%s: largest relative difference from float32 %.3g (%.3f u)\n", name.c_str(), worst, worst / u);
    // Activations and their gradients are stored in 16 bits: about half of float32's (the
    // per-token float32 loss statistics stay).
    const double ratio = activation_mib(r.out) / activation_mib(f32.out);
    EXPECT_GT(ratio, 0.45) << r.out;
    EXPECT_LT(ratio, 0.55) << r.out << f32.out;
  }
}

// Starting at 2^24 the float16 gradients overflow: those steps are skipped and the scale halves
// until they fit; after every 5 clean steps it doubles again. TensorBoard has the scale and the
// count of overflows at every summary, and the job still trains.
TEST(CliMixedPrecision, Float16LossScaleHalvesOnOverflowAndGrowsBack) {
  TempDir dir;
  const auto r = train(dir, "job",
                       " --fdl.MAX_STEPS=40 --fdl.SUMMARY_INTERVAL_STEPS=5 --fdl.FPROP_DTYPE=float16"
                       " --fdl.LOSS_SCALE_INITIAL=16777216 --fdl.LOSS_SCALE_GROWTH_INTERVAL=5");
  auto scalars = read_scalars(dir.path() / "job" / "summaries" / "train");
  const auto& scale = scalars["loss_scale"];
  const auto& overflows = scalars["loss_scale_overflows"];
  const auto& skipped = scalars["steps_skipped"];
  ASSERT_EQ(scale.size(), 8u);
  ASSERT_EQ(overflows.size(), 8u);
  EXPECT_GE(overflows.front().value, 1.0f) << "2^24 x the loss overflows float16's 65504";
  EXPECT_LT(scale.front().value, 16777216.0f);
  EXPECT_EQ(skipped.back().value, overflows.back().value) << "every skipped step was an overflow";
  bool grew = false;
  for (std::size_t i = 0; i < scale.size(); ++i) {
    const float s = scale[i].value;
    int exponent = 0;
    EXPECT_EQ(std::frexp(s, &exponent), 0.5f) << s << " is not a power of two";
    if (i > 0 && s > scale[i - 1].value) grew = true;
  }
  EXPECT_TRUE(grew) << "after 5 clean steps the scale doubles";
  const std::vector<float> losses = train_losses(dir.path() / "job");
  ASSERT_EQ(losses.size(), 8u);
  EXPECT_LT(losses.back(), losses.front());
  EXPECT_NE(r.err.find("overflow(s) skipped in this run"), std::string::npos) << r.err;
}

// MATMUL_PRECISION=tf32 on a device without TF32 tensor cores (every PoCL device): one log line
// says the float32 GEMMs stay float32, and the losses are bitwise float32's. A value other than
// float32 or tf32 is a one-line error. (TF32 itself: test_gemm's emulated and on-GPU tests.)
TEST(CliMixedPrecision, Tf32WithoutTensorCoresSaysSoAndTrainsInFloat32) {
  TempDir dir;
  train(dir, "float32", " --fdl.MAX_STEPS=20 --fdl.FPROP_DTYPE=float32");
  const auto r = train(dir, "tf32", " --fdl.MAX_STEPS=20 --fdl.FPROP_DTYPE=float32 --fdl.MATMUL_PRECISION=tf32");
  EXPECT_NE(r.err.find("MATMUL_PRECISION=tf32: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("runs its float32 GEMMs in float32 (no TF32 tensor cores"), std::string::npos) << r.err;
  const auto want = read_scalars(dir.path() / "float32" / "summaries" / "train")["loss"];
  const auto got = read_scalars(dir.path() / "tf32" / "summaries" / "train")["loss"];
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(got.empty());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].value, want[i].value) << "at step " << got[i].step;

  const auto bad = run_command(kBinary + kJob + " --fdl.MATMUL_PRECISION=fp16 --job_log_dir=" + (dir.path() / "bad").string());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("MATMUL_PRECISION=fp16: use one of float32, tf32"), std::string::npos) << bad.err;
}

// Every CPU GEMM path (oneDNN and BLIS as native kernels, pax-ocl's own OpenCL GEMM) trains float32
// to the same losses within float32 rounding over 20 steps (they sum in different orders); the log
// names the library and the instruction set its kernels run, and oneDNN's OpenMP threads wait
// passively (pax-ocl sets OMP_WAIT_POLICY and restarts itself: openmp_wait_policy.h). A user's
// BLIS_ARCH_TYPE, on which BLIS 0.9.0 aborts whatever its value, is ignored with a warning.
TEST(CliMixedPrecision, EveryCpuGemmPathTrainsToTheSameFloat32Losses) {
  TempDir dir;
  train(dir, "cpu-12x32", " --fdl.MAX_STEPS=20 --fdl.FPROP_DTYPE=float32 --gemm=cpu-12x32");
  const auto want = read_scalars(dir.path() / "cpu-12x32" / "summaries" / "train")["loss"];
  ASSERT_FALSE(want.empty());
  for (const std::string policy : {"onednn", "blis"}) {
    const auto r = train(dir, policy, " --fdl.MAX_STEPS=20 --fdl.FPROP_DTYPE=float32 --gemm=" + policy,
                         policy == "blis" ? "BLIS_ARCH_TYPE=3 " : "");
    if (r.err.find("through BLIS 0.9.0,") != std::string::npos) {
      EXPECT_NE(r.err.find("BLIS_ARCH_TYPE=3 ignored: BLIS 0.9.0 aborts whenever it is set"), std::string::npos) << r.err;
    }
    const std::regex library(policy == "onednn" ? R"(GEMM on CPU devices through oneDNN [0-9.]+, \w+ kernels \(OpenMP waits: PASSIVE\))"
                                                : R"(GEMM on CPU devices through BLIS [0-9.]+, \w+ kernels)");
    EXPECT_TRUE(std::regex_search(r.err, library)) << r.err;
    const auto got = read_scalars(dir.path() / policy / "summaries" / "train")["loss"];
    ASSERT_EQ(got.size(), want.size()) << policy;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i].value, want[i].value, 1e-5 * std::abs(want[i].value)) << policy << " at step " << got[i].step;
    }
  }
}

// bfloat16 with --gemm=onednn: oneDNN takes every GEMM of the step but attention's (the host's flash
// attention multiplies its own), and the losses follow float32's within bfloat16's unit roundoff.
// It used to be refused at start-up, for a float32 x bfloat16 product only the GEMM attention path
// runs; with that path (PAX_OCL_CPU_FLASH=0) the refusal stays, one line naming why and what to use.
// Skipped where oneDNN has no bfloat16 matmul of its own (CPUs without AVX-512).
TEST(CliMixedPrecision, OneDnnTrainsInBfloat16BesideTheHostsFlashAttention) {
  TempDir dir;
  const auto bf16 = run_command(kBinary + kJob + " --fdl.MAX_STEPS=20 --fdl.FPROP_DTYPE=bfloat16 --gemm=onednn --job_log_dir=" +
                                (dir.path() / "onednn").string());
  if (bf16.exit_code != 0 && bf16.err.find("does not take bfloat16 operands") != std::string::npos) {
    GTEST_SKIP() << "oneDNN has no bfloat16 matmul on this CPU: " << bf16.err;
  }
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  EXPECT_NE(bf16.err.find("flash attention on the host"), std::string::npos) << bf16.err;
  train(dir, "float32", " --fdl.MAX_STEPS=20 --fdl.FPROP_DTYPE=float32 --gemm=onednn");
  const auto want = read_scalars(dir.path() / "float32" / "summaries" / "train")["loss"];
  const auto got = read_scalars(dir.path() / "onednn" / "summaries" / "train")["loss"];
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(got.empty());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].value, want[i].value, std::ldexp(1.0, -8) * std::abs(want[i].value)) << "step " << got[i].step;
  }

  const auto gemm_attention = run_command("PAX_OCL_CPU_FLASH=0 " + kBinary + kJob +
                                          " --fdl.MAX_STEPS=1 --fdl.FPROP_DTYPE=bfloat16 --gemm=onednn --job_log_dir=" +
                                          (dir.path() / "gemm_attention").string());
  EXPECT_EQ(gemm_attention.exit_code, 2);
  EXPECT_NE(gemm_attention.err.find("has no float32 x bfloat16 product, which attention runs as a GEMM"),
            std::string::npos) << gemm_attention.err;
  EXPECT_NE(gemm_attention.err.find("(PAX_OCL_CPU_FLASH=0)"), std::string::npos) << gemm_attention.err;
}

}  // namespace
}  // namespace paxocl::testing
