// `pax-ocl bench` as users run it: the chosen benchmarks write their CSVs, a results.json that
// describes the machine and holds every table, and a summary; --compare of a run with itself gives
// ratios of 1.00x; bad requests are one-line errors.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace paxocl::testing {
namespace {

const std::string kBinary = PAXOCL_BINARY;

TEST(CliBench, QuickRunWritesTablesMachineAndSummary) {
  TempDir dir;
  const auto out = dir.path() / "results";
  const auto r = run_command(kBinary + " bench gemm memory launch fft --quick --output=" + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* table : {"gemm", "memory", "launch", "fft"}) {
    std::ifstream csv(out / (std::string(table) + ".csv"));
    std::string header, first;
    ASSERT_TRUE(std::getline(csv, header) && std::getline(csv, first)) << table << " has no rows";
  }
  std::ifstream in(out / "results.json");
  const nlohmann::json results = nlohmann::json::parse(in);
  EXPECT_FALSE(results.at("machine").at("devices").empty());
  EXPECT_GT(results.at("machine").at("host").at("cores").get<int>(), 0);
  ASSERT_EQ(results.at("tables").size(), 4u);
  // GFLOP/s are positive, the model's shapes are there next to the square sizes, and each
  // implementation's "step" row sums its step shapes' times, each times its count.
  const nlohmann::json& gemm = results.at("tables").at(0);
  ASSERT_EQ(gemm.at("columns").at(7), "gflops");
  bool model_shape = false;
  std::map<std::string, double> summed_ms, step_ms;
  for (const auto& row : gemm.at("rows")) {
    EXPECT_GT(row.at(7).get<double>(), 0.0) << row.dump();
    model_shape = model_shape || row.at(1) == "qkv fwd";
    const std::string impl = row.at(0), what = row.at(1);
    if (what == "step") {
      step_ms[impl] = row.at(8).get<double>();
    } else if (what != "square") {
      summed_ms[impl] += row.at(8).get<double>() * row.at(6).get<double>();
    }
  }
  EXPECT_TRUE(model_shape);
  EXPECT_TRUE(step_ms.contains("pax-ocl") && step_ms.contains("clblast"));
  for (const auto& [impl, ms] : step_ms) EXPECT_NEAR(ms, summed_ms[impl], 1e-9 * ms) << impl;
  EXPECT_NE(r.out.find("measured GEMM peak"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(out / "summary.md"));

  const auto same = run_command(kBinary + " bench --compare=" + (out / "results.json").string() + "," +
                                (out / "results.json").string());
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("gflops 1.00x"), std::string::npos) << same.out;
}

// The collectives benchmark all-reduces over both devices with each ICI algorithm at every size;
// the training sweep runs `pax-ocl train` per batch x mesh and reads each run's own output: its
// loss is the one TensorBoard stored for the same job run by hand, step_ms x tokens/s is the global
// batch's tokens, and a mesh that cannot run is a row carrying the run's error, not the sweep's end.
TEST(CliBench, CollectivesAndTrainingSweepTables) {
  TempDir dir;
  const auto out = dir.path() / "results";
  const std::string tiny = "--fdl.DATA=synthetic --fdl.VOCAB_SIZE=512 --fdl.NUM_LAYERS=2 --fdl.MODEL_DIMS=64 "
                           "--fdl.HIDDEN_DIMS=256 --fdl.NUM_HEADS=4 --fdl.DIMS_PER_HEAD=16 --fdl.MAX_SEQ_LEN=32";
  const auto r = run_command(kBinary + " bench collectives train --quick --devices=0,1 --batches=2 --steps=3 "
                             "'--meshes=[1,1,1];[2,1,1];[4,1,1]' '--train_flags=" + tiny + "' --output=" + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out / "results.json");
  const nlohmann::json tables = nlohmann::json::parse(in).at("tables");
  ASSERT_EQ(tables.size(), 2u);

  // algorithm, bytes, algbw, busbw, us: 8 bytes to 1 MiB (quick) in steps of 8x, ring and host-staged.
  const nlohmann::json& collectives = tables.at(0);
  ASSERT_EQ(collectives.at("name"), "collectives");
  std::map<std::string, std::vector<std::size_t>> sizes;
  for (const auto& row : collectives.at("rows")) {
    sizes[row.at(0).get<std::string>()].push_back(row.at(1).get<std::size_t>());
    EXPECT_GT(row.at(2).get<double>(), 0.0) << row.dump();
    EXPECT_DOUBLE_EQ(row.at(3).get<double>(), row.at(2).get<double>()) << "busbw = algbw x 2(P-1)/P, P = 2: " << row.dump();
    EXPECT_GT(row.at(4).get<double>(), 0.0) << row.dump();
  }
  const std::vector<std::size_t> want_sizes = {8, 64, 512, 4096, 32768, 262144};
  EXPECT_EQ(sizes, (std::map<std::string, std::vector<std::size_t>>{{"host_staged", want_sizes}, {"ring", want_sizes}}));

  // experiment, percore_batch_size, ici_mesh, devices, tokens_per_sec, step_ms, mfu_percent,
  // state_mib_per_device, loss, status
  const nlohmann::json& rows = tables.at(1).at("rows");
  ASSERT_EQ(tables.at(1).at("name"), "training");
  ASSERT_EQ(rows.size(), 3u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& row = rows.at(i);
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row.at(9), "ok");
    EXPECT_EQ(row.at(3).get<int>(), static_cast<int>(i) + 1);
    EXPECT_GT(row.at(4).get<double>(), 0.0);
    const double tokens_per_step = 2 * (static_cast<double>(i) + 1) * 32;  // PERCORE_BATCH_SIZE x devices x MAX_SEQ_LEN
    EXPECT_NEAR(row.at(5).get<double>() * row.at(4).get<double>() / 1e3, tokens_per_step, 1e-9 * tokens_per_step);
    EXPECT_GT(row.at(7).get<double>(), 0.0);
  }
  EXPECT_EQ(rows.at(2).at(2), "[4,1,1]");
  EXPECT_EQ(rows.at(2).at(3).get<int>(), 4);
  EXPECT_NE(rows.at(2).at(9), "ok");
  EXPECT_EQ(rows.at(2).at(4).get<double>(), 0.0);

