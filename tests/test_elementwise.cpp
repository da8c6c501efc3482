// The embedded element-wise kernels on every selected device, against float64 host references,
// including lengths that are not a multiple of the launch group; PAX_OCL_KERNEL_SOURCE_DIR's
// copies replacing the embedded sources; the kernel library's programs built as groups.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "device/device_selection.h"
#include "kernels_cl/elementwise.h"
#include "kernels_cl/embedded_sources.h"
#include "kernels_cl/kernel_set.h"
#include "kernels_cl/program_loader.h"
#include "tests/device_fixture.h"
#include "tests/test_support.h"

namespace paxocl::kernels {
namespace {

TEST(EmbeddedSources, ContainTheProjectKernels) {
  const std::string_view src = embedded_source("elementwise");
  EXPECT_NE(src.find("__kernel void axpy_f32"), std::string_view::npos);
  EXPECT_THROW(embedded_source("no_such_program"), DeviceError);
}

// Every embedded program written to `dir` as <name>.cl, with `edits` (program, from, to) applied;
// each `from` must occur, so a kernel rewrite cannot make the edit silently vanish.
void write_sources(const std::filesystem::path& dir,
                   const std::vector<std::array<std::string, 3>>& edits) {
  for (const EmbeddedSource& s : embedded_sources()) {
    std::string text(s.source);
    for (const auto& [program, from, to] : edits) {
      if (program != s.name) continue;
      const std::size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos) << program << ".cl no longer holds: " << from;
      text.replace(at, from.size(), to);
    }
    std::ofstream(dir / (std::string(s.name) + ".cl"), std::ios::binary) << text;
  }
}

// fill(0.5) on the first selected device, building through a cache on `cache_dir` (a new cache
// object each time, as a new process would, storing binaries on any driver); also returns the
// cache's misses.
std::pair<float, int> fill_half(const std::filesystem::path& cache_dir) {
  device::ProgramCache cache(cache_dir, device::BinaryStore::kAlways);
  device::Device dev(testing::test_device_selection().front());
  Elementwise ops(cache, dev);
  device::Buffer<float> out(dev.context(), 70, "out");  // 4 CPU items of 16 and a tail, or 70 GPU items
  ops.fill(out, 0.5f);
  std::vector<float> got(70);
  dev.queue().read(out, std::span<float>(got));
  for (float v : got) EXPECT_EQ(v, got.front());
  return {got.front(), cache.stats().misses};
}

TEST(KernelSourceDir, ProgramsAreReadFromTheDirectoryAndNeverReuseAnotherSourcesBinary) {
  testing::TempDir cache_dir, same, changed;
  {
    testing::ScopedEnv embedded(kKernelSourceDirEnvVar, std::nullopt);
    EXPECT_EQ(fill_half(cache_dir.path()), (std::pair<float, int>{0.5f, 1}));  // built, stored
  }
  // Unchanged copies build alone (the embedded library programs build as groups, program_loader.cpp),
  // so once; then the same text is the same cache entry (no build).
  write_sources(same.path(), {});
  {
    testing::ScopedEnv dir(kKernelSourceDirEnvVar, same.path().string());
    EXPECT_EQ(fill_half(cache_dir.path()), (std::pair<float, int>{0.5f, 1}));
    EXPECT_EQ(fill_half(cache_dir.path()), (std::pair<float, int>{0.5f, 0}));
  }
  // fill writes value + 1 in both variants: the cache holds the embedded program's binary under
  // the same name and options, and must not hand it out for this text.
  write_sources(changed.path(), {{"elementwise", "if (i < n) out[i] = value;", "if (i < n) out[i] = value + 1.0f;"},
                                 {"elementwise_cpu", "vstore16((float16)(value), 0", "vstore16((float16)(value + 1.0f), 0"},
                                 {"elementwise_cpu", "out[base + i] = value;", "out[base + i] = value + 1.0f;"}});
  {
    testing::ScopedEnv dir(kKernelSourceDirEnvVar, changed.path().string());
    EXPECT_EQ(fill_half(cache_dir.path()), (std::pair<float, int>{1.5f, 1}));
  }
  {
    testing::ScopedEnv embedded(kKernelSourceDirEnvVar, "");  // empty: the embedded sources again
    EXPECT_EQ(fill_half(cache_dir.path()), (std::pair<float, int>{0.5f, 0}));
  }
}

TEST(KernelSourceDir, AMissingFileIsAOneLineErrorNamingIt) {
  testing::TempDir cache_dir, sources;
  write_sources(sources.path(), {});
  std::filesystem::remove(sources.path() / "elementwise.cl");
  std::filesystem::remove(sources.path() / "elementwise_cpu.cl");
  testing::ScopedEnv dir(kKernelSourceDirEnvVar, sources.path().string());
  const std::string message = testing::error_message<DeviceError>([&] { fill_half(cache_dir.path()); });
  EXPECT_NE(message.find(kKernelSourceDirEnvVar), std::string::npos) << message;
  EXPECT_TRUE(message.find((sources.path() / "elementwise.cl").string()) != std::string::npos ||
              message.find((sources.path() / "elementwise_cpu.cl").string()) != std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_THROW(program_source("no_such_program"), DeviceError);  // unknown names fail as without the variable
}

// Hostile PAX_OCL_KERNEL_SOURCE_DIR contents, each a DeviceError whose first line names what is
// wrong and where: no such directory, a file instead of one, a copy that does not compile (the
// build log follows the summary line) and a copy that compiles but lacks the kernels.
TEST(KernelSourceDir, HostileDirectoriesAndCopiesAreNamedInTheFirstLine) {
  testing::TempDir cache_dir, sources;
  const auto first_line = [](const std::string& m) { return m.substr(0, m.find('\n')); };
  const auto error_with = [&](const std::filesystem::path& dir) {
    testing::ScopedEnv env(kKernelSourceDirEnvVar, dir.string());
    return testing::error_message<DeviceError>([&] { fill_half(cache_dir.path()); });
  };
  for (const auto& [dir, says] : {std::pair{sources.path() / "missing", std::string("no such file or directory")},
                                  std::pair{sources.path() / "file", std::string("not a directory")}}) {
    if (dir.filename() == "file") std::ofstream(dir) << "x";
    const std::string message = error_with(dir);
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find(std::string(kKernelSourceDirEnvVar) + "=" + dir.string()), std::string::npos) << message;
    EXPECT_NE(message.find(says), std::string::npos) << message;
  }
  const std::string copy = (sources.path() / "elementwise_cpu.cl").string() + "|" +
                           (sources.path() / "elementwise.cl").string();
  const auto names_the_copy = [&](const std::string& line) {
    return line.find((sources.path() / "elementwise_cpu.cl").string()) != std::string::npos ||
           line.find((sources.path() / "elementwise.cl").string()) != std::string::npos;
  };
  write_sources(sources.path(), {});
  for (const char* name : {"elementwise.cl", "elementwise_cpu.cl"}) std::ofstream(sources.path() / name) << "garbage(";
  const std::string not_compiling = first_line(error_with(sources.path()));
  EXPECT_NE(not_compiling.find("failed to compile"), std::string::npos) << not_compiling;
  EXPECT_TRUE(names_the_copy(not_compiling)) << not_compiling << " names none of " << copy;
  for (const char* name : {"elementwise.cl", "elementwise_cpu.cl"}) std::ofstream(sources.path() / name) << "\n";
  const std::string no_kernels = error_with(sources.path());
  EXPECT_EQ(no_kernels.find('\n'), std::string::npos) << no_kernels;
  EXPECT_NE(no_kernels.find("defines no kernel 'fill_f32'"), std::string::npos) << no_kernels;
  EXPECT_TRUE(names_the_copy(no_kernels)) << no_kernels << " names none of " << copy;
}

// The library's programs load as one OpenCL program per group and build options (program_loader.cpp):
// the activation programs share one, the float32 ones another, GPU twins (-DPAX_WG) and the
// portable programs of the GPU set one each; programs outside the library and copies from
// PAX_OCL_KERNEL_SOURCE_DIR build alone.
TEST(ProgramLoader, LibraryProgramsShareOneProgramPerGroupAndOptions) {
  testing::TempDir cache_dir, sources;
  device::ProgramCache cache(cache_dir.path());
  device::Device dev(testing::test_device_selection().front());
  const std::string act(device::dtype_build_option(device::DType::kF32));
  std::vector<device::Program> held;  // alive, so that no two programs share an address by reuse
  const auto program = [&](std::string_view name, std::string_view options) {
    std::string variant = program_variant_name(dev.info(), name), all(options);
    if (variant.ends_with("_gpu")) all += fmt::format(" -DPAX_WG={} -DPAX_ROW_TEAM={}", gpu_group_size(dev.info()), kGpuRowTeam);
    return held.emplace_back(load_program(cache, dev, variant, all)).get();
  };
  for (const char* set : {"cpu", "gpu", "portable"}) {
    SCOPED_TRACE(set);
    testing::ScopedEnv kernels(kKernelVariantEnvVar, std::string(set));
    const cl_program layernorm = program("layernorm", act);
    EXPECT_EQ(program("bias", act), layernorm);
    EXPECT_EQ(program("cast", act), layernorm);
    EXPECT_NE(program("elementwise", ""), layernorm);
    EXPECT_NE(program("layernorm", std::string(device::dtype_build_option(device::DType::kBF16))), layernorm);
    // attention, ssm and elementwise have no GPU twin: in the GPU set they build as portable
    // programs, without the twins' -DPAX_WG.
    if (std::string_view(set) == "gpu") {
      EXPECT_NE(program("attention", act), layernorm);
      EXPECT_EQ(program("ssm", act), program("attention", act));
      EXPECT_NE(program("optimizer", ""), program("elementwise", ""));
    } else {
      EXPECT_EQ(program("attention", act), layernorm);
      EXPECT_EQ(program("optimizer", ""), program("elementwise", ""));
    }
    EXPECT_NE(program("gemm_pack", act), layernorm);
  }
  write_sources(sources.path(), {});
  testing::ScopedEnv dir(kKernelSourceDirEnvVar, sources.path().string());
  EXPECT_NE(program("bias", act), program("layernorm", act));
}

TEST(Elementwise, MatchesDoubleReferenceOnEveryDevice) {
  testing::TempDir cache_dir;
  device::ProgramCache cache(cache_dir.path());
  const auto selected = testing::test_device_selection();
  for (const device::DeviceInfo& info : selected) {
    device::Device dev(info);
    Elementwise ops(cache, dev);
    for (std::size_t n : {1u, 63u, 64u, 1000u, 4097u}) {
      std::vector<float> x(n), y(n);
      for (std::size_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(std::sin(1.7 * static_cast<double>(i)));
        y[i] = static_cast<float>(0.25 * static_cast<double>(i % 13) - 1.0);
      }
      device::Buffer<float> xb(dev.context(), n, "x"), yb(dev.context(), n, "y"), sum(dev.context(), n, "sum");
      dev.queue().write(xb, std::span<const float>(x));
      dev.queue().write(yb, std::span<const float>(y));
      ops.axpy(yb, xb, -1.5f);         // y <- y - 1.5 x
      ops.add(sum, yb, xb);            // sum <- y + x
      ops.scale(sum, 2.0f);            // sum <- 2 sum
      std::vector<float> got(n);
      dev.queue().read(sum, std::span<float>(got));
      for (std::size_t i = 0; i < n; ++i) {
        const double expected = 2.0 * ((static_cast<double>(y[i]) - 1.5 * x[i]) + x[i]);
        ASSERT_NEAR(got[i], expected, 1e-5) << "device " << info.index << " n=" << n << " i=" << i;
      }
      ops.fill(sum, 0.5f);
      dev.queue().read(sum, std::span<float>(got));
      for (float v : got) ASSERT_EQ(v, 0.5f);
    }
  }
}

}  // namespace
}  // namespace paxocl::kernels
