// Weights files carry every setting that shapes the computation (issue 42): for each family (GPT,
// an attention + SSM hybrid, LLaMA with grouped KV heads) a short job is exported, evaluated from the
// exported file with no model flags at all (the experiment's defaults differ from the job's in every
// shape), and must give the job's own evaluation loss; a model flag that contradicts the file is a
// one-line refusal naming both values.
#include <algorithm>

#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = PAXOCL_BINARY;
// What the job and the evaluation share: the data, batch and evaluation pass (no model flags).
const std::string kData = " --fdl.DATA=synthetic --fdl.PERCORE_BATCH_SIZE=2 --fdl.EVAL_LOOP_NUM_BATCHES=1 --devices=0"
                          " --gemm=cpu-12x32";

struct Family {
  std::string name, model_flags, output;
  std::string contradiction, flag, file_value;  // a flag disagreeing with the file, its name, the file's value
};

const Family kFamilies[] = {
    {"gpt",
     " --fdl.VOCAB_SIZE=300 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=48 --fdl.HIDDEN_DIMS=96 --fdl.NUM_HEADS=3"
     " --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=24",
     "gpt.safetensors", " --fdl.NUM_HEADS=6", "NUM_HEADS=6", "3 heads"},
    {"gpt-llmc",
     " --fdl.VOCAB_SIZE=300 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=48 --fdl.HIDDEN_DIMS=192 --fdl.NUM_HEADS=3"
     " --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=24",
     "gpt.bin", " --fdl.MODEL_DIMS=96", "MODEL_DIMS=96", "MODEL_DIMS=48"},
    {"hybrid",
     " --fdl.VOCAB_SIZE=300 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=128 --fdl.NUM_HEADS=4"
     " --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.BLOCK_KINDS=attention,ssm --fdl.SSM_NHEADS=8"
     " --fdl.SSM_STEP_SIZE=0.02",
     "hybrid.safetensors", " --fdl.SSM_STEP_SIZE=0.01", "SSM_STEP_SIZE=0.01", "SSM_STEP_SIZE=0.02"},
    {"llama",
     " --fdl.ARCHITECTURE=llama --fdl.VOCAB_SIZE=300 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=96"
     " --fdl.NUM_HEADS=4 --fdl.NUM_KV_HEADS=2 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.ROPE_BASE=500",
     "llama", " --fdl.NUM_KV_HEADS=4", "NUM_KV_HEADS=4", "NUM_KV_HEADS=2"},
};

float eval_loss(const fs::path& job, long step) {
  const auto scalars = read_scalars(job / "summaries" / "eval_train");
  for (const ScalarPoint& p : scalars.at("loss")) {
    if (p.step == step) return p.value;
  }
  ADD_FAILURE() << job << ": no eval_train loss at step " << step;
  return 0;
}

class CliWeights : public ::testing::TestWithParam<Family> {
 protected:
  TempDir dir_;
};

TEST_P(CliWeights, ExportedFileAloneGivesTheJobsNumbersAndRefusesContradictions) {
  const Family& f = GetParam();
  const fs::path job = dir_.path() / "job", weights = dir_.path() / f.output;
  const auto t = run_command(kBinary + " train" + kData + f.model_flags +
                             " --fdl.MAX_STEPS=3 --fdl.EVAL_INTERVAL_STEPS=3 --fdl.CHECKPOINT_EVERY_N_STEPS=3"
                             " --job_log_dir=" + job.string());
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto e = run_command(kBinary + " export --job_log_dir=" + job.string() + " --output=" + weights.string());
  ASSERT_EQ(e.exit_code, 0) << e.err;

  // No model flag: every shape from the file (Default's are all different).
  const fs::path again = dir_.path() / "eval";
  const auto r = run_command(kBinary + " eval" + kData + " --init_from=" + weights.string() + " --job_log_dir=" + again.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(eval_loss(again, 0), eval_loss(job, 3));

  // A model flag that disagrees with the file: refused in one line naming both values.
  const auto bad = run_command(kBinary + " eval" + kData + f.contradiction + " --init_from=" + weights.string() +
                               " --job_log_dir=" + (dir_.path() / "bad").string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("contradicts"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find(f.flag), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find(f.file_value), std::string::npos) << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  // A flag with the file's own value: accepted.
  const auto ok = run_command(kBinary + " eval" + kData + " --fdl.NUM_LAYERS=2 --init_from=" + weights.string() +
                              " --job_log_dir=" + (dir_.path() / "ok").string());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

INSTANTIATE_TEST_SUITE_P(Families, CliWeights, ::testing::ValuesIn(kFamilies),
                         [](const auto& family) {
                           std::string n = family.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace paxocl::testing
