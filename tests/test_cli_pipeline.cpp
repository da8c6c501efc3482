// Pipeline parallelism as users run it (scheduler/pipeline_step.h): the stage axis alone, with
// data parallelism, with FSDP (the optimizer sharded) and with tensor parallelism inside the stages, over devices of a process (ICI) and over processes (DCN, mpirun), both
// schedules (gpipe, 1f1b, circular), GPT (tied token table on both ends), LLaMA and a GPT/S4D hybrid: 10 steps' losses
// equal one device's with the same global batch within fp32 rounding (relative 2e-4, the bound
// every layout test uses), and the whole weights after them; gpipe and 1f1b, and remat under a
// pipeline, agree bit for bit; checkpoints move between pipelined layouts and one device;
// impossible layouts are one-line errors. (A stage's process killed mid-step: tests/rank_death.sh.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli_jobs.h"
#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSchedule = tiny_schedule(4);
const std::string kGpt = " train --fdl.HIDDEN_DIMS=256" + kSchedule;
const std::string kLlama = " train --fdl.ARCHITECTURE=llama --fdl.HIDDEN_DIMS=176 --fdl.NUM_KV_HEADS=2" + kSchedule;
const std::string kHybrid = kGpt + " --fdl.BLOCK_KINDS=attention,ssm,attention,ssm";

class CliPipeline : public ::testing::Test {
 protected:
  CommandResult train(const std::string& launcher, const std::string& model, const std::string& args,
                      const std::string& job) {
    const auto r = run_command(launcher + kBinary + model + args + " --job_log_dir=" + path(job).string());
    EXPECT_EQ(r.exit_code, 0) << job << ": " << r.err;
    return r;
  }
  fs::path path(const std::string& job) const { return dir_.path() / job; }
  std::string save(const std::string& job) const { return " --save_weights=" + (path(job) / "final.safetensors").string(); }
  std::vector<float> one_device(const std::string& model, const std::string& job, const std::string& extra = "") {
    train("", model, " --devices=0 --fdl.PERCORE_BATCH_SIZE=8" + extra + save(job), job);
    std::vector<float> losses = train_losses(path(job));
    EXPECT_EQ(losses.size(), 10u);
    return losses;
  }
  void expect_close(const std::string& job, const std::vector<float>& want, const std::string& what,
                    long first_step = 1) {
    const std::vector<float> got = train_losses(path(job), first_step);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-4 * want[i]) << what << " step " << i + 1;
  }
  // The whole weights assembled from the stages: one device's up to fp32 rounding.
  void expect_weights_close(const std::string& job, const std::string& reference) {
    const std::vector<float> want = weights_of(path(reference) / "final.safetensors");
    const std::vector<float> got = weights_of(path(job) / "final.safetensors");
    ASSERT_EQ(got.size(), want.size()) << job;
    ASSERT_GT(got.size(), 1000u);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-5) << job << " element " << i;
  }
  TempDir dir_;
};

