#include "device/device_fingerprint.h"

#include <cctype>

#include <fmt/format.h>

#include "common/fnv1a.h"

namespace paxocl::device {

std::string device_identity(const DeviceInfo& d) {
  return fmt::format("{}|{}|{}|{}", d.name, d.vendor, d.driver_version, d.platform_version);
}

std::uint64_t device_fingerprint(const DeviceInfo& device) { return fnv1a(device_identity(device)); }

std::string device_file_stem(const DeviceInfo& d) {
  std::string stem;
  for (char c : d.name) stem += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return fmt::format("{}-{:016x}", stem.substr(0, 40), device_fingerprint(d));
}

}  // namespace paxocl::device
