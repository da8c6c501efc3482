// End-to-end: the pax-ocl binary as users run it, alone and under mpirun. Checks the JSON report,
// exit codes and one-line errors, and that a second process reuses the program cache.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

namespace paxocl {
namespace {

using testing::run_command;

const std::string kBinary = PAXOCL_BINARY;
const std::string kMpirun = std::string(PAXOCL_MPIEXEC) + " --oversubscribe -np 2 ";


TEST(CliDevices, ASlurmTaskThatMpiDoesNotKnowIsAOneLineError) {
  // As if srun had started task 1 of 1: MPI (no launcher) says rank 0 of 1.
  const auto r = run_command("env SLURM_STEP_ID=0 SLURM_PROCID=1 SLURM_STEP_NUM_TASKS=1 " + kBinary + " devices");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("Slurm says task 1 of 1 but MPI says rank 0 of 1"), std::string::npos) << r.err;
  const auto ok = run_command("env SLURM_STEP_ID=0 SLURM_PROCID=0 SLURM_STEP_NUM_TASKS=1 " + kBinary + " devices");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(CliDevices, JsonReportOfOneProcess) {
  const auto r = run_command(kBinary + " devices --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["processes"].size(), 1u);
  const auto& p = report["processes"][0];
  EXPECT_EQ(p["launcher"], "none");
  EXPECT_GE(int(p["topology"]["cores"]), 1);
  EXPECT_GE(p["devices"].size(), 2u);
  const auto& mesh = report["mesh"];
  EXPECT_EQ(mesh["axes"], nlohmann::json({"data", "fsdp", "tensor"}));
  EXPECT_EQ(mesh["dcn_shape"], nlohmann::json({1, 1, 1}));
  EXPECT_EQ(int(mesh["num_devices"]), int(p["selected"].size()));
}

TEST(CliDevices, TableShowsTheMesh) {
  const auto r = run_command(kBinary + " devices --devices=0,1 --fdl.ICI_MESH_SHAPE=[1,2,1]");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ICI_MESH_SHAPE [1,2,1] x DCN_MESH_SHAPE [1,1,1] = [1,2,1]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Host topology (hwloc)"), std::string::npos);
}

TEST(CliDevices, FourDeviceMeshUnderMpirun) {
  const auto r = run_command(kMpirun + kBinary +
                             " devices --json --fdl.ICI_MESH_SHAPE=[2,1,1] --fdl.DCN_MESH_SHAPE=[2,1,1]");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);  // rank 0 alone prints, so stdout is one document
  ASSERT_EQ(report["processes"].size(), 2u);
  EXPECT_EQ(report["processes"][1]["launcher"], "mpirun");
  const auto& mesh = report["mesh"];
  EXPECT_EQ(mesh["shape"], nlohmann::json({4, 1, 1}));
  ASSERT_EQ(mesh["devices"].size(), 4u);
  for (int id = 0; id < 4; ++id) {
    const auto& d = mesh["devices"][static_cast<std::size_t>(id)];
    EXPECT_EQ(int(d["id"]), id);
    EXPECT_EQ(int(d["process"]), id / 2);
    EXPECT_EQ(int(d["local_index"]), id % 2);
    EXPECT_EQ(d["coords"], nlohmann::json({{"data", id}, {"fsdp", 0}, {"tensor", 0}}));
    EXPECT_EQ(d["groups"]["data"], nlohmann::json({0, 1, 2, 3}));
    EXPECT_EQ(d["groups"]["fsdp"], nlohmann::json({id}));
  }
}

TEST(CliDevices, MeshMismatchUnderMpirunIsOneLineAndExit2) {
  const auto r = run_command(kMpirun + kBinary + " devices --fdl.DCN_MESH_SHAPE=[4,1,1]");
  EXPECT_EQ(r.exit_code, 2);
  const std::string expected = "pax-ocl: error: DCN_MESH_SHAPE=[4,1,1] holds 4 process(es), but the job has 2";
  EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  // Reported once for the job, by rank 0, not once per process.
  EXPECT_EQ(r.err.find(expected), r.err.rfind(expected)) << r.err;
}

TEST(CliDevices, BadInputGivesOneLineAndExit2) {
  for (const std::string args : {"devices --fdl.ICI_MESH_SHAPE=[3,1,1]", "devices --fdl.ICI_MESH_SHAPE=[2,1]",
                                 "devices --devices=9", "devices --fdl.NUM_LAYERS=2", "devices --bogus",
                                 "devics", "devices --log_level=loud"}) {
    const auto r = run_command(kBinary + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("pax-ocl: error: ", 0), 0u) << args << ": " << r.err;
    EXPECT_EQ(testing::count_lines(r.err), 1) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}

TEST(CliDevices, NoOpenClPlatformSaysHowToGetOne) {
  // ocl-icd reads its driver list from OCL_ICD_VENDORS; an empty directory means no platform.
  testing::TempDir empty;
  const auto r = run_command("OCL_ICD_VENDORS=" + empty.path().string() + " " + kBinary + " devices");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("no OpenCL platform found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("apt-get install pocl-opencl-icd"), std::string::npos) << r.err;
  EXPECT_EQ(testing::count_lines(r.err), 1) << r.err;
}

// With PoCL's own kernel cache off, pax-ocl stores the binaries itself (and always does on other drivers).
TEST(CliDevices, SecondProcessReusesTheProgramCache) {
  testing::TempDir cache;
  const std::string env = "POCL_KERNEL_CACHE=0 PAX_OCL_CACHE_DIR=" + cache.path().string() + " ";
  const auto first = run_command(env + kBinary + " devices --check --json --devices=0");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto check1 = nlohmann::json::parse(first.out)["processes"][0]["checks"][0];
  EXPECT_TRUE(check1["passed"].get<bool>());
  EXPECT_EQ(int(check1["programs_compiled"]), 1);
  EXPECT_EQ(int(check1["programs_from_cache"]), 0);

  const auto second = run_command(env + kBinary + " devices --check --json --devices=0");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const auto check2 = nlohmann::json::parse(second.out)["processes"][0]["checks"][0];
  EXPECT_TRUE(check2["passed"].get<bool>());
  EXPECT_EQ(int(check2["programs_compiled"]), 0);
  EXPECT_EQ(int(check2["programs_from_cache"]), 1);
}

TEST(CliDevices, PoclBuildsGoThroughItsOwnKernelCache) {
  testing::TempDir cache;
  const std::string env = "PAX_OCL_CACHE_DIR=" + cache.path().string() + " ";
  for (int run = 0; run < 2; ++run) {
    const auto r = run_command(env + kBinary + " devices --check --json --devices=0");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto process = nlohmann::json::parse(r.out)["processes"][0];
    if (process["devices"][0]["platform"].get<std::string>().find("Portable Computing Language") == std::string::npos) {
      GTEST_SKIP() << "device 0 is not a PoCL device";
    }
    const auto check = process["checks"][0];
    EXPECT_TRUE(check["passed"].get<bool>());
    EXPECT_EQ(int(check["programs_driver_cached"]), 1);
    EXPECT_EQ(int(check["programs_compiled"]) + int(check["programs_from_cache"]), 0);
  }
  EXPECT_FALSE(std::filesystem::exists(cache.path()) && !std::filesystem::is_empty(cache.path()))
      << "no binary files: PoCL keeps its own";
}

TEST(CliDevices, LogLinesCarryTheRankInMultiProcessRuns) {
  const auto multi = run_command(kMpirun + kBinary + " devices --log_level=debug");
  ASSERT_EQ(multi.exit_code, 0) << multi.err;
  EXPECT_NE(multi.err.find("[rank 0] [debug] CPU binding"), std::string::npos) << multi.err;
  EXPECT_NE(multi.err.find("[rank 1] [debug] CPU binding"), std::string::npos) << multi.err;
  const auto single = run_command(kBinary + " devices --log_level=debug");
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_NE(single.err.find("[debug] CPU binding"), std::string::npos) << single.err;
  EXPECT_EQ(single.err.find("[rank"), std::string::npos) << single.err;
  const auto quiet = run_command(kBinary + " devices --log_level=warn");
  EXPECT_EQ(quiet.err.find("[debug]"), std::string::npos) << quiet.err;
}

TEST(CliDevices, HelpAndVersion) {
  const auto help = run_command(kBinary + " devices --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--fdl.ICI_MESH_SHAPE"), std::string::npos);
  const auto top = run_command(kBinary + " --help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("devices"), std::string::npos);
  const auto none = run_command(kBinary);
  EXPECT_EQ(none.exit_code, 2);
  const auto version = run_command(kBinary + " --version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("pax-ocl ", 0), 0u);
}

}  // namespace
}  // namespace paxocl
