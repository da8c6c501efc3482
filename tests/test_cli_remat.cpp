// Rematerialization (CHECKPOINT_POLICY) as users run it: on every layout (one device, data
// parallelism, FSDP inside a process and across processes, tensor parallelism with and without
// sequence parallelism), for GPT, LLaMA and a GPT/S4D hybrid, in float32 and bfloat16, 10 steps under
// a policy give SAVE_EVERYTHING's losses, final weights and checkpoint bit for bit, with less
// activation memory per device (the start-up banner); an unknown policy is a one-line error.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstdio>
#include <map>

#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = PAXOCL_BINARY;
const std::string kMpirun = std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 ";
const std::string kSchedule =
    " --fdl.DATA=synthetic --fdl.VOCAB_SIZE=500 --fdl.NUM_LAYERS=3 --fdl.MODEL_DIMS=64 --fdl.NUM_HEADS=4"
    " --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.MAX_STEPS=10 --fdl.SUMMARY_INTERVAL_STEPS=1"
    " --fdl.EVAL_INTERVAL_STEPS=0 --fdl.CHECKPOINT_EVERY_N_STEPS=5 --fdl.LR_COS_WARMUP=2"
    " --fdl.LR_COS_DECAY_START=3 --fdl.LR_COS_DECAY_END=10";
const std::string kGpt = " train --fdl.HIDDEN_DIMS=256" + kSchedule;
const std::string kLlama = " train --fdl.ARCHITECTURE=llama --fdl.HIDDEN_DIMS=176 --fdl.NUM_KV_HEADS=2" + kSchedule;
const std::string kHybrid = kGpt + " --fdl.BLOCK_KINDS=attention,ssm,attention";

struct RematCase {
  std::string name, launcher, model, layout, dtype, policy;
};
void PrintTo(const RematCase& c, std::ostream* os) { *os << c.name; }

// The tensor files of a job's checkpoint at `step` (parameters, Adam's moments), by name.
std::map<std::string, std::string> checkpoint_parts(const fs::path& job, int step) {
  std::map<std::string, std::string> parts;
  char step_dir[32];
  std::snprintf(step_dir, sizeof step_dir, "checkpoint_%08d", step);
  const fs::path dir = job / "checkpoints" / step_dir;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("part-", 0) == 0) parts[name] = file_bytes(entry.path());
  }
  return parts;
}

class CliRemat : public ::testing::TestWithParam<RematCase> {
 protected:
  CommandResult train(const RematCase& c, const std::string& policy, const std::string& job) {
    const fs::path dir = dir_.path() / job;
    const auto r = run_command(c.launcher + kBinary + c.model + c.layout + " --fdl.FPROP_DTYPE=" + c.dtype +
                               " --fdl.CHECKPOINT_POLICY=" + policy + " --save_weights=" + (dir / "final.safetensors").string() +
                               " --job_log_dir=" + dir.string());
    EXPECT_EQ(r.exit_code, 0) << job << ": " << r.err;
    return r;
  }
  TempDir dir_;
};

