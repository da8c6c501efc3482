// State-space blocks (BLOCK_KINDS, praxis's SSM layer) as users run them: a hybrid of attention and
// SSM blocks trains to the same losses on every parallel layout as on one device (relative 2e-4,
// the bound every layout test uses), with the clFFT and the direct convolution alike; checkpoints
// resume it; `pax-ocl export` writes safetensors that load back to the same bytes and an llm.c file
// is refused; `pax-ocl sample` decodes it; bad SSM hyper-parameters are one-line errors; the log
// names the kernel set, attention and the SSM convolution once per device, with why.
#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = PAXOCL_BINARY;
const std::string kMpirun = std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 ";
// 10 steps of a 2-block hybrid (attention, then SSM), a loss line per step, one GEMM for every shape.
const std::string kHybrid =
    " train --fdl.DATA=synthetic --fdl.VOCAB_SIZE=500 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=256"
    " --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.BLOCK_KINDS=attention,ssm"
    " --fdl.SSM_NHEADS=8 --fdl.MAX_STEPS=10 --fdl.SUMMARY_INTERVAL_STEPS=1 --fdl.EVAL_INTERVAL_STEPS=0"
    " --fdl.EVAL_LOOP_NUM_BATCHES=1 --fdl.LR_COS_WARMUP=2 --fdl.LR_COS_DECAY_START=3 --fdl.LR_COS_DECAY_END=10"
    " --gemm=cpu-12x32";

class CliSsm : public ::testing::Test {
 protected:
  CommandResult train(const std::string& launcher, const std::string& args, const std::string& job) {
    const auto r = run_command(launcher + kBinary + kHybrid + args + " --job_log_dir=" + (dir_.path() / job).string());
    EXPECT_EQ(r.exit_code, 0) << job << ": " << r.err;
    return r;
  }
  void expect_close(const std::string& job, const std::vector<float>& want, const std::string& what, long first_step = 1) {
    const std::vector<float> got = train_losses(dir_.path() / job, first_step);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-4 * want[i]) << what << " step " << i + 1;
  }
  TempDir dir_;
};

