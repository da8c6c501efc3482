// Vendor peak throughput of known accelerators, for MFU against the datasheet beside MFU against
// the GEMM peak pax-ocl measures at start-up. Dense (no sparsity) TFLOP/s from the vendors'
// datasheets; matched on the OpenCL device name, most specific entry first.
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
};

std::optional<KnownPeak> known_peak(std::string_view device_name);
const std::vector<KnownPeak>& known_peaks();  // the table, for `pax-ocl devices` and the docs

}  // namespace paxocl::device
