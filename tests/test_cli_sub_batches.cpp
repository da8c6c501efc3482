// Gradient accumulation (NUM_SUB_BATCHES) as users run it: on one device, data parallelism, FSDP
// inside a process and across processes, and tensor with sequence parallelism, 10 steps with each
// device's batch in 2 sub-batches give the unsplit job's losses within float32 rounding (the same
// data order), with less activation memory per device; with rematerialization on top; a count that
// does not divide the batch is a one-line error. Under SEQUENCE_PARALLEL (GPT's LayerNorm, LLaMA's
// RMSNorm) the weights after the steps match too, element by element: each sub-batch's norm
// gradients are summed over the tensor group once (losses alone could not tell).
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = PAXOCL_BINARY;
const std::string kMpirun = std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 ";
const std::string kGpt =
    " train --fdl.DATA=synthetic --fdl.VOCAB_SIZE=500 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64 --fdl.NUM_HEADS=4"
    " --fdl.DIMS_PER_HEAD=16 --fdl.HIDDEN_DIMS=256 --fdl.MAX_SEQ_LEN=32 --fdl.MAX_STEPS=10"
    " --fdl.SUMMARY_INTERVAL_STEPS=1 --fdl.EVAL_INTERVAL_STEPS=0 --fdl.LR_COS_WARMUP=2 --fdl.LR_COS_DECAY_START=3"
    " --fdl.LR_COS_DECAY_END=10 --gemm=cpu-12x32 --fdl.FPROP_DTYPE=float32";

struct SubBatchCase {
  std::string name, launcher, layout, extra;
  bool compare_weights = false;  // --save_weights of both jobs, element by element
};
void PrintTo(const SubBatchCase& c, std::ostream* os) { *os << c.name; }

class CliSubBatches : public ::testing::TestWithParam<SubBatchCase> {
 protected:
  CommandResult train(const SubBatchCase& c, const std::string& more, const std::string& job) {
    const auto r = run_command(c.launcher + kBinary + kGpt + c.layout + more + " --job_log_dir=" + (dir_.path() / job).string());
    EXPECT_EQ(r.exit_code, 0) << job << ": " << r.err;
    return r;
  }
  TempDir dir_;
};

TEST_P(CliSubBatches, LossesEqualTheUnsplitJobsWithLessActivationMemory) {
  const SubBatchCase& c = GetParam();
  auto save = [&](const std::string& job) {
    return c.compare_weights ? " --save_weights=" + (dir_.path() / job / "final.safetensors").string() : std::string();
  };
  const CommandResult whole = train(c, save("whole"), "whole");
  const CommandResult split = train(c, " --fdl.NUM_SUB_BATCHES=2" + c.extra + save("split"), "split");
  const std::vector<float> want = train_losses(dir_.path() / "whole"), got = train_losses(dir_.path() / "split");
  ASSERT_EQ(want.size(), 10u);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-4 * want[i]) << "step " << i + 1;
  EXPECT_LT(activation_mib(split.out), activation_mib(whole.out)) << split.out;
  // The banner's activations describe what they are sized for: one sub-batch of the rows.
  EXPECT_NE(split.out.find("x 32 tokens, one of NUM_SUB_BATCHES=2 sub-batches"), std::string::npos) << split.out;
  EXPECT_EQ(whole.out.find("sub-batches"), std::string::npos) << whole.out;
  if (!c.compare_weights) return;
  const std::vector<float> w = weights_of(dir_.path() / "whole" / "final.safetensors");
  const std::vector<float> s = weights_of(dir_.path() / "split" / "final.safetensors");
  ASSERT_EQ(s.size(), w.size());
  ASSERT_GT(s.size(), 1000u);
  for (std::size_t i = 0; i < s.size(); ++i) ASSERT_NEAR(s[i], w[i], 2e-5) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, CliSubBatches,
    ::testing::Values(
        SubBatchCase{"OneDevice", "", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4", ""},
        SubBatchCase{"DataParallel", "", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1]", ""},
        SubBatchCase{"Fsdp", "", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[1,2,1]", ""},
        SubBatchCase{"FsdpSaveNothing", "", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[1,2,1]",
                     " --fdl.CHECKPOINT_POLICY=SAVE_NOTHING"},
        SubBatchCase{"FsdpAcrossProcesses", kMpirun, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[1,2,1]",
                     ""},
        SubBatchCase{"TensorSequenceParallel", "",
                     " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,1,2] --fdl.SEQUENCE_PARALLEL=true", "", true},
        SubBatchCase{"LlamaTensorSequenceParallel", "",
                     " --fdl.ARCHITECTURE=llama --fdl.HIDDEN_DIMS=176 --fdl.NUM_KV_HEADS=2 --fdl.PERCORE_BATCH_SIZE=2"
                     " --fdl.ICI_MESH_SHAPE=[1,1,2] --fdl.SEQUENCE_PARALLEL=true",
                     "", true}),
    [](const ::testing::TestParamInfo<SubBatchCase>& c) { return c.param.name; });

TEST(CliSubBatchErrors, ACountThatDoesNotDivideTheBatchIsAOneLineError) {
  TempDir dir;
  const auto r = run_command(kBinary + kGpt + " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.NUM_SUB_BATCHES=3 --job_log_dir=" +
                             (dir.path() / "j").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("NUM_SUB_BATCHES=3 does not divide the 4 sequences"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace paxocl::testing