  // The [1,1,1] run again by hand: the sweep's loss (printed with 4 decimals) is the stored one.
  const auto job = dir.path() / "by-hand";
  const auto again = run_command(kBinary + " train --fdl_config=Default --fdl.PERCORE_BATCH_SIZE=2 --fdl.ICI_MESH_SHAPE=[1,1,1] "
                                 "--fdl.MAX_STEPS=3 --fdl.SUMMARY_INTERVAL_STEPS=3 --fdl.EVAL_INTERVAL_STEPS=0 "
                                 "--enable_checkpoint_saving=false " + tiny + " --job_log_dir=" + job.string());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::vector<float> losses = train_losses(job);
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_NEAR(rows.at(0).at(8).get<double>(), losses[0], 5.1e-5);
}

TEST(CliBench, BadRequestsAreOneLineErrors) {
  const auto unknown = run_command(kBinary + " bench gemmm --quick");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown benchmark 'gemmm'"), std::string::npos) << unknown.err;
  const auto dtype = run_command(kBinary + " bench decode --quick --dtype=bf16");
  EXPECT_EQ(dtype.exit_code, 2);
  EXPECT_NE(dtype.err.find("--dtype=bf16 is not a dtype"), std::string::npos) << dtype.err;
  const auto missing = run_command(kBinary + " bench --compare=/nonexistent.json,/nonexistent.json");
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("cannot be read"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace paxocl::testing

namespace paxocl::testing {
namespace {

TEST(CliTune, StoresTheFastestCandidateOrKeepsCLBlastsDefaults) {  // and the direct GEMM's fastest tile
  // The test environment's PAX_OCL_CACHE_DIR keeps the result away from the user's cache. Two
  // CLBlast candidates, the current set and one more: each takes PoCL over a minute to build.
  const auto r = run_command(PAXOCL_BINARY " tune --candidates=2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("qkv fwd"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("before"), std::string::npos) << r.out;
  const bool stored = r.out.find("stored in ") != std::string::npos;
  EXPECT_TRUE(stored || r.out.find("nothing stored") != std::string::npos) << r.out;
  EXPECT_NE(r.out.find("direct GEMM, GFLOP/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("direct GEMMs on this device use it"), std::string::npos) << r.out;
  const auto bad_gemm = run_command(PAXOCL_BINARY " tune --gemm=cublas");
  EXPECT_EQ(bad_gemm.exit_code, 2);
  EXPECT_NE(bad_gemm.err.find("--gemm=cublas: use all, clblast or direct"), std::string::npos) << bad_gemm.err;
  const auto bad = run_command(PAXOCL_BINARY " tune --candidates=1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--candidates must be at least 2"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace paxocl::testing
