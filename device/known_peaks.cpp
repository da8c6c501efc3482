#include "device/known_peaks.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "device/device_info.h"

namespace paxocl::device {

namespace {
struct Entry {
  std::vector<std::string_view> all_of;  // every one of these (lower case) in the device name
  KnownPeak peak;
};

// Most specific first (H100 PCIe before H100). Sources: the vendors' product datasheets (NVIDIA
// H200, H100, A100, L40S, A10, V100, RTX 4090 and T4; AMD Instinct MI300X, MI250X, MI210; Intel Data
// Center GPU Max 1550); DCN from NVIDIA's DGX reference systems, one ConnectX adapter per GPU (DGX
// H100 / H200: 8 x 400 Gb/s ConnectX-7; DGX A100: 8 x 200 Gb/s ConnectX-6): the nodes NVIDIA's Pax
// GPU results were measured on (../shared/reference/rosetta-pax-gpu-readme.md).
const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"h200"}, {"NVIDIA H200 SXM", 67.0, 989.4, 141, 450, 50, "NVLink 900 GB/s; DGX H200 400 Gb/s per GPU"}},
      {{"h100", "pcie"}, {"NVIDIA H100 PCIe", 51.2, 756.0, 80, 64, 0, "PCIe Gen5 x16 128 GB/s"}},
      {{"h100", "nvl"}, {"NVIDIA H100 NVL", 60.0, 835.0, 94, 64, 0, "PCIe Gen5 x16 128 GB/s"}},
      {{"h100"}, {"NVIDIA H100 SXM5", 67.0, 989.4, 80, 450, 50, "NVLink 900 GB/s; DGX H100 400 Gb/s per GPU"}},
      {{"a100"}, {"NVIDIA A100", 19.5, 312.0, 80, 300, 25, "NVLink 600 GB/s; DGX A100 200 Gb/s per GPU"}},
      {{"l40s"}, {"NVIDIA L40S", 91.6, 362.1, 48, 32, 0, "PCIe Gen4 x16 64 GB/s"}},
      {{"a10"}, {"NVIDIA A10", 31.2, 125.0, 24, 32, 0, "PCIe Gen4 x16 64 GB/s"}},
      {{"v100"}, {"NVIDIA V100 SXM2", 15.7, 125.0, 32, 150, 0, "NVLink 300 GB/s"}},
      {{"rtx", "4090"}, {"NVIDIA GeForce RTX 4090", 82.6, 165.2, 24, 32, 0, "PCIe Gen4 x16 64 GB/s"}},
      {{"t4"}, {"NVIDIA T4", 8.1, 65.0, 16, 16, 0, "PCIe Gen3 x16 32 GB/s"}},
      {{"mi300x"}, {"AMD Instinct MI300X", 163.4, 1307.4, 192, 448, 0, "Infinity Fabric 7 x 128 GB/s"}},
      {{"mi250x"}, {"AMD Instinct MI250X", 47.9, 383.0, 128, 400, 0, "Infinity Fabric 8 x 100 GB/s"}},
      {{"mi210"}, {"AMD Instinct MI210", 22.6, 181.0, 64, 150, 0, "Infinity Fabric 3 x 100 GB/s"}},
      {{"max 1550"}, {"Intel Data Center GPU Max 1550", 52.4, 838.9, 128, 0, 0, "no link figure recorded"}},
  };
  return table;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
}  // namespace

std::optional<KnownPeak> known_peak(std::string_view device_name) {
  const std::string name = lower(device_name);
  for (const Entry& e : entries()) {
    if (std::all_of(e.all_of.begin(), e.all_of.end(), [&](std::string_view part) { return name.find(part) != std::string::npos; })) {
      // "a10" must not match "a100": the entry's last key followed by a digit is another model.
      const std::string_view last = e.all_of.back();
      const auto at = name.find(last);
      if (at + last.size() < name.size() && std::isdigit(static_cast<unsigned char>(name[at + last.size()]))) continue;
      return e.peak;
    }
  }
  return std::nullopt;
}

const std::vector<KnownPeak>& known_peaks() {
  static const std::vector<KnownPeak> peaks = [] {
    std::vector<KnownPeak> p;
    for (const Entry& e : entries()) p.push_back(e.peak);
    return p;
  }();
  return peaks;
}

std::string_view peak_compute_name(PeakCompute compute) {
  switch (compute) {
    case PeakCompute::kFloat32: return "float32";
    case PeakCompute::kTf32: return "tf32";
    case PeakCompute::kBFloat16: return "bfloat16";
    case PeakCompute::kFloat16: return "float16";
  }
  return "float32";
}

TheoreticalPeak theoretical_peak(const DeviceInfo& device, PeakCompute compute, unsigned host_threads) {
  if (const std::optional<KnownPeak> known = known_peak(device.name)) {
    switch (compute) {
      case PeakCompute::kBFloat16:
      case PeakCompute::kFloat16: return {1e3 * known->bf16_tflops, fmt::format("datasheet {} BF16", known->model)};
      case PeakCompute::kTf32:
        return {1e3 * known->bf16_tflops / 2, fmt::format("datasheet {} BF16 / 2 (TF32)", known->model)};
      case PeakCompute::kFloat32: break;
    }
    return {1e3 * known->fp32_tflops, fmt::format("datasheet {} FP32", known->model)};
  }
  if (device.kind != DeviceKind::kCpu || device.clock_mhz == 0 || device.native_float_lanes == 0) return {};
  constexpr int kFmaPorts = 2, kFlopsPerFma = 2;
  const unsigned cores = std::min<unsigned>(device.compute_units, host_threads > 0 ? host_threads : device.compute_units);
  if (compute == PeakCompute::kBFloat16 && device.bf16_flops_per_cycle > 0) {
    return {static_cast<double>(cores) * device.clock_mhz * 1e-3 * device.bf16_flops_per_cycle,
            fmt::format("{} cores x {} MHz x {} bfloat16 FLOPs per cycle ({})", cores, device.clock_mhz,
                        device.bf16_flops_per_cycle, device.bf16_flops_per_cycle == 1024 ? "AMX" : "AVX-512 BF16")};
  }
  return {static_cast<double>(cores) * device.clock_mhz * 1e-3 * device.native_float_lanes * kFmaPorts * kFlopsPerFma,
          fmt::format("{} cores x {} MHz x {} lanes x {} FMA ports x {}", cores, device.clock_mhz,
                      device.native_float_lanes, kFmaPorts, kFlopsPerFma)};
}

std::uint32_t cpu_bf16_flops_per_cycle(bool amx_bf16, bool avx512_bf16, std::uint32_t float_lanes) {
  if (amx_bf16) return 1024;
  constexpr std::uint32_t kProductsPerLane = 2, kFmaPorts = 2, kFlopsPerFma = 2;
  return avx512_bf16 ? kProductsPerLane * float_lanes * kFmaPorts * kFlopsPerFma : 0;
}

}  // namespace paxocl::device
