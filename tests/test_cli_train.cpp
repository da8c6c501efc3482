// `pax-ocl train` as users run it: initialising from an llm.c weights file gives exactly the loss
// the float64 reference computes for those weights on the same synthetic batch; weights written
// back are byte-identical; bad input gives one line and the documented exit code.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "common/rng.h"
#include "inputs/dataset.h"
#include "models/weights_io.h"
#include "tests/model_configs.h"
#include "tests/reference_gpt.h"
#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

const std::string kBinary = PAXOCL_BINARY;

models::GptConfig llmc_config() { return gpt_config(1, 16, 64, 2, 8, 8, 40); }

std::string bytes_of(const std::filesystem::path& f) {
  std::ifstream in(f, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class CliTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    const models::GptConfig c = llmc_config();
    const models::ParameterLayout layout(c, 1);
    Rng rng(3);
    weights_ = models::HostWeights{c, 1, std::vector<float>(layout.total())};
    for (float& v : weights_.data) v = static_cast<float>(0.2 * rng.normal());
    file_ = dir_.path() / "init.bin";
    models::save_llmc(file_, weights_);
  }
  TempDir dir_;
  models::HostWeights weights_;
  std::filesystem::path file_;
};

TEST_F(CliTrain, InitFromLlmcFileGivesTheReferenceLoss) {
  const auto r = run_command(kBinary + " train --fdl.DATA=synthetic --init_from=" + file_.string() +
                             " --fdl.MAX_STEPS=1 --fdl.PERCORE_BATCH_SIZE=2 --fdl.SEED=5 --fdl.SUMMARY_INTERVAL_STEPS=1"
                             " --fdl.EVAL_LOOP_NUM_BATCHES=2 --fdl.FPROP_DTYPE=float32 --job_log_dir=" +
                             (dir_.path() / "job").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(step +1/1  loss ([0-9.]+))"))) << r.out;
  const double got = std::stod(m[1]);

  const models::GptConfig c = llmc_config();
  inputs::InputParams input;  // the input `train --data=synthetic` builds
  input.seq_len = c.max_seq_len;
  input.batch_size = 2;
  input.seed = 5;
  input.prefetch_depth = 0;
  const inputs::Batch b = *inputs::make_input("synthetic", "train", input, c.vocab_size)->get_next();
  const std::vector<double> params(weights_.data.begin(), weights_.data.end());
  const double want = reference_loss(c, models::ParameterLayout(c, 1), params, ReferenceBatch{b.batch, b.seq_len, b.ids, b.targets, b.weights});
  EXPECT_NEAR(got, want, 2e-6 + 1e-5 * want);
}

TEST_F(CliTrain, ZeroStepsWritesTheSameWeightsBack) {
  for (const char* name : {"out.bin", "out.safetensors"}) {
    const auto out = dir_.path() / name;
    const auto r = run_command(kBinary + " train --fdl.DATA=synthetic --init_from=" + file_.string() +
                               " --fdl.MAX_STEPS=0 --save_weights=" + out.string() + " --job_log_dir=" +
                               (dir_.path() / "job0").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (out.extension() == ".bin") {
      EXPECT_EQ(bytes_of(out), bytes_of(file_));
    } else {
      const models::HostWeights back = models::load_safetensors(out, 2, 1);
      const models::ParameterLayout layout(llmc_config(), 1);
      for (const auto& t : layout.tensors()) {
        if (t.name == "wte") continue;  // safetensors keeps the V real rows only
        for (std::size_t i = 0; i < t.count; ++i) ASSERT_EQ(back.data[t.offset + i], weights_.data[t.offset + i]) << t.name;
      }
    }
  }
}

TEST_F(CliTrain, BadInputIsOneLineWithTheDocumentedExitCode) {
  const struct {
    std::string args;
    int code;
    std::string says;
  } cases[] = {
      {"train --fdl.DATA=synthetic --init_from=/nonexistent/w.bin --fdl.MAX_STEPS=1", 3, "/nonexistent/w.bin"},
      {"train --fdl.NUM_LAYERS=two", 2, "--fdl.NUM_LAYERS=two: expected an integer"},
      {"train --fdl.LEARNING_RATE=fast", 2, "--fdl.LEARNING_RATE=fast: expected a finite number"},
      {"train --fdl.NUM_LAYER=2", 2, "did you mean --fdl.NUM_LAYERS"},
      {"train --fdl.NUM_HEADS=0", 2, "NUM_HEADS=0: the value must be in [1, 268435456]"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(kBinary + " " + c.args);
    EXPECT_EQ(r.exit_code, c.code) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
  }
}

}  // namespace
}  // namespace paxocl::testing
