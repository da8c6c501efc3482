// What identifies a device for anything built or tuned for it and kept on disk (program binaries,
// GEMM choices, CLBlast tuning): its name, vendor, driver version and platform version, since a
// driver or platform update may change what compiles or what is fastest.
#pragma once

#include <cstdint>
#include <string>

#include "device/device_info.h"

namespace paxocl::device {

// "name|vendor|driver_version|platform_version".
std::string device_identity(const DeviceInfo& device);

// FNV-1a 64 (common/fnv1a.h) of device_identity: stable across builds, compilers and standard
// libraries, so a cache file written by one build is found by the next.
std::uint64_t device_fingerprint(const DeviceInfo& device);

// A file name stem for what is tuned for the device: its name (alphanumerics, the rest '_', at
// most 40 characters) for a reader, then the fingerprint, which tells drivers and platforms apart.
std::string device_file_stem(const DeviceInfo& device);

}  // namespace paxocl::device
