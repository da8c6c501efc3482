// Zero-shot evaluation as users run it (`pax-ocl eval --task=lambada|boolq --data=FILE`): a small
// GPT trained briefly on the KJV (its SentencePiece tokenizer reads the text forms) scores Lambada
// and BoolQ examples; the metrics go to the console, TensorBoard (summaries/<task>) and
// --output_json, and are the same on every layout eval runs (data parallel, FSDP and tensor
// parallel inside a process, FSDP over processes): accuracies exactly, log-perplexity within
// float32 rounding of the sums' other orders. The job's experiment.json keeps training's settings
// whatever the eval's flags. A bad line is a one-line error naming the line and the field.
// Against an outside implementation: the tiny GPT-2 of tests/golden (--init_from) on the committed
// fixture tests/golden/zero_shot (20 Lambada and 20 BoolQ examples, text with its SentencePiece
// model and pre-tokenized, two cut from the left), whose every candidate's log-likelihood and
// greedy tokens Hugging Face transformers computed in float64 (make_zero_shot_golden.py): on PoCL
// in float32 the log-likelihoods deviated by at most 2.2e-7 relative (2026-11-26); the test allows
// kRel = 1e-5. The greedy decisions and BoolQ comparisons are at least 1e-3 from a tie, so the
// accuracies must match exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/golden_dir.h"
#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = PAXOCL_BINARY;
const std::string kMpirun = std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 ";

const char* kLambada =
    "{\"text\": \"In the beginning God created the heaven and the earth\"}\n"
    "{\"text\": \"And God said, Let there be light: and there was light\"}\n"
    "\n"
    "{\"inputs\": \"And the evening and the morning were the first\", \"targets\": \" day\"}\n"
    "{\"text\": \"And God called the light Day, and the darkness he called Night\"}\n"
    "{\"text\": \"And the LORD spake unto Moses, saying\"}\n"
    "{\"input_ids\": [5, 6, 7, 8, 9], \"target_ids\": [10, 11]}\n";
const char* kBoolq =
    "{\"question\": \"did god create the earth\", \"passage\": \"In the beginning God created the heaven and the "
    "earth.\", \"answer\": true}\n"
    "{\"question\": \"did god call the light night?\", \"passage\": \"And God called the light Day, and the darkness "
    "he called Night.\", \"answer\": false}\n"
    "{\"input_ids\": [5, 6, 7], \"yes_ids\": [8], \"no_ids\": [9, 10], \"answer\": true}\n";

class CliZeroShot : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const auto r = run_command(kBinary + " train --devices=0 --fdl.MAX_STEPS=20 --fdl.FPROP_DTYPE=float32 "
                                         "--fdl.EVAL_INTERVAL_STEPS=0 --job_log_dir=" + job().string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ofstream(dir_->path() / "lambada.jsonl") << kLambada;
    std::ofstream(dir_->path() / "boolq.jsonl") << kBoolq;
  }
  static void TearDownTestSuite() { delete dir_; }
  static fs::path job() { return dir_->path() / "job"; }

  // The metrics JSON of `eval --task=task` with `flags`, run under `launcher`.
  static nlohmann::json eval(const std::string& task, const std::string& flags, const std::string& launcher = "") {
    const fs::path out = dir_->path() / (task + ".json");
    fs::remove(out);
    const auto r = run_command(launcher + kBinary + " eval --job_log_dir=" + job().string() + " --task=" + task +
                               " --data=" + (dir_->path() / (task + ".jsonl")).string() + " --output_json=" +
                               out.string() + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    EXPECT_NE(r.out.find(task + ": "), std::string::npos) << r.out;
    std::ifstream in(out);
    return in ? nlohmann::json::parse(in) : nlohmann::json::object();
  }
  static TempDir* dir_;
};
TempDir* CliZeroShot::dir_ = nullptr;

