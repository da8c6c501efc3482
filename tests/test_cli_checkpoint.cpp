// Checkpointing as users meet it: a job run again with the same --job_log_dir resumes, and the
// resumed run is bitwise the uninterrupted one; a checkpoint restores onto another mesh; SIGUSR1
// saves and exits with the requeue code; a damaged newest checkpoint falls back to the one
// before; retention; saving turned off; export to Hugging Face safetensors and back.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>

#include "checkpoint/manifest_file.h"
#include "common/errors.h"
#include "proto/checkpoint.pb.h"
#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBinary = PAXOCL_BINARY;
const std::string kMpirun = std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 ";
// A small synthetic experiment whose schedule ends at step 12; a loss line per step.
const std::string kJob =
    " train --fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=256"
    " --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.SUMMARY_INTERVAL_STEPS=1"
    " --fdl.EVAL_INTERVAL_STEPS=0 --fdl.EVAL_LOOP_NUM_BATCHES=2 --fdl.LR_COS_WARMUP=2 --fdl.LR_COS_DECAY_START=3"
    " --fdl.LR_COS_DECAY_END=12 --fdl.CHECKPOINT_EVERY_N_STEPS=4";

std::vector<long> checkpoint_steps(const fs::path& job) {
  std::vector<long> steps;
  for (const auto& e : fs::directory_iterator(job / "checkpoints")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("checkpoint_", 0) == 0) steps.push_back(std::stol(name.substr(11)));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

class CliCheckpoint : public ::testing::Test {
 protected:
  CommandResult train(const std::string& launcher, const std::string& args, const std::string& job) {
    const auto r = run_command(launcher + kBinary + kJob + args + " --job_log_dir=" + (dir_.path() / job).string());
    EXPECT_EQ(r.exit_code, 0) << job << ": " << r.err;
    return r;
  }
  // The uninterrupted reference: 12 steps on one device, batch 4.
  const std::vector<float>& reference() {
    if (reference_.empty()) {
      train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=12 --save_weights=" +
                    (dir_.path() / "reference.bin").string(), "reference");
      reference_ = train_losses(dir_.path() / "reference");
    }
    return reference_;
  }
  TempDir dir_;
  std::vector<float> reference_;
};

TEST_F(CliCheckpoint, ResumingIsBitwiseTheUninterruptedRun) {
  const std::vector<float> want = reference();
  ASSERT_EQ(want.size(), 12u);
  EXPECT_EQ(checkpoint_steps(dir_.path() / "reference"), (std::vector<long>{0, 4, 8, 12}));
  train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=6", "resumed");  // saves 0, 4 and 6 (the end)
  const auto r = train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=12 --save_weights=" +
                               (dir_.path() / "resumed.bin").string(), "resumed");
  EXPECT_NE(r.err.find("resumed from " + (dir_.path() / "resumed" / "checkpoints" / "checkpoint_00000006").string()),
            std::string::npos) << r.err;
  EXPECT_EQ(train_losses(dir_.path() / "resumed", 7), std::vector<float>(want.begin() + 6, want.end()));
  EXPECT_EQ(file_bytes(dir_.path() / "resumed.bin"), file_bytes(dir_.path() / "reference.bin"));
}

