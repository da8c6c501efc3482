// The training job as users run it: the default experiment's loss falls in a short run, the job
// directory holds the resolved experiment, the log and TensorBoard summaries, the resolved
// experiment runs again as it is, and `pax-ocl eval` evaluates a job.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

const std::string kBinary = PAXOCL_BINARY;
constexpr const char* kFailAllocationEnv = "PAX_OCL_FAIL_ALLOCATION";  // device/allocation_fault.h

TEST(CliJob, DefaultExperimentLossFallsAndTheJobDirectoryIsComplete) {
  if (run_command("command -v bible").exit_code != 0) GTEST_SKIP() << "Debian package bible-kjv is not installed";
  TempDir dir;
  const std::string job = (dir.path() / "job").string();
  // The default experiment, shortened: 60 steps, an evaluation at 30 and at the end.
  const auto r = run_command(kBinary + " train --job_log_dir=" + job +
                             " --fdl.MAX_STEPS=60 --fdl.SUMMARY_INTERVAL_STEPS=10 --fdl.EVAL_INTERVAL_STEPS=30"
                             " --fdl.EVAL_LOOP_NUM_BATCHES=3 --fdl.LR_COS_WARMUP=10 --fdl.LR_COS_DECAY_START=11"
                             " --fdl.LR_COS_DECAY_END=60");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<float> losses = train_losses(job);
  ASSERT_EQ(losses.size(), 6u) << r.out;
  EXPECT_LT(losses.back(), losses.front() - 1.0) << r.out;  // from ~ln(4096) = 8.3 down
  EXPECT_NE(r.out.find("tensorboard --logdir " + job + "/summaries"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("eval_test at step 60"), std::string::npos) << r.err;

  for (const char* sub : {"train", "eval_train", "eval_test"}) {
    bool found = false;
    for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(job) / "summaries" / sub)) {
      found = found || (f.path().filename().string().rfind("events.out.tfevents.", 0) == 0 && f.file_size() > 100);
    }
    EXPECT_TRUE(found) << sub;
  }
  std::ifstream log(std::filesystem::path(job) / "train.log");
  const std::string log_text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(log_text.find("step     60/60"), std::string::npos) << "console lines are logged too";

  // Default's FPROP_DTYPE=auto is stated at start-up and recorded resolved, so a rerun or an eval
  // of the job reads the dtype it ran (device/auto_fprop_dtype.h).
  const std::string said = "FPROP_DTYPE auto: ";
  const std::size_t at = r.err.find(said);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string dtype = r.err.substr(at + said.size(), r.err.find(' ', at + said.size()) - at - said.size());
  EXPECT_TRUE(dtype == "float32" || dtype == "bfloat16") << dtype;
  std::ifstream recorded(std::filesystem::path(job) / "experiment.json");
  const std::string experiment((std::istreambuf_iterator<char>(recorded)), std::istreambuf_iterator<char>());
  EXPECT_NE(experiment.find("\"FPROP_DTYPE\": \"" + dtype + "\""), std::string::npos) << experiment;

  // The resolved experiment reruns as it is, and eval reads it from the job directory.
  const auto again = run_command(kBinary + " train --fdl_config_file=" + job + "/experiment.json --fdl.MAX_STEPS=1" +
                                 " --fdl.EVAL_LOOP_NUM_BATCHES=1 --job_log_dir=" + (dir.path() / "again").string());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  const auto eval = run_command(kBinary + " eval --job_log_dir=" + job);
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_NE(eval.out.find("eval_test: loss"), std::string::npos) << eval.out;
}

// A small synthetic experiment, 20 steps, losses printed every 5.
const std::string kSmall =
    " train --fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=256"
    " --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32 --fdl.MAX_STEPS=20 --fdl.SUMMARY_INTERVAL_STEPS=5"
    " --fdl.EVAL_INTERVAL_STEPS=0 --fdl.EVAL_LOOP_NUM_BATCHES=2 --fdl.LR_COS_WARMUP=2 --fdl.LR_COS_DECAY_START=3"
    " --fdl.LR_COS_DECAY_END=20 --fdl.FPROP_DTYPE=float32";  // float32: layouts agree to its rounding

void expect_same_curve(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    // Gradients are summed in another order, so fp32 rounding may differ slightly.
    EXPECT_NEAR(got[i], want[i], 2e-4 * want[i]) << what << " summary " << i;
  }
}

