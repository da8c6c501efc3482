#include "device/device_selection.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::device {

namespace {

constexpr const char* kAcceptedForms = "use auto, gpu, cpu, accelerator, or device indices such as 0,1 or 0-3";

int parse_index(std::string_view text, std::string_view spec) {
  int value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw ConfigError(fmt::format("--devices={}: '{}' is not a device index; {}", spec, text, kAcceptedForms));
  }
  return value;
}

// "2 cpu, 1 gpu": what the host has, for messages.
std::string kinds_summary(const std::vector<DeviceInfo>& all) {
  std::string s;
  for (DeviceKind kind : {DeviceKind::kGpu, DeviceKind::kAccelerator, DeviceKind::kCpu, DeviceKind::kOther}) {
    const auto n = std::count_if(all.begin(), all.end(), [&](const DeviceInfo& d) { return d.kind == kind; });
    if (n > 0) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, to_string(kind));
  }
  return s.empty() ? "none" : s;
}

}  // namespace

DeviceSelection parse_device_selection(std::string_view spec) {
  DeviceSelection sel;
  sel.spec = std::string(spec);
  if (spec == "auto" || spec.empty()) return sel;
  if (spec == "gpu") { sel.mode = DeviceSelection::Mode::kGpu; return sel; }
  if (spec == "cpu") { sel.mode = DeviceSelection::Mode::kCpu; return sel; }
  if (spec == "accelerator") { sel.mode = DeviceSelection::Mode::kAccelerator; return sel; }

  sel.mode = DeviceSelection::Mode::kIndices;
  std::set<int> seen;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view item = spec.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    const int first = parse_index(item.substr(0, dash), spec);
    const int last = dash == std::string_view::npos ? first : parse_index(item.substr(dash + 1), spec);
    if (last < first) {
      throw ConfigError(fmt::format("--devices={}: range '{}' runs backwards; write it as {}-{}", spec, item, last, first));
    }
    for (int i = first; i <= last; ++i) {
      if (!seen.insert(i).second) {
        throw ConfigError(fmt::format("--devices={}: device {} is listed twice; list each device once", spec, i));
      }
      sel.indices.push_back(i);
    }
    start = comma + 1;
  }
  return sel;
}

std::string device_spec_from(const std::optional<std::string>& flag_value) {
  if (flag_value) return *flag_value;
  const char* env = std::getenv(kDevicesEnvVar);
  if (env != nullptr && *env != '\0') return env;
  return "auto";
}

std::vector<DeviceInfo> select_devices(const std::vector<DeviceInfo>& all, const DeviceSelection& sel) {
  using Mode = DeviceSelection::Mode;
  auto of_kinds = [&](std::initializer_list<DeviceKind> kinds) {
    std::vector<DeviceInfo> out;
    std::copy_if(all.begin(), all.end(), std::back_inserter(out), [&](const DeviceInfo& d) {
      return std::find(kinds.begin(), kinds.end(), d.kind) != kinds.end();
    });
    return out;
  };
  auto require_some = [&](std::vector<DeviceInfo> found, const char* what) {
    if (found.empty()) {
      throw ConfigError(fmt::format("--devices={}: no {} among this host's OpenCL devices ({}); "
                                    "use --devices=auto or list indices from `pax-ocl devices`",
                                    sel.spec, what, kinds_summary(all)));
    }
    return found;
  };

  switch (sel.mode) {
    case Mode::kAuto: {
      std::vector<DeviceInfo> fast = of_kinds({DeviceKind::kGpu, DeviceKind::kAccelerator});
      if (!fast.empty()) return fast;
      return require_some(of_kinds({DeviceKind::kCpu, DeviceKind::kOther}), "usable device");
    }
    case Mode::kGpu: return require_some(of_kinds({DeviceKind::kGpu}), "GPU");
    case Mode::kCpu: return require_some(of_kinds({DeviceKind::kCpu}), "CPU device");
    case Mode::kAccelerator: return require_some(of_kinds({DeviceKind::kAccelerator}), "accelerator");
    case Mode::kIndices: {
      std::vector<DeviceInfo> out;
      for (int i : sel.indices) {
        if (i >= static_cast<int>(all.size())) {
          throw ConfigError(fmt::format("--devices={}: index {} is out of range; this host has {} OpenCL "
                                        "device(s){}; run `pax-ocl devices` to list them",
                                        sel.spec, i, all.size(),
                                        all.empty() ? "" : fmt::format(" (0-{})", all.size() - 1)));
        }
        out.push_back(all[static_cast<std::size_t>(i)]);
      }
      return out;
    }
  }
  return {};
}

}  // namespace paxocl::device