// 16-bit FPROP_DTYPE: the checkpoint holds the float32 state (F32 tensors; the 16-bit weight copy
// is derived from it each step) and, for float16, the loss scale and its clean-step count, so a
// resumed run is bitwise the uninterrupted one. float16 starts at 2^24 with growth every 4 steps:
// it overflows, halves and grows across the checkpoint at step 6.
TEST_F(CliCheckpoint, SixteenBitRunsCheckpointFloat32AndResumeBitwise) {
  for (const std::string dtype : {"bfloat16", "float16"}) {
    SCOPED_TRACE(dtype);
    const std::string args = " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.FPROP_DTYPE=" + dtype +
                             " --fdl.LOSS_SCALE_INITIAL=16777216 --fdl.LOSS_SCALE_GROWTH_INTERVAL=4";
    const auto whole = train("", args + " --fdl.MAX_STEPS=12 --save_weights=" + (dir_.path() / (dtype + ".bin")).string(),
                             dtype + "-whole");
    train("", args + " --fdl.MAX_STEPS=6", dtype + "-resumed");
    const fs::path checkpoint = dir_.path() / (dtype + "-resumed") / "checkpoints" / "checkpoint_00000006";
    proto::CheckpointManifest manifest;
    ASSERT_TRUE(manifest.ParseFromString(file_bytes(checkpoint / "manifest.pb")));
    ASSERT_GT(manifest.tensors_size(), 0);
    for (const auto& t : manifest.tensors()) EXPECT_EQ(t.dtype(), "F32") << t.name();
    if (dtype == "float16") {
      EXPECT_GE(manifest.loss_scale(), 1.0);
      EXPECT_LT(manifest.loss_scale(), 16777216.0) << "2^24 overflows float16";
    } else {
      EXPECT_EQ(manifest.loss_scale(), 0.0) << "bfloat16 keeps no loss scale";
    }
    const auto resumed = train("", args + " --fdl.MAX_STEPS=12 --save_weights=" +
                                       (dir_.path() / (dtype + "-resumed.bin")).string(), dtype + "-resumed");
    EXPECT_NE(resumed.err.find("resumed from " + checkpoint.string()), std::string::npos) << resumed.err;
    const auto want = read_scalars(dir_.path() / (dtype + "-whole") / "summaries" / "train");
    const auto got = read_scalars(dir_.path() / (dtype + "-resumed") / "summaries" / "train");
    for (const char* tag : {"loss", "loss_scale", "grad_norm"}) {
      if (dtype != "float16" && std::string(tag) == "loss_scale") continue;
      const auto& w = want.at(tag);
      const auto& g = got.at(tag);
      ASSERT_EQ(w.size(), 12u) << tag;
      ASSERT_EQ(g.size(), 12u) << tag << ": 6 steps, then 6 resumed";
      for (std::size_t i = 6; i < 12; ++i) EXPECT_EQ(g[i].value, w[i].value) << tag << " at step " << g[i].step;
    }
    EXPECT_EQ(file_bytes(dir_.path() / (dtype + "-resumed.bin")), file_bytes(dir_.path() / (dtype + ".bin")));
  }
}

// A float16 checkpoint whose loss-scale fields are out of range (edited, or written by a broken
// tool): NaN, negative, not a power of two, beyond 2^24, or a negative clean-step count. Resuming
// from it is a one-line error naming the loss scale, never a run with a scale no run could reach
// (a negative scale would flip every update).
TEST_F(CliCheckpoint, LossScaleFieldsOutOfRangeAreRefusedInOneLine) {
  const std::string args = " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.FPROP_DTYPE=float16 --fdl.MAX_STEPS=";
  train("", args + "2", "fp16");
  const fs::path manifest_path = dir_.path() / "fp16" / "checkpoints" / "checkpoint_00000002" / "manifest.pb";
  proto::CheckpointManifest good;
  ASSERT_TRUE(good.ParseFromString(file_bytes(manifest_path)));
  ASSERT_GT(good.loss_scale(), 0.0);
  const struct {
    double scale;
    long clean_steps;
  } cases[] = {{std::nan(""), 0}, {-65536, 0}, {3, 0}, {std::ldexp(1.0, 30), 0}, {0.5, 0},
               {std::numeric_limits<double>::infinity(), 0}, {65536, -1}};
  for (const auto& c : cases) {
    SCOPED_TRACE("loss scale " + std::to_string(c.scale) + " after " + std::to_string(c.clean_steps) + " clean steps");
    proto::CheckpointManifest bad = good;
    bad.set_loss_scale(c.scale);
    bad.set_loss_scale_clean_steps(c.clean_steps);
    std::ofstream(manifest_path, std::ios::binary | std::ios::trunc) << checkpoint::seal_manifest(bad);
    const auto r = run_command(kBinary + kJob + args + "4 --job_log_dir=" + (dir_.path() / "fp16").string());
    EXPECT_EQ(r.exit_code, kExitUsage) << r.err;
    const std::size_t at = r.err.find("pax-ocl: error: ");
    ASSERT_NE(at, std::string::npos) << r.err;
    const std::string error = r.err.substr(at);
    EXPECT_EQ(count_lines(error), 1) << r.err;  // the last line, and one
    EXPECT_NE(error.find("checkpoint_00000002: the checkpoint's loss scale"), std::string::npos) << error;
  }
  std::ofstream(manifest_path, std::ios::binary | std::ios::trunc) << checkpoint::seal_manifest(good);
  train("", args + "4", "fp16");  // the untouched manifest resumes
}

