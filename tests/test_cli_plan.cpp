// `pax-ocl plan` as users run it: GPT175B on 256 H100s gets a verdict and a step time with no
// OpenCL platform at all (no device work); its JSON holds the same figures; bad input is one line and
// exit code 2. And training refuses a layout that cannot fit before it allocates anything: GPT5B
// on one PoCL device used to die in clCreateBuffer allocating 'parameters' (18.8 GiB); a pipeline's
// layout (the circular schedule's chunks too) is planned (and refused) as its stages hold it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

const std::string kBinary = PAXOCL_BINARY;

TEST(CliPlan, Gpt175bOn256H100sGivesAVerdictAndAStepTime) {
  TempDir dir;
  const auto json_file = dir.path() / "plan.json";
  // No OpenCL platform at all: plan must not need one.
  const CommandResult r = run_command("OCL_ICD_VENDORS=/nonexistent " + kBinary +
                                      " plan --fdl_config=GPT175B --accelerator=H100 --json=" + json_file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("layout: data 1 x fsdp 256 x tensor 1 = 256 devices (ICI [1,8,1] x DCN [1,32,1]"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("accelerator: NVIDIA H100 SXM5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("s per step"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nverdict: "), std::string::npos) << r.out;

  std::ifstream in(json_file);
  const nlohmann::json j = nlohmann::json::parse(in);
  const double per_device_parameters = j["memory_bytes"]["parameters"].get<double>();
  EXPECT_NEAR(per_device_parameters, 175e9 * 4 / 256, 0.02 * 175e9 * 4 / 256);
  EXPECT_GT(j["step_time"]["step_s"].get<double>(), 0.0);
  EXPECT_EQ(j["layout"]["devices"].get<int>(), 256);
  const bool fits = j["fits"].get<bool>();
  EXPECT_EQ(r.out.find(fits ? "verdict: fits: " : "verdict: does not fit: ") != std::string::npos, true) << r.out;
  EXPECT_EQ(j.contains("smallest_layout"), !fits) << j.dump(2);
}

// The SSM's FFT workspace is counted where the devices convolve through clFFT: on the host's CPU
// devices with SSM_CONVOLUTION=auto only beyond 256 positions (kernels::ssm_fft_requested), on a
// GPU always; SSM_CONVOLUTION=fft everywhere.
TEST(CliPlan, CountsTheSsmFftWorkspaceWhereTheConvolutionRunsThroughClfft) {
  const std::string workspace = "SSM FFT workspace";
  auto plan = [&](const std::string& args) {
    const CommandResult r = run_command("OCL_ICD_VENDORS=/nonexistent " + kBinary + " plan --fdl_config=SsmKJV" + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    return r.out;
  };
  EXPECT_EQ(plan("").find(workspace), std::string::npos) << plan("");
  EXPECT_NE(plan(" --fdl.SSM_CONVOLUTION=fft").find(workspace), std::string::npos);
  EXPECT_NE(plan(" --fdl.MAX_SEQ_LEN=512 --fdl.PERCORE_BATCH_SIZE=2").find(workspace), std::string::npos);
  EXPECT_NE(plan(" --accelerator=H100").find(workspace), std::string::npos);
  EXPECT_EQ(plan(" --fdl.SSM_CONVOLUTION=direct --accelerator=H100").find(workspace), std::string::npos);
}

TEST(CliPlan, APipelineShowsItsStagesMicrobatchesBubbleAndSends) {
  TempDir dir;
  const auto json_file = dir.path() / "plan.json";
  const CommandResult r = run_command("OCL_ICD_VENDORS=/nonexistent " + kBinary +
                                      " plan --fdl.NUM_LAYERS=4 --fdl.ICI_MESH_SHAPE=[2,2,1,1] --fdl.DCN_MESH_SHAPE=[2,1,1,1] "
                                      "--fdl.NUM_MICROBATCHES=4 --fdl.PIPELINE_SCHEDULE=gpipe --accelerator=H100 --json=" +
                                      json_file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"layout: stage 4 x data 2 x fsdp 1 x tensor 1 = 8 devices (ICI [2,2,1,1] x DCN [2,1,1,1]",
                           "pipeline: 4 stages of 1 block(s), PIPELINE_SCHEDULE gpipe, 4 microbatches of 8 sequence(s); at "
                           "most 4 in flight on a device; bubble (p-1)/(m+p-1) = 42.9% of the step",
                           "activations (4 microbatches in flight)", "PP send, activations (forward)",
                           "point to point (PP sends)", "pipeline bubble"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << " missing from:\n" << r.out;
  }
  std::ifstream in(json_file);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["pipeline"]["stages"].get<int>(), 4);
  EXPECT_EQ(j["pipeline"]["schedule"].get<std::string>(), "gpipe");
  EXPECT_DOUBLE_EQ(j["pipeline"]["bubble_fraction"].get<double>(), 3.0 / 7);
  EXPECT_GT(j["pipeline"]["point_to_point_dcn_bytes"].get<double>(), 0.0);
  EXPECT_EQ(j["layout"]["ici_mesh_shape"], nlohmann::json::parse("[2,2,1,1]"));
}

TEST(CliPlan, ACircularPipelineShowsItsChunksAndItsBubble) {
  TempDir dir;
  const auto json_file = dir.path() / "plan.json";
  const CommandResult r = run_command("OCL_ICD_VENDORS=/nonexistent " + kBinary +
                                      " plan --fdl.NUM_LAYERS=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=4 "
                                      "--fdl.PIPELINE_SCHEDULE=circular --fdl.CIRCULAR_REPEAT=2 --accelerator=H100 --json=" +
                                      json_file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"(ICI [2,1,1,1] x DCN [1,1,1], 1 process; 2 chunks per stage)",
                           "pipeline: 2 stages of 2 chunks of 1 block(s), PIPELINE_SCHEDULE circular x 2, 4 microbatches "
                           "of 4 sequence(s); at most 4 in flight per chunk; bubble (p-1)/(r*m+p-1) = 11.1% of the step",
                           "activations (4 microbatches in flight x 2 chunks)"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << " missing from:\n" << r.out;
  }
  std::ifstream in(json_file);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["pipeline"]["circular_repeat"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(j["pipeline"]["bubble_fraction"].get<double>(), 1.0 / 9);
  EXPECT_NE(j["layout"]["flags"].get<std::string>().find("--fdl.CIRCULAR_REPEAT=2"), std::string::npos);
  // The job's rules, one line: 4 chunks of 2 blocks do not split 6.
  const CommandResult bad = run_command(kBinary + " plan --fdl.NUM_LAYERS=6 --fdl.ICI_MESH_SHAPE=[2,1,1,1] "
                                        "--fdl.NUM_MICROBATCHES=4 --fdl.PIPELINE_SCHEDULE=circular --fdl.CIRCULAR_REPEAT=2");
  EXPECT_EQ(bad.exit_code, kExitUsage) << bad.out << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find("CIRCULAR_REPEAT=2 does not split NUM_LAYERS=6"), std::string::npos) << bad.err;
}

TEST(CliPlan, BadInputIsOneLineAndExitCode2) {
  // Zero, negative and 2^40 sizes, and meshes whose device count overflows a 32-bit product.
  for (const std::string& flags :
       {std::string("--accelerator=Z80"), std::string("--fdl.ICI_MESH_SHAPE=[1,1,3]"), std::string("--mfu=1.5"),
        std::string("--acelerator=H100"), std::string("--dcn_bandwidth=-1"), std::string("--fdl.NUM_LAYERS=0"),
        std::string("--fdl.MODEL_DIMS=-4"), std::string("--fdl.MAX_SEQ_LEN=0"), std::string("--fdl.PERCORE_BATCH_SIZE=0"),
        std::string("--fdl.PERCORE_BATCH_SIZE=1099511627776"), std::string("--fdl.VOCAB_SIZE=1099511627776"),
        std::string("--fdl.NUM_LAYERS=1099511627776"), std::string("--fdl.ICI_MESH_SHAPE=[0,1,1]"),
        std::string("--fdl.ICI_MESH_SHAPE=[65536,65536,1]"),
        std::string("--fdl.ICI_MESH_SHAPE=[4096,1,1] --fdl.DCN_MESH_SHAPE=[4096,1,1]"),
        std::string("--fdl.NUM_LAYERS=65536 --fdl.MODEL_DIMS=268435456 --fdl.NUM_HEADS=1 --fdl.DIMS_PER_HEAD=268435456")}) {
    const CommandResult r = run_command(kBinary + " plan " + flags);
    EXPECT_EQ(r.exit_code, kExitUsage) << flags << ": " << r.out << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << flags << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << flags << ": " << r.out;
  }
  // The tensor size names the number it does not divide.
  EXPECT_NE(run_command(kBinary + " plan --fdl.ICI_MESH_SHAPE=[1,1,3]").err.find("NUM_HEADS=4"), std::string::npos);
  const std::string too_many = run_command(kBinary + " plan --fdl.ICI_MESH_SHAPE=[4096,1,1] --fdl.DCN_MESH_SHAPE=[4096,1,1]").err;
  EXPECT_NE(too_many.find("= 16777216 devices, more than 1048576"), std::string::npos) << too_many;
}

// SEQUENCE_PARALLEL's rows of one pass (here a pipeline's microbatch of 1 x 31 rows over tensor 2):
// `plan` refuses what `train` refuses, in the same line, and train before writing anything.
TEST(CliPlan, SequenceParallelRowsArePlanAndTrainsOneError) {
  TempDir dir;
  const std::string layout = " --fdl.NUM_LAYERS=4 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=256 --fdl.NUM_HEADS=2"
                             " --fdl.DIMS_PER_HEAD=32 --fdl.FPROP_DTYPE=float32 --fdl.MAX_SEQ_LEN=31"
                             " --fdl.PERCORE_BATCH_SIZE=1 --fdl.ICI_MESH_SHAPE=[2,1,1,2] --fdl.SEQUENCE_PARALLEL=true";
  const CommandResult plan = run_command(kBinary + " plan" + layout);
  const CommandResult train = run_command(kBinary + " train --fdl.DATA=synthetic" + layout +
                                          " --job_log_dir=" + (dir.path() / "job").string());
  for (const CommandResult* r : {&plan, &train}) {
    EXPECT_EQ(r->exit_code, kExitUsage) << r->out << r->err;
    EXPECT_EQ(count_lines(r->err), 1) << r->err;
    EXPECT_NE(r->err.find("SEQUENCE_PARALLEL: a microbatch of 1 sequence(s) (4 / 4 microbatches) has 1 x 31 = 31 rows"
                          " (sequences x MAX_SEQ_LEN), which the tensor axis 2 does not divide; set NUM_MICROBATCHES or"
                          " MICROBATCH_SIZE or MAX_SEQ_LEN"),
              std::string::npos)
        << r->err;
  }
  EXPECT_EQ(plan.err, train.err);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "job" / "checkpoints"));
}

