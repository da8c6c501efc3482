// `pax-ocl data prepare | inspect` and `pax-ocl train --data=...` as users run them.
#include <gtest/gtest.h>

#include <fstream>

#include "common/rng.h"
#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

const std::string kBinary = PAXOCL_BINARY;

std::filesystem::path write_story(const std::filesystem::path& dir) { return write_word_story(dir, 60, 5); }

class CliData : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = dir_.path() / "data";
    const auto r = run_command(kBinary + " data prepare --text=" + write_story(dir_.path()).string() + " --output_dir=" +
                               data_.string() + " --vocab_size=64 --model_type=bpe");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_NE(r.out.find("vocabulary 64"), std::string::npos) << r.out;
  }
  std::string job() const { return (dir_.path() / "job").string(); }
  TempDir dir_;
  std::filesystem::path data_;
};

TEST_F(CliData, InspectDecodesBatchesOfBothSplits) {
  for (const char* split : {"train", "validation"}) {
    const auto r = run_command(kBinary + " data inspect --data=" + data_.string() + " --split=" + split +
                               " --batches=1 --fdl.MAX_SEQ_LEN=16 --fdl.PERCORE_BATCH_SIZE=2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("batch 0 row 1"), std::string::npos) << r.out;
    // Decoded text is made of the story's words.
    int words_found = 0;
    for (const char* w : {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "runs", "far", "away"}) {
      words_found += r.out.find(std::string(" ") + w) != std::string::npos;
    }
    EXPECT_GE(words_found, 2) << r.out;
  }
}

TEST_F(CliData, TrainOnThePreparedDataset) {
  const auto r = run_command(kBinary + " train --fdl.DATA=" + data_.string() + " --job_log_dir=" + job() +
                             " --fdl.VOCAB_SIZE=64 --fdl.MAX_SEQ_LEN=16 --fdl.MAX_STEPS=3 --fdl.PERCORE_BATCH_SIZE=2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step      3/3"), std::string::npos) << r.out;
}

TEST_F(CliData, TrainOnRawTextTokenisedOnTheFly) {
  const std::string text = "text:" + (dir_.path() / "story.txt").string();
  const auto r = run_command(kBinary + " train --fdl.DATA=" + text + " --fdl.TOKENIZER=" + (data_ / "tokenizer.model").string() +
                             " --fdl.VOCAB_SIZE=64 --fdl.MAX_SEQ_LEN=16 --fdl.MAX_STEPS=2 --fdl.PERCORE_BATCH_SIZE=2"
                             " --job_log_dir=" + job());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step      2/2"), std::string::npos) << r.out;
  // A job directory of its own: the first job's checkpoint records another model (its tokenizer).
  const auto no_tokenizer = run_command(kBinary + " train --fdl.DATA=" + text + " --fdl.VOCAB_SIZE=64 --fdl.MAX_STEPS=1" +
                                        " --job_log_dir=" + job() + "-no-tokenizer");
  EXPECT_EQ(no_tokenizer.exit_code, 2) << no_tokenizer.err;
  EXPECT_NE(no_tokenizer.err.find("set --fdl.TOKENIZER=FILE.model"), std::string::npos) << no_tokenizer.err;
}

