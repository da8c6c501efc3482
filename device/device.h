// Device: one selected OpenCL device ready for work: its info, a context and an in-order
// profiling compute queue. By default each device has its own context, which keeps devices of
// different platforms usable side by side; devices of one platform may instead share a context
// (open_devices), so that their buffers are visible to each other and the ICI collectives can
// move data device to device (collectives/ici_communicator.h: ring) rather than through the host.
#pragma once

#include <memory>
#include <vector>

#include "device/context.h"
#include "device/device_info.h"
#include "device/queue.h"

namespace paxocl::device {

class Device {
 public:
  explicit Device(DeviceInfo info)
      : info_(std::move(info)), context_(std::span<const cl_device_id>(&info_.id, 1)), queue_(context_, info_.id) {}
  // In `shared`, a context that holds this device among others.
  Device(DeviceInfo info, Context shared)
      : info_(std::move(info)), context_(std::move(shared)), queue_(context_, info_.id) {}

  const DeviceInfo& info() const { return info_; }
  const Context& context() const { return context_; }
  Queue& queue() { return queue_; }
  // A further queue on the same device (e.g. for communication next to compute).
  Queue make_queue() const { return Queue(context_, info_.id); }

 private:
  DeviceInfo info_;
  Context context_;
  Queue queue_;
};

// Opens `devices` in order. With `share_contexts`, the devices of each platform share one context.
std::vector<std::unique_ptr<Device>> open_devices(const std::vector<DeviceInfo>& devices, bool share_contexts);

}  // namespace paxocl::device