TEST_F(CliSsm, HybridLayoutsMatchOneDevice) {
  // Global batch 8 everywhere; the layouts run SSM_CONVOLUTION=auto (on the CPU set at T = 32: direct).
  const auto one = train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=8 --fdl.SSM_CONVOLUTION=fft", "one");
  EXPECT_NE(one.out.find("blocks=attention,ssm"), std::string::npos) << one.out;
  const std::vector<float> want = train_losses(dir_.path() / "one");
  ASSERT_EQ(want.size(), 10u);
  EXPECT_LT(want.back(), want.front());
  // The direct convolution computes the same model.
  train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=8 --fdl.SSM_CONVOLUTION=direct", "direct");
  expect_close("direct", want, "SSM_CONVOLUTION=direct");
  const struct {
    std::string launcher, args, name;
  } layouts[] = {
      {"", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1]", "DP ICI [2,1,1]"},
      {"", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[1,2,1]", "FSDP ICI [1,2,1]"},
      {"", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[1,2,1] --fdl.FSDP_PREFETCH_DEPTH=0", "FSDP, one slot"},
      {"", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[1,1,2]", "TP ICI [1,1,2]"},
      {"", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[1,1,2] --fdl.SEQUENCE_PARALLEL=True", "TP+SP ICI [1,1,2]"},
      {kMpirun, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[2,1,1]", "DP DCN [2,1,1]"},
      {kMpirun, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[1,1,2]", "TP DCN [1,1,2]"},
  };
  int i = 0;
  for (const auto& l : layouts) {
    const std::string job = "layout" + std::to_string(i++);
    train(l.launcher, l.args, job);
    expect_close(job, want, l.name);
  }
}

TEST_F(CliSsm, CheckpointsResumeAndExportRoundTrips) {
  const std::string ckpt = " --devices=0 --fdl.PERCORE_BATCH_SIZE=8 --fdl.CHECKPOINT_EVERY_N_STEPS=5";
  train("", ckpt, "whole");
  const std::vector<float> all = train_losses(dir_.path() / "whole");
  ASSERT_EQ(all.size(), 10u);
  train("", ckpt + " --fdl.MAX_STEPS=5", "resumed");
  train("", ckpt, "resumed");  // from step 5
  expect_close("resumed", std::vector<float>(all.begin() + 5, all.end()), "resumed at step 5", 6);

  // Export: safetensors with the SSM's variables and its frozen hyper-parameters in the metadata.
  const fs::path exported = dir_.path() / "hybrid.safetensors", back = dir_.path() / "back.safetensors";
  const auto e = run_command(kBinary + " export --job_log_dir=" + (dir_.path() / "whole").string() + " --output=" +
                             exported.string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const std::string bytes = file_bytes(exported);
  for (const char* expected : {"transformer.h.1.ssm.C_re", "transformer.h.1.ssm.D", "transformer.h.0.attn.c_attn.weight",
                               "\"pax_ocl.block_kinds\":\"attention,ssm\"", "\"pax_ocl.ssm_hippo_type\":\"ss4d-1d\""}) {
    EXPECT_NE(bytes.find(expected), std::string::npos) << expected;
  }
  EXPECT_EQ(bytes.find("transformer.h.1.attn"), std::string::npos) << "the SSM block has no attention";
  // Loaded as initial weights (the file gives the blocks' kinds) and saved again: the same bytes.
  const auto r = run_command(kBinary + " train --fdl.DATA=synthetic --fdl.NUM_HEADS=4 --fdl.MAX_STEPS=0 --devices=0"
                             " --enable_checkpoint_saving=false --fdl.EVAL_INTERVAL_STEPS=0 --init_from=" +
                             exported.string() + " --save_weights=" + back.string() + " --job_log_dir=" +
                             (dir_.path() / "back").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(file_bytes(back), bytes);
  // llm.c's format has no SSM block: a one-line error.
  const auto bin = run_command(kBinary + " export --job_log_dir=" + (dir_.path() / "whole").string() + " --output=" +
                               (dir_.path() / "hybrid.bin").string());
  EXPECT_NE(bin.exit_code, 0);
  EXPECT_NE(bin.err.find("an llm.c checkpoint holds attention blocks only"), std::string::npos) << bin.err;
  EXPECT_FALSE(fs::exists(dir_.path() / "hybrid.bin"));

  // Sampling decodes the SSM block by its recurrence (tests/test_decode.cpp checks it against the convolution).
  const auto s = run_command(kBinary + " sample --devices=0 --job_log_dir=" + (dir_.path() / "whole").string() +
                             " --prompt_ids=1,2,3 --max_decode_steps=8 --temperature=0");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_FALSE(s.out.empty());
}

// How often `what` occurs in `text`.
long occurrences(const std::string& text, const std::string& what) {
  long n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST_F(CliSsm, LogNamesEachComputePathOncePerDevice) {
  // Two steps, data parallel over both PoCL devices, the CPU set asked for by name (this test also
  // runs under PAX_OCL_KERNELS=gpu): each line once per device, not per layer or per step.
  const std::string steps = " --fdl.MAX_STEPS=2 --fdl.LR_COS_DECAY_END=2 --fdl.LR_COS_DECAY_START=2 --fdl.LR_COS_WARMUP=1";
  const auto cpu = run_command("PAX_OCL_KERNELS=cpu " + kBinary + kHybrid + steps +
                               " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1] --job_log_dir=" +
                               (dir_.path() / "cpu").string());
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  for (const char* line : {"] Kernels on ", "] Attention on ", "] SSM convolution on "}) {
    EXPECT_EQ(occurrences(cpu.err, line), 2) << line << "\n" << cpu.err;
  }
  EXPECT_EQ(occurrences(cpu.err, ": the cpu set (PAX_OCL_KERNELS=cpu)"), 2) << cpu.err;
  EXPECT_EQ(occurrences(cpu.err, ": flash attention on the host (one native kernel per call: blocks of 64 queries, "), 2)
      << cpu.err;
  EXPECT_EQ(occurrences(cpu.err, ": direct kernels (SSM_CONVOLUTION=auto: 32 positions, at most 256 on the CPU "
                                 "kernel set, where they run faster than clFFT)"),
            2)
      << cpu.err;

  // One device on the GPU set, where auto convolves through clFFT.
  const auto gpu = run_command("PAX_OCL_KERNELS=gpu " + kBinary + kHybrid + steps +
                               " --devices=0 --fdl.PERCORE_BATCH_SIZE=2 --job_log_dir=" + (dir_.path() / "gpu").string());
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  EXPECT_EQ(occurrences(gpu.err, ": the gpu set (PAX_OCL_KERNELS=gpu; work-groups of "), 1) << gpu.err;
  // One line names the flash program that runs (float32 here: the FMA kernels), none another.
  EXPECT_EQ(occurrences(gpu.err, "] Attention on "), 1) << gpu.err;
  EXPECT_EQ(occurrences(gpu.err, ": flash attention in float32 FMAs (flash_attention_gpu.cl, head size 16, "), 1)
      << gpu.err;
  EXPECT_EQ(occurrences(gpu.err, "flash_attention_gpu.cl"), 1) << gpu.err;
  EXPECT_EQ(occurrences(gpu.err, "flash_attention_mma.cl"), 0) << gpu.err;
  EXPECT_EQ(occurrences(gpu.err, ": clFFT (FFTs of 64 points for 32 positions; it passed its self-check)"), 1) << gpu.err;
  EXPECT_EQ(occurrences(gpu.err, "] SSM convolution on "), 1) << gpu.err;
}

TEST_F(CliSsm, BadSsmHyperParametersAreOneLineErrors) {
  const struct {
    std::string args, says;
  } cases[] = {
      {" --fdl.BLOCK_KINDS=attention,mamba", "BLOCK_KINDS=attention,mamba: 'mamba' is not a block kind"},
      {" --fdl.NUM_LAYERS=3", "its 2 kinds repeat over the layers, so their number must divide NUM_LAYERS=3"},
      {" --fdl.SSM_L_MAX=16", "SSM_L_MAX=16"},
      {" --fdl.SSM_NHEADS=1", "SSM_NHEADS=1"},
      {" --fdl.ARCHITECTURE=llama --fdl.NUM_KV_HEADS=2", "SSM blocks are built on the gpt architecture"},
      {" --fdl.SSM_HIPPO_TYPE=ss4d-foo", "SSM_HIPPO_TYPE=ss4d-foo: use one of"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(kBinary + kHybrid + " --devices=0" + c.args + " --job_log_dir=" + (dir_.path() / "bad").string());
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
    EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace paxocl::testing
