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
// the probe passed), or 16-bit tensor units (FPROP_DTYPE bfloat16 / float16).
enum class PeakCompute { kFloat32, kTf32, kSixteenBit };

// The theoretical peak of one device in GFLOP/s for GEMMs computed as `compute`, where it can be
// computed, and what it rests on ("datasheet NVIDIA H100 SXM5 BF16",
// "2 cores x 2445 MHz x 8 lanes x 2 FMA ports x 2"):
//   - a device in the datasheet table: its FP32 or dense BF16 figure; TF32 as half the dense BF16
//     one (NVIDIA's datasheets for every TF32 part listed: A100 156 / 312, H100 SXM 494.7 / 989.4);
//   - a CPU device: min(compute units, host_threads) x clock x native float lanes x 2 FMA ports
//     x 2 flops per FMA. Two FMA ports is the most any x86 core has for vectors, so this bounds
//     what the device can do (a CPU computes 16-bit GEMMs in float32 too);
//   - otherwise nothing (peak 0).
struct TheoreticalPeak {
  double gflops = 0;
  std::string basis;
};
struct DeviceInfo;
TheoreticalPeak theoretical_peak(const DeviceInfo& device, PeakCompute compute, unsigned host_threads);
const std::vector<KnownPeak>& known_peaks();  // the table, for `pax-ocl devices` and the docs

}  // namespace paxocl::device