TEST_F(CliCheckpoint, ACheckpointRestoresOntoAnotherMesh) {
  const std::vector<float> want = reference();
  auto expect_close = [&](const std::vector<float>& got, const char* what) {
    ASSERT_EQ(got.size(), 6u) << what;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[6 + i], 2e-4 * want[6 + i]) << what << " " << i;
  };
  // Saved under FSDP over 2 devices, resumed on 1 device.
  train("", " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,2,1] --fdl.MAX_STEPS=6", "fsdp");
  const auto one = train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=12", "fsdp");
  EXPECT_NE(one.err.find("saved as data 1 x fsdp 2"), std::string::npos) << one.err;
  expect_close(train_losses(dir_.path() / "fsdp", 7), "FSDP [1,2,1] -> 1 device");
  // Saved on 1 device, resumed by 2 processes (DCN [2,1,1]).
  train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=6", "dcn");
  train(kMpirun, " --devices=0 --fdl.PERCORE_BATCH_SIZE=2 --fdl.DCN_MESH_SHAPE=[2,1,1] --fdl.MAX_STEPS=12", "dcn");
  expect_close(train_losses(dir_.path() / "dcn", 7), "1 device -> DCN [2,1,1]");
  // Saved by 2 FSDP processes (each its own part), resumed on 1 device.
  train(kMpirun, " --devices=0 --fdl.PERCORE_BATCH_SIZE=2 --fdl.DCN_MESH_SHAPE=[1,2,1] --fdl.MAX_STEPS=6", "dcn_fsdp");
  EXPECT_TRUE(fs::exists(dir_.path() / "dcn_fsdp" / "checkpoints" / "checkpoint_00000006" / "part-00001.safetensors"));
  train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=12", "dcn_fsdp");
  expect_close(train_losses(dir_.path() / "dcn_fsdp", 7), "DCN FSDP [1,2,1] -> 1 device");
}

// FSDP resumes by re-sharding the checkpoint's parameters and Adam moments over its devices: a
// resumed FSDP run is bitwise the uninterrupted one (losses and final weights), and a checkpoint
// saved on one device continues under FSDP along the one-device curve.
TEST_F(CliCheckpoint, FsdpResumesBitwiseAndFromAnotherMesh) {
  const std::string fsdp = " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,2,1]";
  train("", fsdp + " --fdl.MAX_STEPS=12 --save_weights=" + (dir_.path() / "fsdp-whole.bin").string(), "fsdp-whole");
  const std::vector<float> whole = train_losses(dir_.path() / "fsdp-whole");
  ASSERT_EQ(whole.size(), 12u);
  train("", fsdp + " --fdl.MAX_STEPS=6", "fsdp-resumed");
  const auto r = train("", fsdp + " --fdl.MAX_STEPS=12 --save_weights=" + (dir_.path() / "fsdp-resumed.bin").string(),
                       "fsdp-resumed");
  EXPECT_NE(r.err.find("resumed from " + (dir_.path() / "fsdp-resumed" / "checkpoints" / "checkpoint_00000006").string()),
            std::string::npos) << r.err;
  EXPECT_EQ(train_losses(dir_.path() / "fsdp-resumed", 7), std::vector<float>(whole.begin() + 6, whole.end()));
  EXPECT_TRUE(file_bytes(dir_.path() / "fsdp-resumed.bin") == file_bytes(dir_.path() / "fsdp-whole.bin"))
      << "the resumed run's final weights differ";

  // Saved on 1 device, resumed under FSDP over 2 devices.
  const std::vector<float> want = reference();
  train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=6", "into_fsdp");
  const auto into = train("", fsdp + " --fdl.MAX_STEPS=12", "into_fsdp");
  EXPECT_NE(into.err.find("saved as data 1 x fsdp 1"), std::string::npos) << into.err;
  const std::vector<float> got = train_losses(dir_.path() / "into_fsdp", 7);
  ASSERT_EQ(got.size(), 6u);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[6 + i], 2e-4 * want[6 + i]) << i;
}