TEST_F(CliPipeline, GptLayoutsMatchOneDevice) {
  const std::vector<float> want = one_device(kGpt, "one");  // global batch 8 everywhere

  const auto two = train("", kGpt, " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=4"
                                   " --fdl.TRACE_STEPS=[3]" + save("ici2"), "ici2");
  EXPECT_NE(two.out.find("pipeline parallel (stage 2 x data 1, 1f1b, 4 microbatches of 2) over 2 device(s)"),
            std::string::npos) << two.out;
  // The microbatches of the device whose activation bytes are printed, as `pax-ocl plan` counts them.
  EXPECT_NE(two.out.find("at most 2 microbatches of 2 x 32 tokens in flight, on the device holding the most"),
            std::string::npos) << two.out;
  expect_close("ici2", want, "ICI [2,1,1,1] 1f1b");
  expect_weights_close("ici2", "one");
  // The two stages share a context (ICI_ALGORITHM=ring): messages move device to device; with
  // ICI_ALGORITHM=host they go through host memory, to the same bits.
  EXPECT_NE(two.err.find("2 channel(s) device to device (one OpenCL context), 0 through host memory"),
            std::string::npos) << two.err;
  const auto host = train("", kGpt, " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=4"
                                    " --fdl.ICI_ALGORITHM=host" + save("ici2-host"), "ici2-host");
  EXPECT_NE(host.err.find("0 channel(s) device to device (one OpenCL context), 2 through host memory"),
            std::string::npos) << host.err;
  EXPECT_EQ(train_losses(path("ici2-host")), train_losses(path("ici2")));
  EXPECT_TRUE(file_bytes(path("ici2-host") / "final.safetensors") == file_bytes(path("ici2") / "final.safetensors"));
  // The messages' copies out of and into the devices are on the trace's communication track: per
  // microbatch, the activation's send and receive and the gradient's.
  std::ifstream in(path("ici2") / "trace.json");
  const nlohmann::json trace = nlohmann::json::parse(in);
  int transfers = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X" && e.value("name", "").rfind("pipeline ", 0) == 0 && e.value("name", "").find("(step 3)") != std::string::npos) {
      ++transfers;
    }
  }
  EXPECT_EQ(transfers, 4 * 4);
  EXPECT_NE(two.err.find("step 3 trace:"), std::string::npos) << two.err;

  // gpipe holds all 4 microbatches, sums the same gradients in the same order: the same bits.
  const auto gpipe = train("", kGpt, " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=4"
                                     " --fdl.PIPELINE_SCHEDULE=gpipe" + save("gpipe"), "gpipe");
  EXPECT_NE(gpipe.out.find("at most 4 microbatches of 2 x 32 tokens in flight"), std::string::npos) << gpipe.out;
  EXPECT_GT(activation_mib(gpipe.out), activation_mib(two.out));
  EXPECT_EQ(train_losses(path("gpipe")), train_losses(path("ici2")));
  EXPECT_TRUE(file_bytes(path("gpipe") / "final.safetensors") == file_bytes(path("ici2") / "final.safetensors"));
  // Rematerialization inside the stages: bit for bit again.
  train("", kGpt, " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=4"
                  " --fdl.CHECKPOINT_POLICY=SAVE_NOTHING" + save("remat"), "remat");
  EXPECT_EQ(train_losses(path("remat")), train_losses(path("ici2")));
  EXPECT_TRUE(file_bytes(path("remat") / "final.safetensors") == file_bytes(path("ici2") / "final.safetensors"));

  // The circular schedule: 4 chunks of one block, two per stage, round robin.
  const auto circular = train("", kGpt, " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=4"
                                        " --fdl.PIPELINE_SCHEDULE=circular --fdl.CIRCULAR_REPEAT=2" + save("circular"),
                              "circular");
  EXPECT_NE(circular.out.find("pipeline parallel (stage 2 x data 1, circular x 2, 4 microbatches of 2)"),
            std::string::npos) << circular.out;
  // Each device holds its 2 chunks' instances, 4 microbatches each (plan: "at most 4 in flight per chunk").
  EXPECT_NE(circular.out.find("at most 4 microbatches of 2 x 32 tokens in flight per chunk, x 2 chunks"),
            std::string::npos) << circular.out;
  expect_close("circular", want, "ICI [2,1,1,1] circular x 2");
  expect_weights_close("circular", "one");
  train(kMpirun, kGpt, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=2"
                       " --fdl.PIPELINE_SCHEDULE=circular --fdl.CIRCULAR_REPEAT=2", "circular_dcn");
  expect_close("circular_dcn", want, "DCN [2,1,1,1] circular x 2");

  train(kFourDevices, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[4,1,1,1] --fdl.PIPELINE_SCHEDULE=gpipe",
        "ici4");
  expect_close("ici4", want, "ICI [4,1,1,1] gpipe, 8 microbatches of 1");
  train(kFourDevices, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,2,1,1] --fdl.MICROBATCH_SIZE=2", "ici22");
  expect_close("ici22", want, "ICI [2,2,1,1]");
  train(kMpirun, kGpt, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[2,1,1,1]" + save("dcn2"), "dcn2");
  expect_close("dcn2", want, "DCN [2,1,1,1]");
  expect_weights_close("dcn2", "one");
  train(kMpirun, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.DCN_MESH_SHAPE=[1,2,1,1]",
        "ici_stage_dcn_data");
  expect_close("ici_stage_dcn_data", want, "ICI [2,1,1,1] x DCN [1,2,1,1]");
  train(kMpirun, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,2,1,1] --fdl.DCN_MESH_SHAPE=[2,1,1,1]",
        "dcn_stage_ici_data");
  expect_close("dcn_stage_ici_data", want, "ICI [1,2,1,1] x DCN [2,1,1,1]");
}

