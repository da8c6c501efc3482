// Vendor datasheet figures of known accelerators: peak throughput, for MFU against the datasheet
// beside MFU against the GEMM peak pax-ocl measures at start-up, and memory and link bandwidths,
// for `pax-ocl plan` (plan/). Dense (no sparsity) TFLOP/s; matched on the OpenCL device name (or a
// name the user types, "H100"), most specific entry first.
// Bandwidths are per device and per direction, in GB/s (10^9 bytes): a ring collective sends and
// receives at once, so the datasheets' bidirectional NVLink figures are halved here. 0 = no
// datasheet figure (a PCIe card has no scale-out network of its own; plan asks for a flag).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace paxocl::device {

struct KnownPeak {
  std::string model;   // "NVIDIA H100 SXM5"
  double fp32_tflops;  // vector (non-tensor) FP32
  double bf16_tflops;  // dense tensor/matrix BF16
  double memory_gb = 0;  // device memory, GB (10^9 bytes) as the datasheet states it
  double ici_gbps = 0;   // GB/s each way to the other devices of its node (NVLink, Infinity Fabric, PCIe)
  double dcn_gbps = 0;   // GB/s each way per device to other nodes, in the vendor's reference system
  std::string links;     // where the link figures come from, for plan's output
};

std::optional<KnownPeak> known_peak(std::string_view device_name);

// What a job's GEMMs compute in: float32 vector units, TF32 tensor cores (MATMUL_PRECISION=tf32 where
// the probe passed), or 16-bit units (FPROP_DTYPE bfloat16 / float16).
enum class PeakCompute { kFloat32, kTf32, kBFloat16, kFloat16 };
// "float32", "tf32", "bfloat16", "float16".
std::string_view peak_compute_name(PeakCompute compute);

// The theoretical peak of one device in GFLOP/s for GEMMs computed as `compute`, where it can be
// computed, and what it rests on ("datasheet NVIDIA H100 SXM5 BF16",
// "2 cores x 2445 MHz x 8 lanes x 2 FMA ports x 2"):
//   - a device in the datasheet table: its FP32 or dense BF16 figure; TF32 as half the dense BF16
//     one (NVIDIA's datasheets for every TF32 part listed: A100 156 / 312, H100 SXM 494.7 / 989.4);
//   - a CPU device: min(compute units, host_threads) x clock x native float lanes x 2 FMA ports
//     x 2 flops per FMA. Two FMA ports is the most any x86 core has for vectors, so this bounds
//     what the device can do. bfloat16 on a CPU whose CPUID reports bfloat16 instructions
//     (DeviceInfo::bf16_flops_per_cycle): min(compute units, host_threads) x clock x those FLOPs
//     per core per cycle; float16, and bfloat16 elsewhere, as float32 (it is computed in float32);
//   - otherwise nothing (peak 0).
struct TheoreticalPeak {
  double gflops = 0;
  std::string basis;
};
struct DeviceInfo;
TheoreticalPeak theoretical_peak(const DeviceInfo& device, PeakCompute compute, unsigned host_threads);
const std::vector<KnownPeak>& known_peaks();

// bfloat16 FLOPs per core per cycle of a CPU's bfloat16 instructions: AMX (TDPBF16PS: a 16x32 by
// 32x16 tile product, 16,384 FLOPs, every 16 cycles) 1024; AVX-512 BF16 (VDPBF16PS: 2 products per
// float32 lane) 2 x `float_lanes` x 2 FMA ports x 2; 0 without either (bfloat16 then runs on the
// float32 units).
std::uint32_t cpu_bf16_flops_per_cycle(bool amx_bf16, bool avx512_bf16, std::uint32_t float_lanes);  // the table, for `pax-ocl devices` and the docs

}  // namespace paxocl::device
