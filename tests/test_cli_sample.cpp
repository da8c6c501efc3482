// `pax-ocl sample` as users run it: text from a job's checkpoint with its tokenizer (the same seed
// writes the same text; greedy decoding is deterministic), ids from an exported weights file, and
// bad arguments as one-line errors with exit code 2.
#include <gtest/gtest.h>

#include "common/errors.h"
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

// A context of one token leaves the job's closing sample no room to write: the job ends without
// one and succeeds (it used to end training with `pax-ocl sample`'s prompt error and exit code 2).
TEST_F(CliSample, AJobWithAOneTokenContextEndsWithoutASample) {
  const auto r = run_command(kBinary + " train --devices=0 --fdl.NUM_LAYERS=1 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=128"
                             " --fdl.NUM_HEADS=2 --fdl.DIMS_PER_HEAD=32 --fdl.MAX_SEQ_LEN=1 --fdl.MAX_STEPS=1"
                             " --fdl.EVAL_INTERVAL_STEPS=0 --fdl.EVAL_LOOP_NUM_BATCHES=1 --job_log_dir=" +
                             (dir_->path() / "one_token").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step      1/1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sample (temperature"), std::string::npos) << r.out;
}

TEST_F(CliSample, WeightsWithoutATokenizerTakeAndPrintIds) {
  const fs::path weights = dir_->path() / "model.safetensors";  // GPT-2 names; the settings in __metadata__
  ASSERT_EQ(run_command(kBinary + " export --job_log_dir=" + job().string() + " --output=" + weights.string()).exit_code, 0);
  const auto r = run_command(kBinary + " sample --devices=0 --init_from=" + weights.string() +
                             " --prompt_ids=5,6,7 --max_decode_steps=6 --temperature=0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int commas = 0;
  for (char c : r.out) commas += c == ',';
  EXPECT_EQ(commas, 5) << "six ids: " << r.out;
  const auto no_ids = run_command(kBinary + " sample --devices=0 --num_heads=2 --init_from=" + weights.string() +
                                  " --prompt=hello");
  EXPECT_EQ(no_ids.exit_code, 2);
  EXPECT_NE(no_ids.err.find("give --prompt_ids"), std::string::npos) << no_ids.err;
  // A head count that contradicts the file's record is refused, naming both.
  const auto heads = run_command(kBinary + " sample --devices=0 --num_heads=4 --init_from=" + weights.string() +
                                 " --prompt_ids=5,6,7");
  EXPECT_EQ(heads.exit_code, 2);
  EXPECT_NE(heads.err.find("NUM_HEADS=4 contradicts"), std::string::npos) << heads.err;
  EXPECT_NE(heads.err.find("records 2 heads"), std::string::npos) << heads.err;
}

// Weights files sample cannot use, each a one-line error saying what to give: a LLaMA shard
// without its config.json (read as GPT-2, its names are not GPT-2's) and a GPT-2 file that records
// no head count (the flag sample takes for it).
TEST_F(CliSample, WeightsOfAnotherFamilyOrWithoutSettingsAreOneLineErrors) {
  const fs::path golden = PAXOCL_GOLDEN_DIR;
  TempDir shards;
  fs::copy_file(golden / "llama_tiny" / "model-00001-of-00003.safetensors", shards.path() / "llama.safetensors");
  const struct {
    fs::path file;
    std::string words;
    int exit_code;  // the file's data is wrong (3), or a flag is missing (2)
  } cases[] = {{shards.path() / "llama.safetensors", "expected a Hugging Face GPT-2 model", kExitData},
               {golden / "gpt2_tiny.safetensors", "--num_heads=N", kExitUsage}};
  for (const auto& [file, words, exit_code] : cases) {
    const auto r = run_command(kBinary + " sample --devices=0 --init_from=" + file.string() + " --prompt_ids=5,6");
    EXPECT_EQ(r.exit_code, exit_code) << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
  }
}

// More samples than the device holds: refused before any buffer exists, with the most that fit
// (it once ended in an abort inside PoCL when an allocation failed late).
TEST_F(CliSample, TooManySamplesForTheDeviceAreRefusedWithTheMostThatFit) {
  const auto r = sample("--prompt_ids=5,6,7 --max_decode_steps=2 --num_samples=100000000");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("decoding 100000000 sample(s) of up to 32 positions needs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("try --num_samples="), std::string::npos) << r.err;
  const std::string error = r.err.substr(r.err.find("pax-ocl: error:"));  // after the "sampling from" log line
  EXPECT_EQ(count_lines(error), 1) << r.err;
  // The count it suggests is the device's limit, not the request.
  const std::size_t at = r.err.find("try --num_samples=") + std::string("try --num_samples=").size();
  const long suggested = std::stol(r.err.substr(at));
  EXPECT_GT(suggested, 1000) << r.err;
  EXPECT_LT(suggested, 100000000) << r.err;
}

TEST_F(CliSample, BadArgumentsAreOneLineErrors) {
  struct Case {
    std::string args, words;
  };
  std::string forty_ids = "5";
  for (int i = 1; i < 40; ++i) forty_ids += ",5";
  for (const Case& c : {Case{"--top_p=0", "--top_p"}, Case{"--temperature=-1", "--temperature"},
                        Case{"--top_k=x", "--top_k=x"}, Case{"--max_decode_steps=0", "--max_decode_steps=0"},
                        Case{"--num_samples=0", "--num_samples=0"}, Case{"--prompt=a --prompt_ids=1", "one of --prompt"},
                        Case{"--prompt_ids=5,x", "'x' is not a token id"}, Case{"--prompt_ids=99999", "outside the vocabulary"},
                        Case{"--step=7", "--step=7"},
                        // Hostile values (issue 42): empty, negative and huge ids, non-finite or huge
                        // temperatures and top_p, a negative top_k, a prompt longer than MAX_SEQ_LEN (32).
                        Case{"--prompt_ids=", "--prompt_ids is empty"}, Case{"--prompt_ids=-1", "'-1' is not a token id"},
                        Case{"--prompt_ids=99999999999", "is not a token id"},
                        Case{"--prompt_ids=5 --temperature=nan", "--temperature=nan"},
                        Case{"--prompt_ids=5 --temperature=1e300", "--temperature=1e300"},
                        Case{"--prompt_ids=5 --top_p=nan", "--top_p=nan"}, Case{"--prompt_ids=5 --top_p=1.5", "--top_p=1.5"},
                        Case{"--prompt_ids=5 --top_k=-3", "--top_k=-3"},
                        Case{"--prompt_ids=" + forty_ids, "the prompt has 40 tokens"},
                        Case{"--prompt_ids=5 --fdl.NUM_HEADS=4", "takes no --fdl.NAME hyper-parameters"}}) {
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