// Tensor parallelism inside the stages: each stage's tensor group sums its partial results, each
// tensor rank sends its copy (under SEQUENCE_PARALLEL its rows) to the same rank of the next stage.
TEST_F(CliPipeline, TensorParallelStagesMatchOneDevice) {
  const std::vector<float> want = one_device(kGpt, "one");
  train(kFourDevices, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1,2]" + save("pp_tp"), "pp_tp");
  expect_close("pp_tp", want, "ICI [2,1,1,2]");
  expect_weights_close("pp_tp", "one");
  // SEQUENCE_PARALLEL sums the norms' gradients over the tensor group once per microbatch: only that
  // microbatch's part (summing the accumulated gradients again once shifted the norm weights by 3.6e-3).
  train(kFourDevices, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1,2] --fdl.SEQUENCE_PARALLEL=true"
                            " --fdl.NUM_MICROBATCHES=4" + save("pp_tp_sp"), "pp_tp_sp");
  expect_close("pp_tp_sp", want, "ICI [2,1,1,2] with SEQUENCE_PARALLEL");
  expect_weights_close("pp_tp_sp", "one");
  train(kMpirun, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,1,1,2] --fdl.DCN_MESH_SHAPE=[2,1,1,1]" +
                           save("dcn_pp_ici_tp"), "dcn_pp_ici_tp");
  expect_close("dcn_pp_ici_tp", want, "ICI [1,1,1,2] x DCN [2,1,1,1]");
  expect_weights_close("dcn_pp_ici_tp", "one");
  // LLaMA with its kv heads split, and a checkpoint of the layout resumed on one device.
  const std::vector<float> llama = one_device(kLlama + " --fdl.CHECKPOINT_EVERY_N_STEPS=5", "llama-one");
  train(kFourDevices, kLlama, " --fdl.CHECKPOINT_EVERY_N_STEPS=5 --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1,2]"
                              " --fdl.MAX_STEPS=5", "llama-pp_tp");
  expect_close("llama-pp_tp", std::vector<float>(llama.begin(), llama.begin() + 5), "LLaMA ICI [2,1,1,2]");
  // RMSNorm's gradients under SEQUENCE_PARALLEL with 2 microbatches: the same layout's weights
  // without it (LLaMA's tensor-parallel weights drift from one device's by 7e-5 in 10 steps, in
  // rarely seen embedding rows, with or without SEQUENCE_PARALLEL).
  const std::string llama_pp_tp = " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1,2] --fdl.NUM_MICROBATCHES=2";
  train(kFourDevices, kLlama, llama_pp_tp + save("llama-pp_tp2"), "llama-pp_tp2");
  train(kFourDevices, kLlama, llama_pp_tp + " --fdl.SEQUENCE_PARALLEL=true" + save("llama-pp_tp_sp"), "llama-pp_tp_sp");
  expect_close("llama-pp_tp_sp", llama, "LLaMA ICI [2,1,1,2] with SEQUENCE_PARALLEL");
  expect_weights_close("llama-pp_tp_sp", "llama-pp_tp2");
  train("", kLlama, " --fdl.CHECKPOINT_EVERY_N_STEPS=5 --devices=0 --fdl.PERCORE_BATCH_SIZE=8", "llama-pp_tp");
  expect_close("llama-pp_tp", std::vector<float>(llama.begin() + 5, llama.end()), "LLaMA ICI [2,1,1,2] -> 1 device", 6);
}

