// Device: one selected OpenCL device ready for work: its info, its own context and an in-order
// profiling compute queue. One context per device keeps devices of different platforms usable
// side by side; data moves between devices through the collectives (host-staged where needed).
#pragma once

#include "device/context.h"
#include "device/device_info.h"
#include "device/queue.h"

namespace paxocl::device {

class Device {
 public:
  explicit Device(DeviceInfo info)
      : info_(std::move(info)), context_(std::span<const cl_device_id>(&info_.id, 1)), queue_(context_, info_.id) {}

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

}  // namespace paxocl::device
