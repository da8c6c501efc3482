#include "device/device.h"

#include <map>

namespace paxocl::device {

std::vector<std::unique_ptr<Device>> open_devices(const std::vector<DeviceInfo>& devices, bool share_contexts) {
  std::vector<std::unique_ptr<Device>> opened;
  if (!share_contexts) {
    for (const DeviceInfo& info : devices) opened.push_back(std::make_unique<Device>(info));
    return opened;
  }
  std::map<cl_platform_id, std::vector<cl_device_id>> by_platform;
  for (const DeviceInfo& info : devices) by_platform[info.platform].push_back(info.id);
  std::map<cl_platform_id, Context> contexts;
  for (const auto& [platform, ids] : by_platform) contexts.emplace(platform, Context(std::span<const cl_device_id>(ids)));
  for (const DeviceInfo& info : devices) opened.push_back(std::make_unique<Device>(info, contexts.at(info.platform)));
  return opened;
}

}  // namespace paxocl::device
