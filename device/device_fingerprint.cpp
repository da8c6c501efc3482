#include "device/device_fingerprint.h"

#include <cctype>

#include <fmt/format.h>

#include "common/fnv1a.h"

namespace paxocl::device {

namespace {
// The host's instruction sets that decide what CPU devices run and how fast (PoCL names a CPU device
// by its compiler target alone: "pthread-skylake-avx512-..." on a Cascade Lake and on a Sapphire
// Rapids alike, whose oneDNN has bfloat16 matmuls on one only).
std::string host_isa() {
  std::string isa;
  const auto add = [&isa](bool has, const char* name) {
    if (!has) return;
    if (!isa.empty()) isa += ',';
    isa += name;
  };
  add(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"), "avx2");
  add(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"),
      "avx512");
  add(__builtin_cpu_supports("avx512bf16"), "avx512bf16");
  add(__builtin_cpu_supports("amx-bf16"), "amx-bf16");
  return isa;
}
}  // namespace

std::string device_identity(const DeviceInfo& d) {
  std::string identity = fmt::format("{}|{}|{}|{}|{} CUs", d.name, d.vendor, d.driver_version, d.platform_version,
                                     d.compute_units);
  if (d.kind == DeviceKind::kCpu) identity.append("|").append(host_isa());
  return identity;
}

std::uint64_t device_fingerprint(const DeviceInfo& device) { return fnv1a(device_identity(device)); }

std::string device_file_stem(const DeviceInfo& d) {
  std::string stem;
  for (char c : d.name) stem += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return fmt::format("{}-{:016x}", stem.substr(0, 40), device_fingerprint(d));
}

}  // namespace paxocl::device
