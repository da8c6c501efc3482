// The LLaMA family through the job as users run it, unchanged from GPT's machinery: data
// parallelism over devices and processes and FSDP give the one-device losses, a checkpoint saved
// under FSDP resumes on one device (re-sharded) on the same curve, and `pax-ocl export` writes a
// Hugging Face LLaMA checkpoint that `--init_from` reads back to the same bytes.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = PAXOCL_BINARY;
const std::string kMpirun = std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 ";
// A small grouped-query LLaMA (4 query heads over 2 key/value heads) on the synthetic stream,
// whose schedule ends at step 8; a loss line per step.
const std::string kJob =
    " train --fdl.ARCHITECTURE=llama --fdl.NUM_KV_HEADS=2 --fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 --fdl.NUM_LAYERS=2"
    " --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=176 --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32"
    " --fdl.SUMMARY_INTERVAL_STEPS=1 --fdl.EVAL_INTERVAL_STEPS=0 --fdl.LR_COS_WARMUP=2 --fdl.LR_COS_DECAY_START=3"
    " --fdl.LR_COS_DECAY_END=8 --fdl.CHECKPOINT_EVERY_N_STEPS=4 --fdl.MAX_STEPS=8";

class CliLlama : public ::testing::Test {
 protected:
  void train(const std::string& launcher, const std::string& args, const std::string& job) {
    const auto r = run_command(launcher + kBinary + kJob + args + " --job_log_dir=" + (dir_.path() / job).string());
    ASSERT_EQ(r.exit_code, 0) << job << ": " << r.err;
  }
  // Losses within fp32 rounding of the batch split (the GPT's job tests use the same bound).
  void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-4 * want[i]) << what << " step " << i;
  }
  TempDir dir_;
};

TEST_F(CliLlama, ParallelLayoutsResumeAndExportFollowTheOneDeviceRun) {
  train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --save_weights=" + (dir_.path() / "one").string(), "one");
  const std::vector<float> one = train_losses(dir_.path() / "one");
  ASSERT_EQ(one.size(), 8u);
  EXPECT_LT(one.back(), one.front());

  train("", " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1]", "ici_dp");
  expect_close(train_losses(dir_.path() / "ici_dp"), one, "data parallel over 2 devices");
  train(kMpirun, " --devices=0 --fdl.PERCORE_BATCH_SIZE=2 --fdl.DCN_MESH_SHAPE=[2,1,1]", "dcn_dp");
  expect_close(train_losses(dir_.path() / "dcn_dp"), one, "data parallel over 2 processes");

  // FSDP for 4 steps, then resumed on one device: the checkpoint is re-sharded.
  train("", " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,2,1] --fdl.MAX_STEPS=4", "fsdp");
  expect_close(train_losses(dir_.path() / "fsdp"), std::vector<float>(one.begin(), one.begin() + 4), "FSDP [1,2,1]");
  train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4", "fsdp");
  expect_close(train_losses(dir_.path() / "fsdp", 5), std::vector<float>(one.begin() + 4, one.end()),
               "FSDP checkpoint resumed on 1 device");

  // Export of the last checkpoint: the run's own final weights, and they load back byte for byte.
  const fs::path exported = dir_.path() / "exported";
  const auto e = run_command(kBinary + " export --job_log_dir=" + (dir_.path() / "one").string() +
                             " --output=" + exported.string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  ASSERT_TRUE(fs::exists(exported / "config.json"));
  EXPECT_NE(file_bytes(exported / "config.json").find("\"num_key_value_heads\": 2"), std::string::npos);
  EXPECT_EQ(file_bytes(exported / "model.safetensors"), file_bytes(dir_.path() / "one" / "model.safetensors"));
  const auto r = run_command(kBinary + " train --fdl.DATA=synthetic --fdl.MAX_STEPS=0 --devices=0"
                             " --enable_checkpoint_saving=false --fdl.EVAL_INTERVAL_STEPS=0 --init_from=" +
                             exported.string() + " --save_weights=" + (dir_.path() / "back").string() +
                             " --job_log_dir=" + (dir_.path() / "back_job").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(file_bytes(dir_.path() / "back" / "model.safetensors"), file_bytes(exported / "model.safetensors"));
}

}  // namespace
}  // namespace paxocl::testing
