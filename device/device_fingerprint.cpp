#include "device/device_fingerprint.h"

#include <fmt/format.h>

#include "common/fnv1a.h"

namespace paxocl::device {

std::string device_identity(const DeviceInfo& d) {
  return fmt::format("{}|{}|{}|{}", d.name, d.vendor, d.driver_version, d.platform_version);
}

std::uint64_t device_fingerprint(const DeviceInfo& device) { return fnv1a(device_identity(device)); }

}  // namespace paxocl::device