TEST_F(CliZeroShot, MetricsGoToTheConsoleTensorBoardAndJson) {
  const nlohmann::json lambada = eval("lambada", " --devices=0");
  EXPECT_EQ(lambada["task"], "lambada");
  EXPECT_EQ(lambada["examples"], 6);
  EXPECT_EQ(lambada["step"], 20);
  EXPECT_GE(lambada["target_tokens"].get<long>(), 6);
  const double log_pplx = lambada["log_pplx"].get<double>();
  EXPECT_GT(log_pplx, 0.0);
  EXPECT_LT(log_pplx, 20.0);
  for (const char* metric : {"acc_strict", "target_token_accuracy"}) {
    EXPECT_GE(lambada[metric].get<double>(), 0.0);
    EXPECT_LE(lambada[metric].get<double>(), 1.0);
  }
  auto scalars = read_scalars(job() / "summaries" / "lambada");
  ASSERT_EQ(scalars["log_pplx"].size(), 1u);
  EXPECT_EQ(scalars["log_pplx"][0].step, 20);
  EXPECT_EQ(scalars["log_pplx"][0].value, static_cast<float>(log_pplx));
  EXPECT_EQ(scalars["acc_strict"][0].value, static_cast<float>(lambada["acc_strict"].get<double>()));

  const nlohmann::json boolq = eval("boolq", " --devices=0");
  EXPECT_EQ(boolq["examples"], 3);
  const double acc = boolq["boolq_acc"].get<double>();
  EXPECT_TRUE(acc == 0.0 || std::abs(acc - 1.0 / 3) < 1e-12 || std::abs(acc - 2.0 / 3) < 1e-12 || acc == 1.0) << acc;
  EXPECT_EQ(read_scalars(job() / "summaries" / "boolq")["boolq_acc"].size(), 1u);
}

TEST_F(CliZeroShot, EveryLayoutGivesTheSameNumbersAndKeepsTheJobsExperiment) {
  const std::string experiment = file_bytes(job() / "experiment.json");
  const nlohmann::json one = eval("lambada", " --devices=0");
  const nlohmann::json one_boolq = eval("boolq", " --devices=0");
  struct Layout {
    std::string launcher, flags;
  };
  const Layout layouts[] = {
      {"", " --fdl.ICI_MESH_SHAPE=[2,1,1]"},
      {"", " --fdl.ICI_MESH_SHAPE=[1,2,1]"},
      {"", " --fdl.ICI_MESH_SHAPE=[1,1,2]"},
      {"", " --fdl.ICI_MESH_SHAPE=[1,1,2] --fdl.SEQUENCE_PARALLEL=true"},
      // one sequence per batch: odd row lengths are padded to what the tensor axis divides
      {"", " --fdl.ICI_MESH_SHAPE=[1,1,2] --fdl.SEQUENCE_PARALLEL=true --fdl.PERCORE_BATCH_SIZE=0.5"},
      {kMpirun, " --devices=0 --fdl.DCN_MESH_SHAPE=[1,2,1]"},
      {"", " --fdl.ICI_MESH_SHAPE=[2,1,1,1]"},
      {"", " --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.PIPELINE_SCHEDULE=circular --fdl.CIRCULAR_REPEAT=2"},
  };
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.launcher + l.flags);
    const nlohmann::json got = eval("lambada", l.flags, l.launcher);
    EXPECT_EQ(got["acc_strict"], one["acc_strict"]);
    EXPECT_EQ(got["target_token_accuracy"], one["target_token_accuracy"]);
    EXPECT_NEAR(got["log_pplx"].get<double>(), one["log_pplx"].get<double>(), 1e-5 * one["log_pplx"].get<double>());
    EXPECT_EQ(eval("boolq", l.flags, l.launcher)["boolq_acc"], one_boolq["boolq_acc"]);
  }
  EXPECT_EQ(file_bytes(job() / "experiment.json"), experiment);  // eval's mesh flags are not the job's
  // Stages in other processes: the last stage's scores are not in every process (one line, every rank).
  const auto r = run_command(kMpirun + kBinary + " eval --devices=0 --fdl.DCN_MESH_SHAPE=[2,1,1,1] --task=lambada --data=" +
                             (dir_->path() / "lambada.jsonl").string() + " --job_log_dir=" + job().string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("need the last pipeline stage in every process"), std::string::npos) << r.err;
}

