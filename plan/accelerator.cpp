#include "plan/accelerator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "common/errors.h"
#include "device/device_info.h"
#include "device/known_peaks.h"

namespace paxocl::plan {

namespace {

// GPU drivers align sub-buffers to 4096 bits (NVIDIA's CL_DEVICE_MEM_BASE_ADDR_ALIGN).
constexpr std::size_t kGpuBaseAddressAlignBytes = 512;
// Assumed links between a host's CPU devices (host memory copies) and between its processes (10 GbE).
constexpr double kHostIciGbps = 10, kHostDcnGbps = 1.25;

struct CpuFacts {
  std::string model = "unknown CPU";
  std::uint32_t mhz = 0;
  std::uint32_t float_lanes = 4;  // SSE
  double ram_bytes = 0;
};

CpuFacts read_cpu_facts() {
  CpuFacts f;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool model = false, mhz = false, flags = false;
  while (std::getline(cpuinfo, line) && !(model && mhz && flags)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && !model) {
      f.model = value;
      model = true;
    } else if (key == "cpu MHz" && !mhz) {
      f.mhz = static_cast<std::uint32_t>(std::atof(value.c_str()));
      mhz = true;
    } else if (key == "flags" && !flags) {
      std::istringstream words(value);
      std::string w;
      while (words >> w) {
        if (w == "avx512f") f.float_lanes = std::max<std::uint32_t>(f.float_lanes, 16);
        if (w == "avx" || w == "avx2") f.float_lanes = std::max<std::uint32_t>(f.float_lanes, 8);
      }
      flags = true;
    }
  }
  // hwloc's machine memory, which PoCL starts from: the NUMA nodes' memory (in a VM it can be
  // less than MemTotal), else MemTotal.
  std::error_code ec;
  for (const auto& node : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    std::ifstream meminfo(node.path() / "meminfo");
    while (std::getline(meminfo, line)) {
      const auto at = line.find("MemTotal:");
      if (at != std::string::npos) f.ram_bytes += std::atof(line.c_str() + at + 9) * 1024.0;  // kB
    }
  }
  if (f.ram_bytes <= 0) {
    std::ifstream meminfo("/proc/meminfo");
    while (std::getline(meminfo, line)) {
      if (line.rfind("MemTotal:", 0) == 0) f.ram_bytes = std::atof(line.c_str() + 9) * 1024.0;
    }
  }
  return f;
}

// PoCL's CPU device memory (pocl_setup_device_for_system_memory): all but 2 GiB of the machine's
// memory (3/4 of it up to 7 GiB), and the largest allocation the next power of two above a quarter
// of that, at least 128 MiB.
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
double pocl_global_memory(double machine) { return machine > 7 * kGiB ? machine - 2 * kGiB : machine * 0.75; }
std::size_t pocl_max_alloc(double global) {
  std::size_t alloc = std::size_t{128} << 20;
  while (static_cast<double>(alloc) < global / 4) alloc *= 2;
  return alloc;
}

std::string known_names() {
  std::string names;
  for (const device::KnownPeak& p : device::known_peaks()) names += (names.empty() ? "" : ", ") + p.model;
  return names;
}

}  // namespace

Accelerator known_accelerator(std::string_view name) {
  const std::optional<device::KnownPeak> peak = device::known_peak(name);
  if (!peak || name.empty()) {
    throw ConfigError(fmt::format("--accelerator={}: not a known accelerator; use host or one of {} (e.g. H100)", name,
                                  known_names()));
  }
  Accelerator a;
  a.name = peak->model;
  a.fp32_gflops = peak->fp32_tflops * 1e3;
  a.sixteen_bit_gflops = peak->bf16_tflops * 1e3;
  a.peak_basis = "datasheet";
  a.memory_bytes = peak->memory_gb * 1e9;
  // OpenCL's guaranteed single allocation, max(1/4 of global memory, 128 MiB), is what NVIDIA's driver reports.
  a.max_alloc_bytes = std::max<std::size_t>(static_cast<std::size_t>(a.memory_bytes / 4), std::size_t{128} << 20);
  a.ici_gbps = peak->ici_gbps;
  a.dcn_gbps = peak->dcn_gbps;
  a.links = peak->links;
  a.base_address_align_bytes = kGpuBaseAddressAlignBytes;
  a.default_mfu = 0.5;
  return a;
}

Accelerator host_accelerator(int devices) {
  const CpuFacts cpu = read_cpu_facts();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  device::DeviceInfo info;  // what PoCL would report for the whole host: one compute unit per thread
  info.kind = device::DeviceKind::kCpu;
  info.name = cpu.model;
  info.compute_units = threads;
  info.clock_mhz = cpu.mhz;
  info.native_float_lanes = cpu.float_lanes;
  const device::TheoreticalPeak peak = device::theoretical_peak(info, device::PeakCompute::kFloat32, threads);  // 16-bit runs in float32
  const int share = std::max(1, devices);
  Accelerator a;
  a.name = fmt::format("this host's CPU ({})", cpu.model);
  a.fp32_gflops = a.sixteen_bit_gflops = peak.gflops / share;
  a.peak_basis = share > 1 ? fmt::format("{}, shared by {} devices", peak.basis, share) : peak.basis;
  const double global = pocl_global_memory(cpu.ram_bytes);
  a.memory_bytes = global / share;
  a.max_alloc_bytes = pocl_max_alloc(global);
  a.ici_gbps = kHostIciGbps;
  a.dcn_gbps = kHostDcnGbps;
  a.links = "assumed: host memory copies between devices, 10 GbE between processes";
  a.default_mfu = 0.8;
  a.host_cpu = true;
  return a;
}

}  // namespace paxocl::plan