// FSDP inside the stages: the fsdp axis splits the rows and shards each stage's Adam moments; the
// gradients are reduce-scattered into the shards and the updated shards all-gathered, over ICI, over
// DCN and beside a tensor axis. Checkpoints hold whole moments assembled from the shards.
TEST_F(CliPipeline, FsdpInsideStagesMatchesOneDevice) {
  const std::string ckpt = " --fdl.CHECKPOINT_EVERY_N_STEPS=5";
  const std::vector<float> want = one_device(kGpt, "one", ckpt);
  const auto pp_fsdp = train(kFourDevices, kGpt, ckpt + " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,2,1]" +
                                                     save("pp_fsdp"), "pp_fsdp");
  EXPECT_NE(pp_fsdp.out.find("pipeline parallel (stage 2 x data 1 x fsdp 2, 1f1b, 4 microbatches of 1)"),
            std::string::npos) << pp_fsdp.out;
  expect_close("pp_fsdp", want, "ICI [2,1,2,1]");
  expect_weights_close("pp_fsdp", "one");
  // The same rows as data parallelism inside the stages, with half the moments per device.
  const auto pp_dp = train(kFourDevices, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,2,1,1]", "pp_dp");
  EXPECT_LT(reported_mib(pp_fsdp.out, "training state: "), reported_mib(pp_dp.out, "training state: ")) << pp_fsdp.out;

  train(kMpirun, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.DCN_MESH_SHAPE=[1,1,2,1]" +
                           save("dcn_fsdp"), "dcn_fsdp");
  expect_close("dcn_fsdp", want, "ICI [2,1,1,1] x DCN [1,1,2,1]");
  expect_weights_close("dcn_fsdp", "one");
  train(kFourDevices, kGpt, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,2,1] --fdl.PIPELINE_SCHEDULE=circular"
                            " --fdl.CIRCULAR_REPEAT=2", "circular_fsdp");
  expect_close("circular_fsdp", want, "ICI [2,1,2,1] circular x 2");
  // Stages over processes, each an fsdp x tensor grid of 4 devices.
  train(kFourDevices + kMpirun, kGpt, " --fdl.PERCORE_BATCH_SIZE=1 --fdl.ICI_MESH_SHAPE=[1,1,2,2]"
                                      " --fdl.DCN_MESH_SHAPE=[2,1,1,1]" + save("pp_fsdp_tp"), "pp_fsdp_tp");
  expect_close("pp_fsdp_tp", want, "ICI [1,1,2,2] x DCN [2,1,1,1]");
  expect_weights_close("pp_fsdp_tp", "one");

  // Checkpoints: sharded moments saved whole, resumed on one device; one device's resumed sharded.
  const std::vector<float> rest(want.begin() + 5, want.end());
  train(kFourDevices, kGpt, ckpt + " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,2,1] --fdl.MAX_STEPS=5",
        "from_fsdp");
  train("", kGpt, ckpt + " --devices=0 --fdl.PERCORE_BATCH_SIZE=8", "from_fsdp");
  expect_close("from_fsdp", rest, "ICI [2,1,2,1] -> 1 device", 6);
  train("", kGpt, ckpt + " --devices=0 --fdl.PERCORE_BATCH_SIZE=8 --fdl.MAX_STEPS=5", "into_fsdp");
  train(kMpirun, kGpt, ckpt + " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.DCN_MESH_SHAPE=[1,1,2,1]",
        "into_fsdp");
  expect_close("into_fsdp", rest, "1 device -> ICI [2,1,1,1] x DCN [1,1,2,1]", 6);

  // LLaMA (untied head), the GPT/S4D hybrid and 16-bit activations (float16: the loss scale's
  // skipped steps skip on every shard alike).
  for (const auto& [name, model] : {std::pair<std::string, std::string>{"llama", kLlama}, {"hybrid", kHybrid},
                                    {"bf16", kGpt + " --fdl.FPROP_DTYPE=bfloat16"},
                                    {"f16", kGpt + " --fdl.FPROP_DTYPE=float16"}}) {
    const std::vector<float> reference = one_device(model, name + "-one");
    train(kFourDevices, model, " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,1,2,1]", name + "-fsdp");
    expect_close(name + "-fsdp", reference, name + " ICI [2,1,2,1]");
  }
}