TEST_F(CliCheckpoint, SigusrSavesTheStepAndExitsWithTheRequeueCode) {
  const fs::path job = dir_.path() / "preempted";
  const std::string command = kBinary + kJob + " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=1000000" +
                              " --fdl.CHECKPOINT_EVERY_N_STEPS=0 --job_log_dir=" + job.string();
  // Signal it once it trains, as Slurm's --signal=USR1@... would.
  const auto r = run_command("sh -c '" + command + " & pid=$!; for i in $(seq 1800); do grep -q \"first step done\" " +
                             (job / "train.log").string() + " 2>/dev/null && break; sleep 0.1; done; sleep 0.3; " +
                             "kill -USR1 $pid; wait $pid; echo exit=$?'");
  EXPECT_NE(r.out.find("exit=75"), std::string::npos) << r.out << r.err;
  const std::vector<long> steps = checkpoint_steps(job);
  ASSERT_EQ(steps.size(), 2u) << "step 0 and the preemption's";
  EXPECT_NE(r.err.find("stopped at step " + std::to_string(steps[1]) + " on signal"), std::string::npos) << r.err;
  const auto again = run_command(kBinary + kJob + " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=" +
                                 std::to_string(steps[1] + 2) + " --job_log_dir=" + job.string());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(train_losses(job, steps[1] + 1).size(), 2u) << again.out;
}

TEST_F(CliCheckpoint, ADamagedNewestCheckpointFallsBackToTheOneBefore) {
  reference();
  const fs::path part = dir_.path() / "reference" / "checkpoints" / "checkpoint_00000012" / "part-00000.safetensors";
  fs::resize_file(part, fs::file_size(part) - 100);
  const auto r = train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=12", "reference");
  EXPECT_NE(r.err.find(part.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("checkpoint_00000008 (step 8"), std::string::npos) << r.err;
  EXPECT_EQ(train_losses(dir_.path() / "reference", 9), std::vector<float>(reference_.begin() + 8, reference_.end()));
}

// Issue 14's heap overflow: an experiment.json whose MAX_SEQ_LEN wrapped the layout to 16 floats, and
// a crafted checkpoint (a piece of 2048 floats, no files listed so no CRC check). export validates the
// experiment before building anything from it.
TEST_F(CliCheckpoint, ExportRefusesAnExperimentThatWouldWrapTheLayout) {
  const fs::path job = dir_.path() / "crafted";
  fs::create_directories(job / "checkpoints" / "checkpoint_00000000");
  std::ofstream(job / "experiment.json") << R"({"fdl_config":"Default","NUM_LAYERS":0,"MODEL_DIMS":16,"MAX_SEQ_LEN":-129,"VOCAB_SIZE":1})";
  std::ofstream(job / "checkpoints" / "checkpoint_00000000" / "manifest.pb") << "crafted";
  const auto r = run_command(kBinary + " export --job_log_dir=" + job.string() + " --output=" + (dir_.path() / "x.bin").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("MAX_SEQ_LEN=-129: the value must be in [1,"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// A job directory holds one model: a run whose model-defining settings differ is refused (naming
// both values) even where every tensor would fit (fewer layers; 8 heads of 8 for 4 of 16), by train
// before it rewrites experiment.json and by eval; settings that do not define the model still change.
TEST_F(CliCheckpoint, AJobDirectoryOfAnotherModelIsRefusedByName) {
  const std::string base = " --devices=0 --fdl.PERCORE_BATCH_SIZE=4";
  train("", base + " --fdl.MAX_STEPS=1", "one");
  const fs::path job = dir_.path() / "one";
  const std::string experiment = file_bytes(job / "experiment.json");
  for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
           {" --fdl.NUM_LAYERS=1", "NUM_LAYERS 2 (saved) vs 1 (requested)"},
           {" --fdl.NUM_HEADS=8 --fdl.DIMS_PER_HEAD=8", "NUM_HEADS 4 (saved) vs 8 (requested), DIMS_PER_HEAD 16 vs 8"},
           {" --fdl.VOCAB_SIZE=500", "VOCAB_SIZE 512 (saved) vs 500 (requested)"}}) {
    SCOPED_TRACE(flags);
    const auto r = run_command(kBinary + kJob + base + " --fdl.MAX_STEPS=2" + flags + " --job_log_dir=" + job.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("saved for another model: " + named), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("use another --job_log_dir"), std::string::npos) << r.err;
    EXPECT_EQ(file_bytes(job / "experiment.json"), experiment);
    EXPECT_EQ(checkpoint_steps(job), (std::vector<long>{0, 1}));
  }
  const auto e = run_command(kBinary + " eval --devices=0 --fdl.NUM_LAYERS=1 --job_log_dir=" + job.string());
  EXPECT_EQ(e.exit_code, 2) << e.err;
  EXPECT_NE(e.err.find("NUM_LAYERS 2 (saved) vs 1 (requested)"), std::string::npos) << e.err;
  // Learning rate and steps are the run's, not the model's.
  const auto r = train("", base + " --fdl.MAX_STEPS=2 --fdl.LEARNING_RATE=0.01", "one");
  EXPECT_NE(r.err.find("resumed from"), std::string::npos) << r.err;
}

// --save_weights is checked before any training: a missing directory, a format that cannot hold the
// model (llm.c: no SSM blocks, no LLaMA). The job directory is not even created.
TEST_F(CliCheckpoint, SaveWeightsIsCheckedAtStartUp) {
  const fs::path job = dir_.path() / "never";
  for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
           {" --save_weights=/nonexistent/x.bin", "--save_weights=/nonexistent/x.bin: the directory /nonexistent"},
           {" --fdl.BLOCK_KINDS=attention,ssm --save_weights=" + (dir_.path() / "x.bin").string(),
            "an llm.c checkpoint holds attention blocks only"},
           {" --fdl.ARCHITECTURE=llama --save_weights=" + (dir_.path() / "x.bin").string(),
            "the llm.c format (.bin) holds GPT-2 models only; for this LLaMA give FILE.safetensors"}}) {
    SCOPED_TRACE(flags);
    const auto r = run_command(kBinary + kJob + " --devices=0 --fdl.MAX_STEPS=1" + flags + " --job_log_dir=" + job.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(job));
  }
  EXPECT_FALSE(fs::exists(dir_.path() / "x.bin"));
}

