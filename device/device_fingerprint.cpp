#include "device/device_fingerprint.h"

#include <cctype>

#include <fmt/format.h>

#include "common/fnv1a.h"
#include "common/host_isa.h"

namespace paxocl::device {

std::string device_identity(const DeviceInfo& d) {
  std::string identity = fmt::format("{}|{}|{}|{}|{} CUs", d.name, d.vendor, d.driver_version, d.platform_version,
                                     d.compute_units);
  // The host's instruction sets decide what CPU devices run and how fast; PoCL names a CPU device by
  // its compiler target alone ("pthread-skylake-avx512-..." on a Cascade Lake and on a Sapphire
  // Rapids alike, whose oneDNN has bfloat16 matmuls on one only).
  if (d.kind == DeviceKind::kCpu) identity.append("|").append(host_isa_list(host_isa()));
  return identity;
}

std::uint64_t device_fingerprint(const DeviceInfo& device) { return fnv1a(device_identity(device)); }

std::string device_file_stem(const DeviceInfo& d) {
  std::string stem;
  for (char c : d.name) stem += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return fmt::format("{}-{:016x}", stem.substr(0, 40), device_fingerprint(d));
}

}  // namespace paxocl::device