TEST_P(CliRemat, TenStepsEqualSaveEverythingBitForBitWithLessActivationMemory) {
  const RematCase& c = GetParam();
  const CommandResult everything = train(c, "SAVE_EVERYTHING", "everything");
  const CommandResult remat = train(c, c.policy, "remat");
  const std::vector<float> want = train_losses(dir_.path() / "everything");
  ASSERT_EQ(want.size(), 10u);
  EXPECT_EQ(train_losses(dir_.path() / "remat"), want);
  const std::string weights = file_bytes(dir_.path() / "everything" / "final.safetensors");
  ASSERT_FALSE(weights.empty());
  EXPECT_TRUE(file_bytes(dir_.path() / "remat" / "final.safetensors") == weights) << "final weights differ";
  const auto parts = checkpoint_parts(dir_.path() / "everything", 10);
  ASSERT_FALSE(parts.empty());
  EXPECT_TRUE(checkpoint_parts(dir_.path() / "remat", 10) == parts) << "checkpoints differ";
  const double saved = activation_mib(everything.out), kept = activation_mib(remat.out);
  ASSERT_GT(saved, 0.0) << everything.out;
  EXPECT_LT(kept, saved) << remat.out;
  EXPECT_NE(remat.out.find("CHECKPOINT_POLICY=" + c.policy), std::string::npos) << remat.out;
  // MFU counts the model's FLOPs; HFU adds the recompute's GEMMs (equal without a recompute).
  for (const char* job : {"everything", "remat"}) {
    auto scalars = read_scalars(dir_.path() / job / "summaries" / "train");
    ASSERT_EQ(scalars["hfu"].size(), scalars["mfu"].size());
    ASSERT_FALSE(scalars["mfu"].empty());
    for (std::size_t i = 0; i < scalars["mfu"].size(); ++i) {
      if (std::string(job) == "everything") {
        EXPECT_EQ(scalars["hfu"][i].value, scalars["mfu"][i].value);
      } else {  // SAVE_DOT_ONLY recomputes norms alone: no counted FLOPs
        EXPECT_GE(scalars["hfu"][i].value, scalars["mfu"][i].value);
      }
    }
  }
  EXPECT_NE(remat.out.find("HFU"), std::string::npos);
  EXPECT_EQ(everything.out.find("HFU"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, CliRemat,
    ::testing::Values(
        RematCase{"GptOneDeviceSaveNothingF32", "", kGpt, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4", "float32", "SAVE_NOTHING"},
        RematCase{"GptOneDeviceDotsWithNoBatchDimBf16", "", kGpt, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4", "bfloat16",
                  "SAVE_DOT_WITH_NO_BATCH_DIM"},
        RematCase{"GptDataParallelSaveNothingBf16", "", kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1]",
                  "bfloat16", "SAVE_NOTHING"},
        RematCase{"GptFsdpDotOnlyF32", "", kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,2,1]", "float32",
                  "SAVE_DOT_ONLY"},
        RematCase{"GptFsdpAcrossProcessesSaveNothingBf16", kMpirun, kGpt,
                  " --devices=0 --fdl.PERCORE_BATCH_SIZE=2 --fdl.DCN_MESH_SHAPE=[1,2,1]", "bfloat16", "SAVE_NOTHING"},
        RematCase{"GptTensorQkvOutProjF32", "", kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,1,2]", "float32",
                  "SAVE_QKV_OUT_PROJ"},
        RematCase{"GptTensorSequenceParallelSaveNothingBf16", "", kGpt,
                  " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,1,2] --fdl.SEQUENCE_PARALLEL=true", "bfloat16",
                  "SAVE_NOTHING"},
        RematCase{"LlamaOneDeviceSaveNothingBf16", "", kLlama, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4", "bfloat16",
                  "SAVE_NOTHING"},
        RematCase{"LlamaFsdpDotExceptLogitsFfn1F32", "", kLlama, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,2,1]",
                  "float32", "SAVE_DOT_EXCEPT_LOGITS_FFN1"},
        RematCase{"LlamaTensorSequenceParallelKvReplicatedOutProjF32", "", kLlama + " --fdl.NUM_KV_HEADS=1",
                  " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,1,2] --fdl.SEQUENCE_PARALLEL=true", "float32",
                  "SAVE_OUT_PROJ"},
        RematCase{"HybridOneDeviceSaveNothingF32", "", kHybrid, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4", "float32",
                  "SAVE_NOTHING"},
        RematCase{"HybridTensorSequenceParallelContextBf16", "", kHybrid,
                  " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,1,2] --fdl.SEQUENCE_PARALLEL=true", "bfloat16",
                  "SAVE_CONTEXT"}),
    [](const ::testing::TestParamInfo<RematCase>& c) { return c.param.name; });

TEST(CliRematErrors, UnknownPolicyIsAOneLineErrorListingTheValidOnes) {
  TempDir dir;
  const auto r = run_command(kBinary + kGpt + " --fdl.CHECKPOINT_POLICY=SAVE_HALF --job_log_dir=" + (dir.path() / "j").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("CHECKPOINT_POLICY"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SAVE_DOT_WITH_NO_BATCH_DIM"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace paxocl::testing