TEST_F(CliPipeline, LlamaHybridAndSixteenBitsMatchOneDevice) {
  const std::vector<float> llama = one_device(kLlama, "llama-one");
  train("", kLlama, " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1]" + save("llama-ici2"), "llama-ici2");
  expect_close("llama-ici2", llama, "LLaMA ICI [2,1,1,1] (untied head)");
  expect_weights_close("llama-ici2", "llama-one");

  const std::vector<float> hybrid = one_device(kHybrid, "hybrid-one");
  train("", kHybrid, " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.PIPELINE_SCHEDULE=gpipe",
        "hybrid-ici2");
  expect_close("hybrid-ici2", hybrid, "GPT/S4D hybrid ICI [2,1,1,1]");

  for (const std::string dtype : {"bfloat16", "float16"}) {
    const std::string model = kGpt + " --fdl.FPROP_DTYPE=" + dtype;
    const std::vector<float> want = one_device(model, dtype + "-one");
    train(kMpirun, model, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[2,1,1,1]", dtype + "-dcn2");
    expect_close(dtype + "-dcn2", want, dtype + " DCN [2,1,1,1]");
    // Every microbatch instance of the last stage seeds its backward at the loss scale (float16).
    train("", model, " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=4"
                     " --fdl.PIPELINE_SCHEDULE=gpipe", dtype + "-gpipe");
    expect_close(dtype + "-gpipe", want, dtype + " ICI [2,1,1,1] gpipe");
  }
}

TEST_F(CliPipeline, CheckpointsMoveBetweenPipelinedLayoutsAndOneDevice) {
  const std::string ckpt = " --fdl.CHECKPOINT_EVERY_N_STEPS=5";
  const std::vector<float> all = one_device(kGpt, "one", ckpt);
  const std::vector<float> want(all.begin() + 5, all.end());
  // Saved by a pipeline, resumed on one device.
  train("", kGpt, ckpt + " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.MAX_STEPS=5", "from_pp");
  const auto r = train("", kGpt, ckpt + " --devices=0 --fdl.PERCORE_BATCH_SIZE=8", "from_pp");
  EXPECT_NE(r.err.find("saved as stage 2 x data 1 x fsdp 1"), std::string::npos) << r.err;
  expect_close("from_pp", want, "stage 2 -> 1 device", 6);
  // Saved on one device, resumed by a pipeline of 4 stages.
  train("", kGpt, ckpt + " --devices=0 --fdl.PERCORE_BATCH_SIZE=8 --fdl.MAX_STEPS=5", "into_pp");
  train(kFourDevices, kGpt, ckpt + " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[4,1,1,1]", "into_pp");
  expect_close("into_pp", want, "1 device -> ICI [4,1,1,1]", 6);
  // Saved by stages in two processes, resumed by another pipelined layout.
  train(kMpirun, kGpt, ckpt + " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[2,1,1,1] --fdl.MAX_STEPS=5",
        "between");
  train(kFourDevices, kGpt, ckpt + " --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[2,2,1,1]", "between");
  expect_close("between", want, "DCN [2,1,1,1] -> ICI [2,2,1,1]", 6);
}

TEST_F(CliPipeline, ImpossibleLayoutsAreOneLineErrors) {
  const struct {
    std::string launcher, args, says;
  } cases[] = {
      {"", kGpt + " --fdl.NUM_LAYERS=3 --fdl.ICI_MESH_SHAPE=[2,1,1,1]",
       "a stage axis of 2 does not split NUM_LAYERS=3 into stages of whole blocks"},
      {"", kGpt + " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.NUM_MICROBATCHES=3",
       "NUM_MICROBATCHES=3 does not divide the 8 sequences each pipeline runs per step"},
      {"", kGpt + " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.MICROBATCH_SIZE=3",
       "MICROBATCH_SIZE=3 does not divide the 8 sequences"},
      {"", kGpt + " --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.MICROBATCH_SIZE=2 --fdl.NUM_MICROBATCHES=4",
       "NUM_MICROBATCHES=4 and MICROBATCH_SIZE=2: set one of them"},
      {"", kGpt + " --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.NUM_SUB_BATCHES=2", "set NUM_MICROBATCHES instead"},
      {"", kGpt + " --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.PIPELINE_SCHEDULE=zigzag", "PIPELINE_SCHEDULE"},
      {"", kGpt + " --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.CIRCULAR_REPEAT=2",
       "CIRCULAR_REPEAT=2 needs PIPELINE_SCHEDULE=circular"},
      {"", kGpt + " --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.PIPELINE_SCHEDULE=circular --fdl.CIRCULAR_REPEAT=3",
       "does not split NUM_LAYERS=4 into 6 chunks"},
      {"", kGpt + " --fdl.ICI_MESH_SHAPE=[2,1,1,1] --fdl.PIPELINE_SCHEDULE=circular --fdl.NUM_MICROBATCHES=1",
       "1 microbatches is not a multiple"},
      {"", kGpt + " --fdl.ICI_MESH_SHAPE=[2,1,1,1,1]", "ICI_MESH_SHAPE=[2,1,1,1,1]: expected 3 or 4 entries, got 5"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(c.launcher + kBinary + c.args + " --job_log_dir=" + path("bad").string());
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace paxocl::testing