TEST(CliZeroShotGolden, MatchesHuggingFaceTransformersInFloat64) {
  constexpr double kRel = 1e-5;
  const fs::path golden = golden_dir(), fixture = golden / "zero_shot";
  std::ifstream in(fixture / "expected.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  TempDir dir;
  for (const std::string task : {"lambada", "boolq"}) {
    SCOPED_TRACE(task);
    const fs::path out = dir.path() / (task + ".json");
    const auto r = run_command(kBinary + " eval --devices=0 --init_from=" + (golden / "gpt2_tiny.safetensors").string() +
                               " --fdl.NUM_HEADS=4 --fdl.FPROP_DTYPE=float32 --fdl.DATA=" + fixture.string() +
                               " --task=" + task + " --data=" + (fixture / (task + ".jsonl")).string() +
                               " --output_json=" + out.string() + " --job_log_dir=" + (dir.path() / "job").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream got_in(out);
    const nlohmann::json got = nlohmann::json::parse(got_in);
    const nlohmann::json& expected = want[task];
    ASSERT_EQ(got["per_example"].size(), expected["examples"].size());
    for (std::size_t e = 0; e < expected["examples"].size(); ++e) {
      const nlohmann::json& candidates = got["per_example"][e]["candidates"];
      const nlohmann::json& x = expected["examples"][e];
      if (task == "lambada") {
        const double ll = x["log_likelihood"].get<double>();
        EXPECT_NEAR(candidates[0]["log_likelihood"].get<double>(), ll, kRel * std::abs(ll)) << "example " << e;
        EXPECT_EQ(candidates[0]["tokens"], x["tokens"]) << "example " << e;
        EXPECT_EQ(candidates[0]["greedy"], x["greedy"]) << "example " << e;
      } else {
        const double yes = x["yes_log_likelihood"].get<double>(), no = x["no_log_likelihood"].get<double>();
        EXPECT_NEAR(candidates[0]["log_likelihood"].get<double>(), yes, kRel * std::abs(yes)) << "example " << e;
        EXPECT_NEAR(candidates[1]["log_likelihood"].get<double>(), no, kRel * std::abs(no)) << "example " << e;
      }
    }
    if (task == "lambada") {
      EXPECT_EQ(got["acc_strict"].get<double>(), expected["acc_strict"].get<double>());
      EXPECT_EQ(got["target_token_accuracy"].get<double>(), expected["target_token_accuracy"].get<double>());
      EXPECT_EQ(got["target_tokens"], expected["target_tokens"]);
      const double log_pplx = expected["log_pplx"].get<double>();
      EXPECT_NEAR(got["log_pplx"].get<double>(), log_pplx, kRel * log_pplx);
    } else {
      EXPECT_EQ(got["boolq_acc"].get<double>(), expected["boolq_acc"].get<double>());
    }
  }
}

// A weights file has no tokenizer: text examples are refused (the experiment's DATA=kjv would make a
// new KJV tokenizer of the file's vocabulary size), unless the user names one; at once, before devices.
TEST(CliZeroShotChecks, TextExamplesOfAWeightsFileNeedATokenizerNamed) {
  const fs::path golden = golden_dir(), fixture = golden / "zero_shot";
  TempDir dir;
  const std::string eval = kBinary + " eval --devices=0 --init_from=" + (golden / "gpt2_tiny.safetensors").string() +
                           " --fdl.NUM_HEADS=4 --fdl.FPROP_DTYPE=float32 --task=lambada --job_log_dir=" +
                           (dir.path() / "job").string();
  const fs::path text = dir.path() / "text.jsonl";
  std::ofstream(text) << "{\"text\": \"In the beginning God created the heaven and the earth\"}\n";
  const auto r = run_command(eval + " --data=" + text.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("line 1: text: is text, but the model has no SentencePiece tokenizer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--fdl.TOKENIZER=FILE.model"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.path() / "job" / "summaries")) << "refused after evaluating";
  // Token ids need no tokenizer, and a tokenizer named reads the text.
  const fs::path ids = dir.path() / "ids.jsonl";
  std::ofstream(ids) << "{\"input_ids\": [5, 6, 7, 8], \"target_ids\": [9]}\n";
  const auto by_ids = run_command(eval + " --data=" + ids.string());
  EXPECT_EQ(by_ids.exit_code, 0) << by_ids.err;
  const auto named = run_command(eval + " --data=" + text.string() + " --fdl.TOKENIZER=" +
                                 (fixture / "tokenizer.model").string());
  EXPECT_EQ(named.exit_code, 0) << named.err;
}

// --output_json is written after the evaluation: a path that cannot be written is refused first.
TEST(CliZeroShotChecks, AnUnwritableOutputJsonIsRefusedBeforeEvaluating) {
  const fs::path golden = golden_dir(), fixture = golden / "zero_shot";
  TempDir dir;
  const std::string eval = kBinary + " eval --devices=0 --init_from=" + (golden / "gpt2_tiny.safetensors").string() +
                           " --fdl.NUM_HEADS=4 --fdl.FPROP_DTYPE=float32 --fdl.DATA=" + fixture.string() +
                           " --task=lambada --data=" + (fixture / "lambada.jsonl").string() + " --job_log_dir=" +
                           (dir.path() / "job").string();
  const auto missing = run_command(eval + " --output_json=" + (dir.path() / "nonexistent" / "x.json").string());
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(count_lines(missing.err), 1) << missing.err;
  EXPECT_NE(missing.err.find("--output_json=" + (dir.path() / "nonexistent" / "x.json").string() + ": its directory " +
                             (dir.path() / "nonexistent").string() + " does not exist"),
            std::string::npos)
      << missing.err;
  EXPECT_EQ(missing.out.find("lambada: "), std::string::npos) << "evaluated before refusing: " << missing.out;
  EXPECT_FALSE(fs::exists(dir.path() / "job" / "summaries"));
  const auto a_directory = run_command(eval + " --output_json=" + dir.path().string());
  EXPECT_NE(a_directory.exit_code, 0);
  EXPECT_NE(a_directory.err.find("is a directory"), std::string::npos) << a_directory.err;
}

TEST_F(CliZeroShot, ABadLineIsAOneLineErrorNamingTheLineAndField) {
  const fs::path bad = dir_->path() / "bad.jsonl";
  std::ofstream(bad) << "{\"input_ids\": [1], \"target_ids\": [2]}\n{\"input_ids\": [1], \"target_ids\": [999999]}\n";
  const auto r = run_command(kBinary + " eval --devices=0 --job_log_dir=" + job().string() + " --task=lambada --data=" +
                             bad.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("line 2: target_ids: token id 999999 is outside the vocabulary"), std::string::npos) << r.err;
  const auto no_data = run_command(kBinary + " eval --devices=0 --job_log_dir=" + job().string() + " --task=boolq");
  EXPECT_NE(no_data.exit_code, 0);
  EXPECT_NE(no_data.err.find("--task=boolq needs --data"), std::string::npos) << no_data.err;
  const auto in_train = run_command(kBinary + " train --task=lambada --data=" + bad.string() + " --job_log_dir=" +
                                    (dir_->path() / "t").string());
  EXPECT_NE(in_train.exit_code, 0);
  EXPECT_NE(in_train.err.find("belong to pax-ocl eval"), std::string::npos) << in_train.err;
}

}  // namespace
}  // namespace paxocl::testing
