// Accelerator: the device a plan estimates for, per device of the mesh: its peak FLOP rate for
// the step's dtype, memory, largest allocation and link bandwidths, and what each figure rests on.
//   known_accelerator("H100"): device/known_peaks' datasheet entry (dense BF16 or vector FP32 peak,
//     memory in GB, NVLink / PCIe and DCN per direction); default MFU 0.5.
//   host_accelerator(devices): this machine's CPU as PoCL presents it, read without opening
//     OpenCL: threads (std::thread::hardware_concurrency), clock and vector width from
//     /proc/cpuinfo ("cpu MHz", avx512f / avx2 / avx flags: 16 / 8 / 8 float lanes, else 4) into
//     device::theoretical_peak's cores x clock x lanes x 2 FMA ports x 2; memory as PoCL reports it
//     (the NUMA nodes' memory, as hwloc counts it, or MemTotal, less 2 GiB; the largest allocation
//     the power of two above a quarter of that). The process's `devices` CPU devices share the
//     peak and the memory, so each gets 1/devices.
//     Links are assumptions, not measurements (host memory 10 GB/s between devices, 1.25 GB/s =
//     10 GbE between processes); default MFU 0.8 (a training step runs its model FLOPs at 78-100%
//     of the theoretical peak on this project's reference CPU, docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "device/dtype.h"

namespace paxocl::plan {

struct Accelerator {
  std::string name;               // "NVIDIA H100 SXM5", "this host's CPU (AMD EPYC)"
  double fp32_gflops = 0;         // peak per device
  double sixteen_bit_gflops = 0;  // bfloat16 / float16 peak per device
  std::string peak_basis;         // "datasheet" (its dense BF16 or vector FP32 figure), or the CPU formula
  double memory_bytes = 0;        // per device
  std::size_t max_alloc_bytes = 0;  // the largest single buffer; 0: no limit known
  double ici_gbps = 0, dcn_gbps = 0;  // GB/s each way per device; 0: unknown
  std::string links;              // where the link figures come from
  std::size_t base_address_align_bytes = 128;  // sub-buffer alignment (parameter layout padding)
  double default_mfu = 0.5;
  bool host_cpu = false;

  double peak_gflops(device::DType fprop) const {
    return fprop == device::DType::kF32 ? fp32_gflops : sixteen_bit_gflops;
  }
};

// A datasheet entry by name (case-insensitive, as known_peak matches: "H100", "a100", "MI300X");
// ConfigError listing the known ones otherwise.
Accelerator known_accelerator(std::string_view name);
// This host's CPU, shared by `devices` CPU devices of one process.
Accelerator host_accelerator(int devices);

}  // namespace paxocl::plan