// llm.c's data scripts leave NAME_train*.bin and NAME_val*.bin in one directory: DATA=that directory
// trains on them unchanged. The files record no vocabulary; GPT-2's (llm.c's usual one, 50257 ids,
// padded to 50304 in the model as llm.c pads it) is given as VOCAB_SIZE.
TEST(CliLlmcData, TrainTwoStepsOnADirectoryOfLlmcFiles) {
  TempDir dir;
  const auto data = dir.path() / "tinyshakespeare";
  std::filesystem::create_directories(data);
  Rng rng(11);
  auto tokens = [&](std::size_t n) {
    std::vector<std::uint32_t> t(n);
    for (auto& v : t) v = static_cast<std::uint32_t>(rng.next_u64() % 50257);
    t[n / 2] = 50256;  // GPT-2's <|endoftext|>, the largest id
    return t;
  };
  write_llmc_tokens(data / "tinyshakespeare_train.bin", tokens(3000));
  write_llmc_tokens(data / "tinyshakespeare_val.bin", tokens(400));
  const std::string model =
      " --fdl.NUM_LAYERS=1 --fdl.MODEL_DIMS=32 --fdl.HIDDEN_DIMS=64 --fdl.NUM_HEADS=2 --fdl.DIMS_PER_HEAD=16"
      " --fdl.MAX_SEQ_LEN=16 --fdl.PERCORE_BATCH_SIZE=2 --fdl.EVAL_LOOP_NUM_BATCHES=2 --job_log_dir=";
  const auto r = run_command(kBinary + " train --fdl.DATA=" + data.string() + " --fdl.VOCAB_SIZE=50257 --fdl.MAX_STEPS=2" +
                             model + (dir.path() / "job").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step      2/2"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("no validation data"), std::string::npos) << "the *_val.bin file is the eval_test split: " << r.err;
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "job" / "summaries" / "eval_test"));

  // Another job directory: the first job's checkpoint records VOCAB_SIZE=50257.
  const auto small = run_command(kBinary + " train --fdl.DATA=" + data.string() + " --fdl.VOCAB_SIZE=512 --fdl.MAX_STEPS=1" +
                                 model + (dir.path() / "small").string());
  EXPECT_EQ(small.exit_code, 3) << small.err;
  EXPECT_NE(small.err.find((data / "tinyshakespeare_train.bin").string() + ": token "), std::string::npos) << small.err;
  EXPECT_NE(small.err.find(">= VOCAB_SIZE=512"), std::string::npos) << small.err;
  EXPECT_NE(small.err.find("GPT-2's tokenizer has 50257 ids"), std::string::npos) << small.err;
  EXPECT_EQ(small.err.rfind("pax-ocl: error: "), small.err.find("pax-ocl: error: ")) << small.err;

  const auto inspect = run_command(kBinary + " data inspect --data=" + data.string() +
                                   " --split=validation --batches=1 --fdl.MAX_SEQ_LEN=16 --fdl.VOCAB_SIZE=50257");
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("batch 0 row 1"), std::string::npos) << inspect.out;
}

TEST_F(CliData, BadDataIsOneLineAndExit3) {
  const struct {
    std::string args;
    std::string says;
  } cases[] = {
      {"train --fdl.DATA=" + data_.string() + " --fdl.VOCAB_SIZE=512 --fdl.MAX_STEPS=1 --job_log_dir=" + job(),
       "has 64 pieces but VOCAB_SIZE=512"},
      {"train --fdl.DATA=" + (dir_.path() / "nothing-*.tokens").string() + " --fdl.MAX_STEPS=1 --job_log_dir=" + job(),
       "no such file"},
      {"data prepare --text=" + (dir_.path() / "missing.txt").string() + " --output_dir=" + (dir_.path() / "o").string(),
       "cannot be read"},
      {"data prepare --text=" + (dir_.path() / "story.txt").string() + " --output_dir=" + (dir_.path() / "o").string() +
           " --vocab_size=100000",
       "SentencePiece training"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(kBinary + " " + c.args);
    EXPECT_EQ(r.exit_code, 3) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("pax-ocl: error: "), r.err.find("pax-ocl: error: ")) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "o")) << "a failed prepare leaves nothing behind";
}

TEST_F(CliData, PrepareRefusesToReplaceADirectoryThatIsNotADataset) {
  const auto mine = dir_.path() / "mine";
  std::filesystem::create_directories(mine);
  std::ofstream(mine / "thesis.tex") << "years of work\n";
  std::ofstream(dir_.path() / "notes.txt") << "a file\n";
  for (const auto& target : {mine, dir_.path() / "notes.txt"}) {
    const auto r = run_command(kBinary + " data prepare --text=" + (dir_.path() / "story.txt").string() +
                               " --output_dir=" + target.string() + " --vocab_size=64");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(target.string() + " exists and is not a prepared dataset (no dataset.json)"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.rfind("pax-ocl: error: "), r.err.find("pax-ocl: error: ")) << r.err;
  }
  std::ifstream in(mine / "thesis.tex");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), "years of work\n");
  std::ifstream notes(dir_.path() / "notes.txt");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(notes)), std::istreambuf_iterator<char>()), "a file\n");
}

