// Which of the enumerated devices a process uses. The spec comes from --devices, else the
// PAX_OCL_DEVICES environment variable, else "auto":
//   auto         GPUs and accelerators when there is any, otherwise the CPU devices (PoCL)
//   gpu | cpu | accelerator   all devices of that kind (an error when there is none)
//   0,2 | 0-3    enumeration indices as listed by `pax-ocl devices` (ranges allowed)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/device_info.h"

namespace paxocl::device {

inline constexpr const char* kDevicesEnvVar = "PAX_OCL_DEVICES";

struct DeviceSelection {
  enum class Mode { kAuto, kGpu, kCpu, kAccelerator, kIndices };
  Mode mode = Mode::kAuto;
  std::vector<int> indices;  // for kIndices, in the order given
  std::string spec;          // as written, for messages
};

// Parses a spec; throws ConfigError naming the bad part and the accepted forms.
DeviceSelection parse_device_selection(std::string_view spec);

// The flag's value if given, else $PAX_OCL_DEVICES if set and non-empty, else "auto".
std::string device_spec_from(const std::optional<std::string>& flag_value);

// Applies a selection to the host's devices, keeping enumeration order for kind-based modes.
// Throws ConfigError when nothing matches or an index is out of range.
std::vector<DeviceInfo> select_devices(const std::vector<DeviceInfo>& all, const DeviceSelection& selection);

}  // namespace paxocl::device
