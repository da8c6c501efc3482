// `pax-ocl bench` as users run it: the chosen benchmarks write their CSVs, a results.json that
// describes the machine and holds every table, and a summary; --compare of a run with itself gives
// ratios of 1.00x; bad requests are one-line errors.
#include <gtest/gtest.h>

#include <fstream>

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
  // GFLOP/s are positive and the model's shapes are there next to the square sizes.
  bool model_shape = false;
  for (const auto& row : results.at("tables").at(0).at("rows")) {
    EXPECT_GT(row.at(5).get<double>(), 0.0) << row.dump();
    model_shape = model_shape || row.at(1) == "qkv fwd";
  }
  EXPECT_TRUE(model_shape);
  EXPECT_NE(r.out.find("measured GEMM peak"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(out / "summary.md"));

  const auto same = run_command(kBinary + " bench --compare=" + (out / "results.json").string() + "," +
                                (out / "results.json").string());
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("gflops 1.00x"), std::string::npos) << same.out;
}

TEST(CliBench, BadRequestsAreOneLineErrors) {
  const auto unknown = run_command(kBinary + " bench gemmm --quick");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown benchmark 'gemmm'"), std::string::npos) << unknown.err;
  const auto missing = run_command(kBinary + " bench --compare=/nonexistent.json,/nonexistent.json");
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("cannot be read"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace paxocl::testing

namespace paxocl::testing {
namespace {

TEST(CliTune, StoresTheFastestCandidateOrKeepsCLBlastsDefaults) {
  // The test environment's PAX_OCL_CACHE_DIR keeps the result away from the user's cache.
  const auto r = run_command(PAXOCL_BINARY " tune --candidates=3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("qkv fwd"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("before"), std::string::npos) << r.out;
  const bool stored = r.out.find("stored in ") != std::string::npos;
  EXPECT_TRUE(stored || r.out.find("nothing stored") != std::string::npos) << r.out;
  const auto bad = run_command(PAXOCL_BINARY " tune --candidates=1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--candidates must be at least 2"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace paxocl::testing