TEST_F(CliData, PreparingAgainReplacesTheDatasetWhole) {
  const auto r = run_command(kBinary + " data prepare --text=" + (dir_.path() / "story.txt").string() +
                             " --output_dir=" + data_.string() + " --vocab_size=48 --model_type=unigram");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vocabulary 48"), std::string::npos) << r.out;
  const auto inspect = run_command(kBinary + " data inspect --data=" + data_.string() + " --batches=1 --fdl.MAX_SEQ_LEN=16");
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
  // A preparation that fails leaves the dataset as it was.
  const auto failed = run_command(kBinary + " data prepare --text=" + (dir_.path() / "story.txt").string() +
                                  " --output_dir=" + data_.string() + " --vocab_size=100000");
  EXPECT_EQ(failed.exit_code, 3) << failed.err;
  std::ifstream info(data_ / "dataset.json");
  EXPECT_NE(std::string((std::istreambuf_iterator<char>(info)), std::istreambuf_iterator<char>()).find("\"vocab_size\": 48"),
            std::string::npos);
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "story.txt" || name == "data" || name == "data.lock") << name << " left behind";
  }
}

// Three `data prepare` runs into one fresh directory (with a space in its path) at once: each
// installs a whole dataset in turn, none fails, and what is left is one valid dataset.
TEST_F(CliData, ConcurrentPreparesOfOneDirectoryAllSucceed) {
  const auto out = dir_.path() / "shared data" / "set";
  const std::string logs = dir_.path().string() + "/run";
  std::string script;
  for (const char* i : {"0", "1", "2"}) {
    script += "( '" + kBinary + "' data prepare --text='" + (dir_.path() / "story.txt").string() + "' --output_dir='" +
              out.string() + "' --vocab_size=64 >'" + logs + i + ".log' 2>&1; echo $? >'" + logs + i + ".rc' ) & ";
  }
  const auto r = run_command(script + "wait");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* i : {"0", "1", "2"}) {
    std::ifstream rc(logs + i + ".rc"), log(logs + i + ".log");
    int code = -1;
    rc >> code;
    EXPECT_EQ(code, 0) << std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  }
  const auto inspect = run_command(kBinary + " data inspect --data='" + out.string() + "' --batches=1 --fdl.MAX_SEQ_LEN=16");
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("batch 0 row 1"), std::string::npos) << inspect.out;
  for (const auto& entry : std::filesystem::directory_iterator(out.parent_path())) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "set" || name == "set.lock") << name << " left behind";
  }
}

TEST(CliDataKjv, DefaultCorpusIsPreparedOnceAndReused) {
  if (run_command("command -v bible").exit_code != 0) GTEST_SKIP() << "Debian package bible-kjv is not installed";
  TempDir root;
  const std::string env = "PAX_OCL_DATA_DIR=" + root.path().string() + " ";
  const std::string cmd = env + kBinary + " train --fdl.MAX_STEPS=1 --fdl.VOCAB_SIZE=256 --fdl.MAX_SEQ_LEN=32" +
                          " --fdl.EVAL_LOOP_NUM_BATCHES=1 --job_log_dir=" + (root.path() / "job").string();
  const auto first = run_command(cmd);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("preparing the KJV corpus"), std::string::npos) << first.err;
  const auto dataset = root.path() / "kjv-bpe-256" / "dataset.json";
  ASSERT_TRUE(std::filesystem::exists(dataset));
  const auto stamp = std::filesystem::last_write_time(dataset);
  const auto second = run_command(cmd);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.err.find("preparing the KJV corpus"), std::string::npos) << "the cache must be reused";
  EXPECT_EQ(std::filesystem::last_write_time(dataset), stamp);
}

}  // namespace
}  // namespace paxocl::testing