// The weights of two layouts of kSmall's run: equal up to the gradient norm's summation order, except
// the key bias. Its gradient is zero in exact arithmetic (a bias on every key shifts a query's scores
// by one constant, which the softmax cancels), so what it gets is rounding noise, different in each
// layout and each attention kernel, which Adam turns into steps of a fair part of the learning rate.
// It is checked to stay that small instead.
void expect_same_weights(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  constexpr std::size_t V = 512, T = 32, C = 64, L = 2;  // kSmall's model; llm.c's order (weights_io.h)
  constexpr std::size_t qkv_bias = V * C + T * C + 2 * L * C + L * 3 * C * C;
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_GT(got.size(), qkv_bias + L * 3 * C) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool key_bias = i >= qkv_bias && i < qkv_bias + L * 3 * C && (i - qkv_bias) % (3 * C) / C == 1;
    if (key_bias) {
      ASSERT_LT(std::abs(got[i]), 1e-4) << what << ": key bias " << i;
      ASSERT_LT(std::abs(want[i]), 1e-4) << what << ": key bias " << i;
    } else {
      ASSERT_NEAR(got[i], want[i], 1e-6) << what << ": weight " << i;
    }
  }
}

TEST(CliJob, DataParallelOverDevicesAndProcessesMatchesOneDevice) {
  TempDir dir;
  const auto one = run_command(kBinary + kSmall + " --fdl.PERCORE_BATCH_SIZE=8 --job_log_dir=" + (dir.path() / "one").string());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::vector<float> reference = train_losses(dir.path() / "one");
  ASSERT_EQ(reference.size(), 4u) << one.out;

  // Same global batch of 8: two devices in one process (ICI), then two processes (DCN).
  const auto ici = run_command(kBinary + kSmall + " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1] --job_log_dir=" +
                               (dir.path() / "ici").string());
  ASSERT_EQ(ici.exit_code, 0) << ici.err;
  EXPECT_NE(ici.out.find("data parallel over 2 device(s)"), std::string::npos) << ici.out;
  expect_same_curve(train_losses(dir.path() / "ici"), reference, "ICI [2,1,1]");

  const auto dcn = run_command(std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 " + kBinary + kSmall +
                               " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[2,1,1] --job_log_dir=" +
                               (dir.path() / "dcn").string());
  ASSERT_EQ(dcn.exit_code, 0) << dcn.err;
  expect_same_curve(train_losses(dir.path() / "dcn"), reference, "DCN [2,1,1]");

  // Overlapped (per-block, during backward) and serial gradient reduction: identical results (float bits).
  const auto serial = run_command(kBinary + kSmall + " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1]" +
                                  " --fdl.OVERLAP_COMMUNICATION=false --job_log_dir=" + (dir.path() / "serial").string());
  ASSERT_EQ(serial.exit_code, 0) << serial.err;
  EXPECT_EQ(train_losses(dir.path() / "serial"), train_losses(dir.path() / "ici"));
  // Both blocks (~200 KB of gradients each) combined into one bucket.
  for (const char* bytes : {"300000"}) {
    const auto bucketed = run_command(kBinary + kSmall + " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1]" +
                                      " --fdl.GRADIENT_BUCKET_BYTES=" + bytes + " --job_log_dir=" +
                                      (dir.path() / "bucketed").string());
    ASSERT_EQ(bucketed.exit_code, 0) << bucketed.err;
    EXPECT_EQ(train_losses(dir.path() / "bucketed"), train_losses(dir.path() / "ici")) << "GRADIENT_BUCKET_BYTES=" << bytes;
  }
  const auto dcn_serial = run_command(std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 " + kBinary + kSmall +
                                      " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[2,1,1]"
                                      " --fdl.OVERLAP_COMMUNICATION=false --job_log_dir=" + (dir.path() / "dcn_serial").string());
  ASSERT_EQ(dcn_serial.exit_code, 0) << dcn_serial.err;
  EXPECT_EQ(train_losses(dir.path() / "dcn_serial"), train_losses(dir.path() / "dcn"));
}