TEST(CliPlan, TrainingRefusesALayoutThatCannotFitInOneLine) {
  TempDir dir;
  const CommandResult r = run_command(kBinary + " train --fdl_config=GPT5B --fdl.ICI_MESH_SHAPE=[1,1,1] "
                                      "--fdl.DCN_MESH_SHAPE=[1,1,1] --job_log_dir=" + (dir.path() / "job").string());
  EXPECT_EQ(r.exit_code, kExitUsage) << r.out << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.find("clCreateBuffer"), std::string::npos) << r.err;
  for (const char* part : {"does not fit", "needs", "the device has", "'parameters' (18.8 GiB)",
                           "the smallest layout that fits is"}) {
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " missing from: " << r.err;
  }
  // Two stages halve the state, not enough: the check plans the pipeline as its stages hold it.
  const CommandResult pp = run_command(kBinary + " train --fdl_config=GPT5B --fdl.ICI_MESH_SHAPE=[2,1,1,1] "
                                       "--fdl.DCN_MESH_SHAPE=[1,1,1] --fdl.PERCORE_BATCH_SIZE=1 --job_log_dir=" +
                                       (dir.path() / "pp").string());
  EXPECT_EQ(pp.exit_code, kExitUsage) << pp.out << pp.err;
  EXPECT_EQ(count_lines(pp.err), 1) << pp.err;
  EXPECT_NE(pp.err.find("the layout stage 2 x data 1 x fsdp 1 x tensor 1 = 2 devices"), std::string::npos) << pp.err;
}

}  // namespace
}  // namespace paxocl::testing
