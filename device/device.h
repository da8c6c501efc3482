// Device: one selected OpenCL device ready for work: its info, a context and an in-order
// profiling compute queue. By default each device has its own context, which keeps devices of
// different platforms usable side by side; devices of one platform may instead share a context
// (open_devices), so that their buffers are visible to each other and the ICI collectives can
// move data device to device (collectives/ici_communicator.h: ring) rather than through the host.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/context.h"
#include "device/device_info.h"
#include "device/program.h"
#include "device/queue.h"

namespace paxocl::device {

// Counts the CPU devices open in this process: they share the host's cores (PoCL reports every
// core as each one's compute units), so host-threaded work on one of them (BLIS GEMMs) takes its
// share rather than every core: oversubscribed, BLIS's threads spin at their barriers. The other
// processes of the job on this host (MPI ranks, set once at start-up) share the cores as well.
class OpenCpuDevice {
 public:
  explicit OpenCpuDevice(bool cpu) : cpu_(cpu) { add(1); }
  OpenCpuDevice(const OpenCpuDevice& other) : cpu_(other.cpu_) { add(1); }
  OpenCpuDevice& operator=(const OpenCpuDevice& other) {
    add(-1);
    cpu_ = other.cpu_;
    add(1);
    return *this;
  }
  ~OpenCpuDevice() { add(-1); }
  static unsigned count() { return counter().load(); }
  static void set_processes_on_host(unsigned n) { processes_on_host() = n < 1 ? 1 : n; }
  static unsigned job_processes_on_host() { return processes_on_host().load(); }
  // How many ways the host's cores are divided: open CPU devices here x the job's processes on this host.
  static unsigned sharers() { return std::max(1u, count()) * processes_on_host().load(); }

 private:
  void add(int delta) {
    if (cpu_) counter() += static_cast<unsigned>(delta);
  }
  static std::atomic<unsigned>& counter() {
    static std::atomic<unsigned> c{0};
    return c;
  }
  static std::atomic<unsigned>& processes_on_host() {
    static std::atomic<unsigned> n{1};
    return n;
  }
  bool cpu_;
};

class Device {
 public:
  explicit Device(DeviceInfo info)
      : info_(std::move(info)),
        context_(std::span<const cl_device_id>(&info_.id, 1)),
        queue_(context_, info_.id),
        open_cpu_(info_.kind == DeviceKind::kCpu) {}
  // In `shared`, a context that holds this device among others.
  Device(DeviceInfo info, Context shared)
      : info_(std::move(info)), context_(std::move(shared)), queue_(context_, info_.id), open_cpu_(info_.kind == DeviceKind::kCpu) {}

  const DeviceInfo& info() const { return info_; }
  const Context& context() const { return context_; }
  Queue& queue() { return queue_; }
  // A further queue on the same device (e.g. for communication next to compute).
  Queue make_queue() const { return Queue(context_, info_.id); }

  // The program built for `key` on this device by this process: `build` runs on the key's first
  // call only, later calls share its cl_program (the kernel library's bundled programs,
  // kernels_cl/program_loader.cpp). Released with the device. Thread-safe; a `build` that throws
  // leaves nothing behind.
  Program shared_program(const std::string& key, const std::function<Program()>& build) const {
    std::lock_guard lock(shared_programs_->mutex);
    auto it = shared_programs_->built.find(key);
    if (it == shared_programs_->built.end()) it = shared_programs_->built.emplace(key, build()).first;
    return it->second;
  }

 private:
  struct SharedPrograms {
    std::mutex mutex;
    std::map<std::string, Program> built;
  };

  DeviceInfo info_;
  Context context_;
  Queue queue_;
  OpenCpuDevice open_cpu_;
  std::shared_ptr<SharedPrograms> shared_programs_ = std::make_shared<SharedPrograms>();
};

// Opens `devices` in order. With `share_contexts`, the devices of each platform share one context.
std::vector<std::unique_ptr<Device>> open_devices(const std::vector<DeviceInfo>& devices, bool share_contexts);

}  // namespace paxocl::device
