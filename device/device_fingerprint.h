// What identifies a device for anything built or tuned for it and kept on disk (program binaries,
// GEMM choices, measured GEMM peaks, CLBlast tuning): its name, vendor, driver version, platform
// version and compute units, since a driver or platform update or another size of the same part
// (a MIG slice, a VM of more cores) may change what compiles or what is fastest; for a CPU device
// also the host's instruction sets (AVX2, AVX-512, AVX512_BF16, AMX-BF16), which PoCL's device
// name does not tell apart. Caches on a home directory shared by unlike nodes stay apart.
#pragma once

#include <cstdint>
#include <string>

#include "device/device_info.h"

namespace paxocl::device {

// "name|vendor|driver_version|platform_version|N CUs", then "|avx2,avx512,..." for a CPU device.
std::string device_identity(const DeviceInfo& device);

// FNV-1a 64 (common/fnv1a.h) of device_identity: stable across builds, compilers and standard
// libraries, so a cache file written by one build is found by the next.
std::uint64_t device_fingerprint(const DeviceInfo& device);

// A file name stem for what is tuned for the device: its name (alphanumerics, the rest '_', at
// most 40 characters) for a reader, then the fingerprint, which tells drivers and platforms apart.
std::string device_file_stem(const DeviceInfo& device);

}  // namespace paxocl::device
