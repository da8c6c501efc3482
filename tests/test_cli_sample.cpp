// `pax-ocl sample` as users run it: text from a job's checkpoint with its tokenizer (the same seed
// writes the same text; greedy decoding is deterministic), ids from an exported weights file, and
// bad arguments as one-line errors with exit code 2.
#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = PAXOCL_BINARY;

class CliSample : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const auto r = run_command(kBinary + " train --devices=0 --fdl.NUM_LAYERS=1 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=128"
                               " --fdl.NUM_HEADS=2 --fdl.DIMS_PER_HEAD=32 --fdl.MAX_SEQ_LEN=32 --fdl.MAX_STEPS=3"
                               " --fdl.EVAL_INTERVAL_STEPS=0 --fdl.EVAL_LOOP_NUM_BATCHES=1 --job_log_dir=" + job().string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("sample (temperature 0.8, top-k 40"), std::string::npos) << r.out;  // the job's own sample
  }
  static void TearDownTestSuite() { delete dir_; }
  static fs::path job() { return dir_->path() / "job"; }
  static CommandResult sample(const std::string& args) {
    return run_command(kBinary + " sample --devices=0 --job_log_dir=" + job().string() + " " + args);
  }
  static inline TempDir* dir_ = nullptr;
};

TEST_F(CliSample, TheSameSeedWritesTheSameTextAndGreedyIsDeterministic) {
  const auto a = sample("--prompt='In the beginning' --max_decode_steps=12 --num_samples=2 --seed=3 --top_k=20");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("--- sample 1 ---\nIn the beginning"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("--- sample 2 ---\nIn the beginning"), std::string::npos) << a.out;
  EXPECT_EQ(sample("--prompt='In the beginning' --max_decode_steps=12 --num_samples=2 --seed=3 --top_k=20").out, a.out);
  const auto g1 = sample("--prompt=And --max_decode_steps=10 --temperature=0");
  const auto g2 = sample("--prompt=And --max_decode_steps=10 --temperature=0 --seed=99");
  ASSERT_EQ(g1.exit_code, 0) << g1.err;
  EXPECT_EQ(g1.out, g2.out) << "greedy decoding draws nothing";
}

TEST_F(CliSample, WeightsWithoutATokenizerTakeAndPrintIds) {
  const fs::path weights = dir_->path() / "model.safetensors";  // GPT-2 names; NUM_HEADS is not stored
  ASSERT_EQ(run_command(kBinary + " export --job_log_dir=" + job().string() + " --output=" + weights.string()).exit_code, 0);
  const auto r = run_command(kBinary + " sample --devices=0 --num_heads=2 --init_from=" + weights.string() +
                             " --prompt_ids=5,6,7 --max_decode_steps=6 --temperature=0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int commas = 0;
  for (char c : r.out) commas += c == ',';
  EXPECT_EQ(commas, 5) << "six ids: " << r.out;
  const auto no_ids = run_command(kBinary + " sample --devices=0 --num_heads=2 --init_from=" + weights.string() +
                                  " --prompt=hello");
  EXPECT_EQ(no_ids.exit_code, 2);
  EXPECT_NE(no_ids.err.find("give --prompt_ids"), std::string::npos) << no_ids.err;
}

TEST_F(CliSample, BadArgumentsAreOneLineErrors) {
  struct Case {
    std::string args, words;
  };
  for (const Case& c : {Case{"--top_p=0", "--top_p"}, Case{"--temperature=-1", "--temperature"},
                        Case{"--top_k=x", "--top_k=x"}, Case{"--max_decode_steps=0", "--max_decode_steps=0"},
                        Case{"--num_samples=0", "--num_samples=0"}, Case{"--prompt=a --prompt_ids=1", "one of --prompt"},
                        Case{"--prompt_ids=5,x", "'x' is not a token id"}, Case{"--prompt_ids=99999", "outside the vocabulary"},
                        Case{"--step=7", "--step=7"}}) {
    const auto r = sample(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.words), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << c.args << ": " << r.err;
  }
  const auto none = run_command(kBinary + " sample");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--job_log_dir=DIR or --init_from=PATH"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace paxocl::testing