// Every figure in the training summaries is finite, the fractions are fractions, and MFU stays at
// or below 100% against both peaks (the measured one is raised by any step that beats it).
TEST(CliJob, EverySummaryIsFiniteAndMfuIsAtMostOne) {
  TempDir dir;
  const auto r = run_command(kBinary + kSmall + " --fdl.PERCORE_BATCH_SIZE=4 --fdl.SUMMARY_INTERVAL_STEPS=2 --devices=0" +
                             " --job_log_dir=" + (dir.path() / "job").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto scalars = read_scalars(dir.path() / "job" / "summaries" / "train");
  for (const char* tag : {"loss", "mfu", "tokens_per_sec", "grad_norm", "learning_rate", "mfu_peak_gflops_measured"}) {
    EXPECT_TRUE(scalars.contains(tag)) << tag;
  }
  for (const auto& [tag, points] : scalars) {
    for (const ScalarPoint& p : points) {
      EXPECT_TRUE(std::isfinite(p.value)) << tag << " at step " << p.step;
      EXPECT_GE(p.value, 0.0f) << tag << " at step " << p.step;
    }
  }
  for (const char* tag : {"mfu", "mfu_theoretical", "fraction_of_correct_next_step_preds"}) {
    if (!scalars.contains(tag)) continue;  // mfu_theoretical: only where the device's peak is known
    ASSERT_EQ(scalars.at(tag).size(), 10u) << tag;
    for (const ScalarPoint& p : scalars.at(tag)) {
      if (std::string(tag) != "fraction_of_correct_next_step_preds") {
        EXPECT_GT(p.value, 0.0f) << tag << " at step " << p.step;
      }
      EXPECT_LE(p.value, 1.0f) << tag << " at step " << p.step;
    }
  }
}

// The measured GEMM peak is kept per device and per way of computing: a bfloat16 job's peak (16-bit
// operands, tensor cores on a GPU) never becomes a float32 job's, nor the reverse.
TEST(CliJob, MeasuredGemmPeaksAreKeptPerDtype) {
  TempDir dir;
  const std::string cache = "PAX_OCL_CACHE_DIR=" + (dir.path() / "cache").string() + " ";
  for (const std::string dtype : {"float32", "bfloat16"}) {
    const auto r = run_command(cache + kBinary + kSmall + " --fdl.MAX_STEPS=2 --devices=0 --fdl.FPROP_DTYPE=" + dtype +
                               " --job_log_dir=" + (dir.path() / dtype).string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::vector<std::string> peaks;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "cache")) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("gemm-peak-")) peaks.push_back(name.substr(name.rfind('-') + 1));
  }
  std::sort(peaks.begin(), peaks.end());
  EXPECT_EQ(peaks, (std::vector<std::string>{"bfloat16.txt", "float32.txt"}));
}

TEST(CliJob, TraceOfChosenStepsShowsKernelsAndCommunication) {
  TempDir dir;
  const auto r = run_command(kBinary + kSmall + " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1]" +
                             " --fdl.TRACE_STEPS=[2,3] --job_log_dir=" + (dir.path() / "job").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("step 2 trace:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("hidden behind compute"), std::string::npos) << r.err;
  std::ifstream in(dir.path() / "job" / "trace.json");
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::set<std::string> tracks;
  int slices = 0, communication = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") tracks.insert(e.at("args").at("name").get<std::string>());
    if (e.at("ph") == "X") {
      ++slices;
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
      communication += e.at("name").get<std::string>().rfind("gradient all_reduce", 0) == 0;
    }
  }
  EXPECT_EQ(tracks, (std::set<std::string>{"communication", "device 0 compute", "device 1 compute"}));
  EXPECT_GT(slices, 100);
  EXPECT_GT(communication, 2);  // per-block reductions of two steps

  // Each traced step's kernel line: its entries longest first, adding up to its total, and the two
  // steps' totals to the device time of the trace file's kernel slices (µs there, ms here).
  std::set<int> communication_tids;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name" && e.at("args").at("name") == "communication") {
      communication_tids.insert(e.at("tid").get<int>());
    }
  }
  double kernel_us = 0;
  std::set<std::string> kernel_names;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X" || communication_tids.contains(e.at("tid").get<int>())) continue;
    kernel_us += e.at("dur").get<double>();
    kernel_names.insert(e.at("name").get<std::string>());
  }
  double lines_ms = 0;
  for (const std::string step : {"2", "3"}) {
    const std::string head = "step " + step + " kernels (device ms, calls; ";
    const std::size_t at = r.err.find(head);
    ASSERT_NE(at, std::string::npos) << r.err;
    std::istringstream line(r.err.substr(at + head.size(), r.err.find('\n', at) - at - head.size()));
    double total = 0, sum = 0, previous = 1e300;
    std::string unit, rest;
    line >> total >> unit;
    std::getline(line, rest, ':');
    EXPECT_EQ(rest, " in all on 2 devices)");
    std::string name, calls;
    double ms = 0;
    int entries = 0;
    while (line >> name >> ms >> calls) {
      EXPECT_TRUE(kernel_names.contains(name)) << name;
      EXPECT_LE(ms, previous) << name;
      EXPECT_TRUE(calls.starts_with('(') && calls.ends_with(')') && std::stoi(calls.substr(1)) > 0) << calls;
      previous = ms;
      sum += ms;
      ++entries;
    }
    EXPECT_GT(entries, 10);
    EXPECT_NEAR(sum, total, 0.005 * entries + 1e-9);
    lines_ms += total;
  }
  EXPECT_NEAR(lines_ms, kernel_us * 1e-3, 0.02 + 1e-3 * lines_ms);
}

