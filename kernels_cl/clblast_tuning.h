// CLBlast's GEMM parameters tuned for one device (`pax-ocl tune`), kept next to the program cache
// in <cache dir>/clblast/<device>-<fingerprint>.json (device/device_fingerprint.h), and applied (clblast::OverrideParameters) whenever a
// CLBlast GEMM is created on that device. CLBlast's own database covers common GPUs; on other
// devices (PoCL's CPU devices among them) its defaults can be far from the device's speed.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "device/device.h"

namespace paxocl::kernels {

using ClblastParameters = std::map<std::string, std::size_t>;

std::filesystem::path clblast_tuning_file(const device::DeviceInfo& device);

// CLBlast's current single-precision Xgemm parameters for the device (its database's defaults
// unless overridden).
ClblastParameters current_clblast_gemm(const device::Device& device);
// Candidate Xgemm parameter sets around `base`: work-group tiles, thread-block shapes, vector
// widths, K tiles and local-memory use, only combinations CLBlast's kernel accepts; at most `limit`,
// spread over the grid, `base` first.
std::vector<ClblastParameters> clblast_gemm_candidates(const ClblastParameters& base, std::size_t limit);

// Makes CLBlast use `parameters` for single-precision Xgemm on this device from now on.
void override_clblast_gemm(const device::Device& device, const ClblastParameters& parameters);

// Writes (atomically; DataError when it cannot) / applies the tuning file. apply: true when the device
// has one (and it was applied).
void save_clblast_tuning(const device::DeviceInfo& device, const ClblastParameters& parameters, const std::string& note);
bool apply_clblast_tuning(const device::Device& device);

}  // namespace paxocl::kernels
