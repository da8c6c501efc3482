// The on-disk program cache: a miss compiles and stores, a second cache object (as a second
// process would) hits; keys separate options and devices; corrupt files are rebuilt; compile
// errors carry the build log.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <fstream>

#include "device/cl_error.h"
#include "device/device.h"
#include "device/program_cache.h"
#include "tests/test_support.h"

namespace paxocl::device {
namespace {

// A tiny kernel whose result proves which program ran: out[i] = i * FACTOR.
constexpr const char* kSource =
    "__kernel void scaled_iota(__global int* out) { const int i = get_global_id(0); out[i] = i * FACTOR; }";

class ProgramCacheTest : public ::testing::Test {
 protected:
  // A PoCL kernel cache of this process's own, set before its first OpenCL call: ctest runs these
  // tests as parallel processes that build the same source with the same options, and storing a
  // binary (BinaryStore::kAlways) packs PoCL's cache entry, which another process may be writing
  // (PoCL 3.1 then aborts in pocl_binary_get_kernels_metadata, as it once did in CI).
  static void SetUpTestSuite() {
    static const testing::TempDir pocl_cache;
    ::setenv("POCL_CACHE_DIR", pocl_cache.path().c_str(), 1);
  }

  void SetUp() override {
    const std::vector<DeviceInfo> all = enumerate_devices();
    ASSERT_FALSE(all.empty());
    device_ = std::make_unique<Device>(all.front());
  }

  // Builds, runs scaled_iota over 8 items and returns the output.
  std::vector<int> run(ProgramCache& cache, const std::string& options) {
    Program program = cache.build(device_->context(), device_->info(), "scaled_iota", kSource, options);
    Kernel kernel(program, "scaled_iota");
    Buffer<int> out(device_->context(), 8, "out");
    kernel.set_args(out);
    const std::array<std::size_t, 1> global = {8};
    device_->queue().launch(kernel, global);
    std::vector<int> host(8);
    device_->queue().read(out, std::span<int>(host));
    return host;
  }

  std::unique_ptr<Device> device_;
  testing::TempDir dir_;
};

TEST_F(ProgramCacheTest, SecondCacheInstanceBuildsFromTheStoredBinary) {
  ProgramCache first(dir_.path(), BinaryStore::kAlways);
  EXPECT_EQ(run(first, "-DFACTOR=3"), (std::vector<int>{0, 3, 6, 9, 12, 15, 18, 21}));
  EXPECT_EQ(first.stats().misses, 1);
  EXPECT_EQ(first.stats().hits, 0);
  const auto file = first.file_for(device_->info(), "scaled_iota", kSource, "-DFACTOR=3");
  ASSERT_TRUE(std::filesystem::exists(file));
  EXPECT_GT(std::filesystem::file_size(file), 0u);

  ProgramCache second(dir_.path(), BinaryStore::kAlways);  // what a later process sees
  EXPECT_EQ(run(second, "-DFACTOR=3"), (std::vector<int>{0, 3, 6, 9, 12, 15, 18, 21}));
  EXPECT_EQ(second.stats().hits, 1);
  EXPECT_EQ(second.stats().misses, 0);
}

TEST_F(ProgramCacheTest, DifferentOptionsAreDifferentEntries) {
  ProgramCache cache(dir_.path(), BinaryStore::kAlways);
  EXPECT_EQ(run(cache, "-DFACTOR=3")[1], 3);
  EXPECT_EQ(run(cache, "-DFACTOR=5")[1], 5);  // must not reuse the FACTOR=3 binary
  EXPECT_EQ(cache.stats().misses, 2);
  EXPECT_EQ(run(cache, "-DFACTOR=3")[1], 3);
  EXPECT_EQ(cache.stats().hits, 1);
}

TEST_F(ProgramCacheTest, DeviceDriverChangeMisses) {
  ProgramCache cache(dir_.path(), BinaryStore::kAlways);
  run(cache, "-DFACTOR=2");
  DeviceInfo upgraded = device_->info();
  upgraded.driver_version += "-next";
  EXPECT_NE(cache.file_for(upgraded, "scaled_iota", kSource, "-DFACTOR=2"),
            cache.file_for(device_->info(), "scaled_iota", kSource, "-DFACTOR=2"));
}

TEST_F(ProgramCacheTest, CorruptFileIsRejectedAndRebuilt) {
  ProgramCache first(dir_.path(), BinaryStore::kAlways);
  run(first, "-DFACTOR=7");
  const auto file = first.file_for(device_->info(), "scaled_iota", kSource, "-DFACTOR=7");
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(file) / 2));
    f.write("garbage!", 8);
  }
  ProgramCache second(dir_.path(), BinaryStore::kAlways);
  EXPECT_EQ(run(second, "-DFACTOR=7")[2], 14);
  EXPECT_EQ(second.stats().rejected, 1);
  EXPECT_EQ(second.stats().misses, 1);
  ProgramCache third(dir_.path(), BinaryStore::kAlways);  // the rewrite is good again
  run(third, "-DFACTOR=7");
  EXPECT_EQ(third.stats().hits, 1);
}

