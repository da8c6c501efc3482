#include "kernels_cl/program_loader.h"

#include <array>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "device/cl_error.h"
#include "kernels_cl/embedded_sources.h"
#include "kernels_cl/kernel_set.h"

namespace paxocl::kernels {

namespace {

// The kernel library's programs (kernel_library.h), each group built with one set of options: the
// activation programs with the act dtype's, the float32-only ones without. A program left out of
// these lists builds alone: as right, only slower to load.
constexpr std::array<std::string_view, 14> kActivationPrograms = {
    "embedding",      "layernorm", "rmsnorm", "bias", "gelu", "swiglu",  "attention", "rope",
    "cross_entropy", "vocab_parallel", "residual", "cast", "ssm", "ssm_fft"};
constexpr std::array<std::string_view, 2> kFloatPrograms = {"elementwise", "optimizer"};

constexpr std::string_view kCpuSuffix = "_cpu", kGpuSuffix = "_gpu";

std::string_view base_program(std::string_view name) {
  for (const std::string_view suffix : {kCpuSuffix, kGpuSuffix}) {
    if (name.ends_with(suffix)) return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

bool contains(std::span<const std::string_view> programs, std::string_view name) {
  for (const std::string_view p : programs) {
    if (p == name) return true;
  }
  return false;
}

// What every program starts with: the storage-type helpers and GELU's formula (gelu_math.cl: the
// GELU kernels and the direct GEMM's epilogue share it). GPU twins (built with -DPAX_WG,
// kernel_set.cpp) also get the work-group reductions (group_reduce.cl), the tensor-core programs
// the mma.sync primitives (mma_ops.cl), the GPU GEMMs their epilogue (gemm_epilogue.cl).
std::string prelude(std::string_view name, bool gpu_twin) {
  const bool mma = name == "gemm_mma" || name == "flash_attention_mma";
  const bool epilogue = name == "gemm_mma" || name == "gemm_direct";
  return program_source("dtype") + "\n" + program_source("gelu_math") + "\n" +
         (gpu_twin ? program_source("group_reduce") + "\n" : "") + (mma ? program_source("mma_ops") + "\n" : "") +
         (epilogue ? program_source("gemm_epilogue") + "\n" : "");
}

device::Program build(device::ProgramCache& cache, const device::Device& device, std::string_view name,
                      const std::string& source, const std::string& options) {
  try {
    return cache.build(device.context(), device.info(), name, source, options);
  } catch (const device::ProgramBuildError& e) {
    // A copy in PAX_OCL_KERNEL_SOURCE_DIR that does not compile: the summary line names the file.
    const std::string origin = program_source_origin(name);
    if (origin.empty()) throw;
    throw device::ProgramBuildError(name, device.info().name, e.build_log(), origin);
  }
}

// The library group holding `name` (a variant name: "layernorm_cpu"); empty where none does.
std::span<const std::string_view> library_group(std::string_view name) {
  const std::string_view base = base_program(name);
  if (contains(kActivationPrograms, base)) return kActivationPrograms;
  if (contains(kFloatPrograms, base)) return kFloatPrograms;
  return {};
}

}  // namespace

device::Program load_program(device::ProgramCache& cache, const device::Device& device, std::string_view name,
                             std::string_view extra_options) {
  std::string options(kBuildOptions);
  if (!extra_options.empty()) options.append(" ").append(extra_options);
  const bool gpu_twin = options.find("-DPAX_WG=") != std::string::npos;
  // The source comes from program_source(): the embedded copy, or PAX_OCL_KERNEL_SOURCE_DIR's file.
  // The program cache keys on this full text, so an edited source never reuses an old binary; #line
  // keeps compiler messages' line numbers (and, in a bundle, names the file).
  const std::span<const std::string_view> group = library_group(name);
  if (group.empty() || !program_source_origin(name).empty()) {
    return build(cache, device, name, prelude(name, gpu_twin) + "#line 1\n" + program_source(name), options);
  }
  // A library program: its whole group as one OpenCL program, built once per device and options:
  // the group's programs in the variant each runs as on this device, those built like `name` (GPU
  // twins with -DPAX_WG, or not).
  // PoCL preprocesses a program's whole source even when its cache holds the program (about 30 ms
  // for the OpenCL headers alone), so 15 programs cost about 0.7 s a device at every start; one per
  // group costs about a tenth of that, and cold builds share one front-end pass. Copies read from
  // PAX_OCL_KERNEL_SOURCE_DIR build alone, so that an error names its file.
  // The members name the group's program; its source is assembled only on the first request.
  std::vector<std::string> members;
  for (const std::string_view program : group) {
    std::string member = program_variant_name(device.info(), program);
    if (member.ends_with(kGpuSuffix) == gpu_twin) members.push_back(std::move(member));  // else other options
  }
  const std::string bundle = group.data() == kFloatPrograms.data() ? "library-float32" : "library-activations";
  return device.shared_program(fmt::format("{}\n{}", options, fmt::join(members, "+")), [&] {
    std::string source = prelude(name, gpu_twin);
    for (const std::string& member : members) {
      source += fmt::format("#line 1 \"{}.cl\"\n{}\n", member, program_source(member));
    }
    return build(cache, device, bundle, source, options);
  });
}

}  // namespace paxocl::kernels