// The weights of an llm.c file (after its 256-int header).
TEST(CliJob, FsdpOverDevicesAndProcessesMatchesDataParallel) {
  TempDir dir;
  // One GEMM implementation for every shape: auto may pick another for a device's smaller batch
  // (BLIS for one, an OpenCL kernel for the other), and Adam turns the last-bit differences of a
  // gradient that nearly cancels into weight differences of a good part of the learning rate.
  auto run = [&](const std::string& launcher, const std::string& args, const std::string& name) {
    const auto r = run_command(launcher + kBinary + kSmall + " --gemm=cpu-12x32" + args + " --job_log_dir=" + (dir.path() / name).string() +
                               " --save_weights=" + (dir.path() / (name + ".bin")).string());
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    return r;
  };
  const std::string mpirun = std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 ";
  // Global batch 8 everywhere.
  const auto dp = run("", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[2,1,1]", "dp");
  const std::vector<float> reference = train_losses(dir.path() / "dp");
  ASSERT_EQ(reference.size(), 4u) << dp.out;
  const std::vector<float> reference_weights = weights_of(dir.path() / "dp.bin");

  const auto fsdp = run("", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[1,2,1] --fdl.TRACE_STEPS=[3]", "fsdp");
  EXPECT_NE(fsdp.out.find("FSDP (fsdp 2 x data 1) over 2 device(s)"), std::string::npos) << fsdp.out;
  expect_same_curve(train_losses(dir.path() / "fsdp"), reference, "ICI [1,2,1]");
  // The weights gathered from the shards at the end.
  expect_same_weights(weights_of(dir.path() / "fsdp.bin"), reference_weights, "ICI [1,2,1]");

  // The step's collectives in the trace: each block gathered, each block's gradient reduce-scattered.
  std::ifstream in(dir.path() / "fsdp" / "trace.json");
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::set<std::string> collectives;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("name").get<std::string>().find("(step 3)") != std::string::npos) {
      collectives.insert(e.at("name").get<std::string>());
    }
  }
  for (const char* c : {"all-gather wte/wpe/lnf (step 3)", "all-gather h0 (step 3)", "all-gather h1 (step 3)",
                        "reduce-scatter h1 (step 3)", "reduce-scatter h0 (step 3)", "reduce-scatter wte/wpe/lnf (step 3)"}) {
    EXPECT_EQ(collectives.count(c), 1u) << c;
  }

  // Serial collectives, no prefetch, and more of it: identical results.
  int variants = 0;
  for (const std::string args : {" --fdl.OVERLAP_COMMUNICATION=false", " --fdl.FSDP_PREFETCH_DEPTH=0",
                                 " --fdl.FSDP_PREFETCH_DEPTH=3"}) {
    const std::string name = "variant" + std::to_string(++variants);  // a fresh job directory: no resume
    run("", " --fdl.PERCORE_BATCH_SIZE=4 --fdl.ICI_MESH_SHAPE=[1,2,1]" + args, name);
    EXPECT_EQ(train_losses(dir.path() / name), train_losses(dir.path() / "fsdp")) << args;
  }

  // Across processes (DCN), and FSDP inside each process with data parallelism across them.
  run(mpirun, " --devices=0 --fdl.PERCORE_BATCH_SIZE=4 --fdl.DCN_MESH_SHAPE=[1,2,1]", "dcn");
  expect_same_curve(train_losses(dir.path() / "dcn"), reference, "DCN [1,2,1]");
  run(mpirun, " --devices=0,1 --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,2,1] --fdl.DCN_MESH_SHAPE=[2,1,1]",
      "hybrid");
  expect_same_curve(train_losses(dir.path() / "hybrid"), reference, "ICI [1,2,1] x DCN [2,1,1]");
  expect_same_weights(weights_of(dir.path() / "hybrid.bin"), reference_weights, "ICI [1,2,1] x DCN [2,1,1]");
}