TEST_F(ProgramCacheTest, TruncatedFileIsRejected) {
  ProgramCache first(dir_.path(), BinaryStore::kAlways);
  run(first, "-DFACTOR=4");
  const auto file = first.file_for(device_->info(), "scaled_iota", kSource, "-DFACTOR=4");
  std::filesystem::resize_file(file, 20);
  ProgramCache second(dir_.path(), BinaryStore::kAlways);
  EXPECT_EQ(run(second, "-DFACTOR=4")[3], 12);
  EXPECT_EQ(second.stats().rejected, 1);
}

TEST_F(ProgramCacheTest, EmptyDirectoryDisablesTheDiskCache) {
  ProgramCache cache{std::filesystem::path()};
  EXPECT_EQ(run(cache, "-DFACTOR=3")[1], 3);
  EXPECT_EQ(run(cache, "-DFACTOR=3")[1], 3);
  EXPECT_EQ(cache.stats().misses, 2);
  EXPECT_EQ(cache.stats().write_failures, 0);
}

TEST_F(ProgramCacheTest, UnwritableDirectoryStillBuilds) {
  const auto blocker = dir_.path() / "not-a-dir";
  std::ofstream(blocker) << "x";  // a file where the cache directory should be
  ProgramCache cache(blocker / "programs", BinaryStore::kAlways);
  EXPECT_EQ(run(cache, "-DFACTOR=3")[1], 3);
  EXPECT_EQ(cache.stats().write_failures, 1);
}

TEST_F(ProgramCacheTest, CompileErrorCarriesTheBuildLog) {
  ProgramCache cache(dir_.path(), BinaryStore::kAlways);
  const std::string broken = "__kernel void k(__global float* x) { x[0] = undefined_symbol_xyz; }";
  try {
    cache.build(device_->context(), device_->info(), "broken", broken, "");
    FAIL() << "the program must not compile";
  } catch (const ProgramBuildError& e) {
    EXPECT_EQ(e.code(), CL_BUILD_PROGRAM_FAILURE);
    EXPECT_NE(e.build_log().find("undefined_symbol_xyz"), std::string::npos) << e.build_log();
    const std::string what = e.what();
    EXPECT_NE(what.find("'broken' failed to compile"), std::string::npos) << what;
    EXPECT_NE(what.find("undefined_symbol_xyz"), std::string::npos) << what;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path())) << "a failed build must not be cached";
}

TEST_F(ProgramCacheTest, PoclKeepsItsOwnCacheUnlessItIsOff) {
  if (device_->info().platform_name.find("Portable Computing Language") == std::string::npos) {
    GTEST_SKIP() << "not a PoCL device: binaries are always stored";
  }
  {
    ProgramCache cache(dir_.path());
    EXPECT_EQ(run(cache, "-DFACTOR=5")[2], 10);
    EXPECT_EQ(cache.stats().driver_cached, 1);
    EXPECT_EQ(cache.stats().misses, 0);
    EXPECT_TRUE(std::filesystem::is_empty(dir_.path())) << "PoCL's own kernel cache serves later runs";
  }
  testing::ScopedEnv off("POCL_KERNEL_CACHE", "0");
  ProgramCache cache(dir_.path());
  EXPECT_EQ(run(cache, "-DFACTOR=5")[2], 10);
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_TRUE(std::filesystem::exists(cache.file_for(device_->info(), "scaled_iota", kSource, "-DFACTOR=5")));
}

TEST(ProgramCacheLocation, EnvironmentThenXdgThenHome) {
  {
    testing::ScopedEnv env(kCacheDirEnvVar, "/tmp/explicit");
    EXPECT_EQ(ProgramCache::default_dir(), "/tmp/explicit");
  }
  testing::ScopedEnv no_env(kCacheDirEnvVar, std::nullopt);
  {
    testing::ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(ProgramCache::default_dir(), "/tmp/xdg/pax-ocl/programs");
  }
  testing::ScopedEnv no_xdg("XDG_CACHE_HOME", std::nullopt);
  testing::ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(ProgramCache::default_dir(), "/home/someone/.cache/pax-ocl/programs");
}

}  // namespace
}  // namespace paxocl::device