TEST_F(CliCheckpoint, RetentionAndSavingOff) {
  train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=8 --fdl.CHECKPOINT_EVERY_N_STEPS=1"
            " --fdl.CHECKPOINT_MAX_TO_KEEP=3 --fdl.ASYNC_CHECKPOINTING=false", "kept");
  EXPECT_EQ(checkpoint_steps(dir_.path() / "kept"), (std::vector<long>{6, 7, 8}));
  train("", " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.MAX_STEPS=3 --enable_checkpoint_saving=false", "off");
  EXPECT_TRUE(checkpoint_steps(dir_.path() / "off").empty());
}

TEST_F(CliCheckpoint, ExportWritesHuggingFaceSafetensorsThatLoadBackIdentically) {
  reference();
  const fs::path exported = dir_.path() / "model.safetensors", back = dir_.path() / "back.safetensors";
  const auto e = run_command(kBinary + " export --job_log_dir=" + (dir_.path() / "reference").string() +
                             " --output=" + exported.string());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(file_bytes(exported).find("transformer.h.1.attn.c_attn.weight"), std::string::npos);
  // Loaded as initial weights and saved again without a step: the same bytes.
  const auto r = run_command(kBinary + " train --fdl.DATA=synthetic --fdl.NUM_HEADS=4 --fdl.MAX_STEPS=0 --devices=0"
                             " --enable_checkpoint_saving=false --fdl.EVAL_INTERVAL_STEPS=0 --init_from=" + exported.string() +
                             " --save_weights=" + back.string() + " --job_log_dir=" + (dir_.path() / "back").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(file_bytes(back), file_bytes(exported));
  // The llm.c export holds the same weights as the run's own --save_weights file.
  ASSERT_EQ(run_command(kBinary + " export --job_log_dir=" + (dir_.path() / "reference").string() + " --step=12 --output=" +
                        (dir_.path() / "model.bin").string()).exit_code, 0);
  EXPECT_EQ(file_bytes(dir_.path() / "model.bin"), file_bytes(dir_.path() / "reference.bin"));
  const auto bad = run_command(kBinary + " export --job_log_dir=" + (dir_.path() / "reference").string() +
                               " --step=5 --output=x.safetensors");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("checkpoint_00000005 does not exist"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace paxocl::testing