TEST(CliJob, ExperimentErrorsAreOneLine) {
  const struct {
    std::string args;
    std::string says;
  } cases[] = {
      {"train --fdl_config=Pile125M", "did you mean Pile126M"},
      {"train --fdl_config=Pile126M --fdl.MAX_STEPS=1",
       "DCN_MESH_SHAPE=[8,1,1] holds 8 process(es), but the job has 1; set --fdl.DCN_MESH_SHAPE so that its product is "
       "1 (and ICI_MESH_SHAPE=[8,1,1], 8 devices a process, to the devices each has: [1,1,1] for one), or launch 8 "
       "process(es)"},
      {"train --fdl.FSDP_PREFETCH_DEPTH=-1", "FSDP_PREFETCH_DEPTH=-1: the value must be in [0, 65536]"},
      {"train --fdl.ICI_ALGORITHM=tree", "ICI_ALGORITHM=tree: use one of ring, host"},
      {"train --fdl.ICI_MESH_SHAPE=[4,1,1] --devices=0", "holds 4 device(s) per process, but this process has 1"},
      {"train --fdl.ICI_MESH_SHAPE=[2,1]", "ICI_MESH_SHAPE=[2,1]: expected 3 or 4 entries, got 2"},
      {"train --fdl.FPROP_DTYPE=float8", "FPROP_DTYPE=float8: use one of auto, float32, bfloat16, float16"},
      {"train --fdl.FPROP_DTYPE=float16 --fdl.LOSS_SCALE_INITIAL=1000", "LOSS_SCALE_INITIAL=1000: use a power of two"},
      {"train --fdl.GRADIENT_BUCKET_BYTES=-1", "GRADIENT_BUCKET_BYTES=-1: the value must be at least 0"},
      {"train --fdl_config_file=/nonexistent.json", "cannot be read"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(kBinary + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
  }
}

// A device allocation that fails anywhere (PAX_OCL_FAIL_ALLOCATION, device/allocation_fault.h,
// fails it as a full device would) ends the command with one line naming the buffer and its size,
// and exit status 4, never an abort: the weights, the gradients and Adam's moments in training,
// the weights and the KV cache in sampling, the weights in eval. Page-locked checkpoint staging is
// the exception by design: snapshots fall back to pageable memory with a warning, and the job ends well.
TEST(CliJob, DeviceAllocationFailuresAreOneLineWithExitStatus4) {
  TempDir dir;
  const std::string tiny = " --devices=0 --fdl.NUM_LAYERS=1 --fdl.MODEL_DIMS=64 --fdl.HIDDEN_DIMS=128 --fdl.NUM_HEADS=2"
                           " --fdl.DIMS_PER_HEAD=32 --fdl.MAX_SEQ_LEN=32 --fdl.MAX_STEPS=2 --fdl.EVAL_INTERVAL_STEPS=0"
                           " --fdl.EVAL_LOOP_NUM_BATCHES=1";
  const std::string job = " --job_log_dir=" + (dir.path() / "job").string();
  const auto failing = [&](const std::string& buffer, const std::string& command) {
    SCOPED_TRACE(buffer + " in " + command.substr(0, command.find(' ')));
    const auto r = run_command(std::string(kFailAllocationEnv) + "='" + buffer + "' " + kBinary + " " + command);
    EXPECT_EQ(r.exit_code, 4) << r.err;
    const std::size_t at = r.err.find("pax-ocl: error: ");
    ASSERT_NE(at, std::string::npos) << r.err;
    const std::string error = r.err.substr(at);
    EXPECT_EQ(count_lines(error), 1) << r.err;
    EXPECT_NE(error.find("CL_MEM_OBJECT_ALLOCATION_FAILURE (-4) while allocating '" + buffer + "' ("), std::string::npos)
        << error;
  };
  for (const char* buffer : {"parameters", "gradients", "adam.m", "adam.v"}) {
    failing(buffer, "train" + tiny + " --job_log_dir=" + (dir.path() / buffer).string());
  }
  const auto staged = run_command(std::string(kFailAllocationEnv) + "='checkpoint staging' " + kBinary + " train" + tiny + job);
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  EXPECT_NE(staged.err.find("checkpoint snapshots use pageable memory"), std::string::npos) << staged.err;
  for (const char* buffer : {"parameters", "kv_cache"}) failing(buffer, "sample --prompt_ids=5,6" + job);
  failing("parameters", "eval" + job);
}

}  // namespace
}  // namespace paxocl::testing
