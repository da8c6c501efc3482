// Queue: RAII in-order cl_command_queue with profiling enabled, and typed enqueue helpers.
// Every enqueue returns the command's Event and accepts a wait list, so that later modules
// (scheduler/, collectives/) can express dependencies across queues without host stalls.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "device/buffer.h"
#include "device/context.h"
#include "device/event.h"
#include "device/program.h"

namespace paxocl::device {

// A native kernel cannot hand OpenCL an error: it records its failure here (from the device's
// threads), and the queue's next finish() or blocking read or write throws the first one recorded
// as a DeviceError (once), so that no result computed from its output reaches the host, a loss or
// a checkpoint. The owner's next call on the queue may also throw it earlier (throw_if_recorded).
class NativeFailure {
 public:
  void record(const std::string& what);
  void throw_if_recorded();

 private:
  std::mutex mutex_;
  std::string what_;
};

class Queue {
 public:
  Queue() = default;
  Queue(const Context& context, cl_device_id device);

  cl_command_queue get() const { return handle_.get(); }

  template <typename T>
  Event write(const Buffer<T>& dst, std::span<const T> src, bool blocking = true,
              std::span<const Event> wait_for = {}) {
    // OpenCL only reads from `host` on a write; the cast spares a second function.
    return transfer(Direction::kHostToDevice, dst.get(), const_cast<T*>(src.data()),
                    std::min(dst.bytes(), src.size_bytes()), blocking, wait_for);
  }
  template <typename T>
  Event read(const Buffer<T>& src, std::span<T> dst, bool blocking = true,
             std::span<const Event> wait_for = {}) {
    return transfer(Direction::kDeviceToHost, src.get(), dst.data(), std::min(src.bytes(), dst.size_bytes()),
                    blocking, wait_for);
  }

  // Device-side copy of `count` elements (src and dst in this queue's context, possibly another
  // device's buffers when devices share it).
  template <typename T>
  Event copy(const Buffer<T>& src, std::size_t src_offset, const Buffer<T>& dst, std::size_t dst_offset,
             std::size_t count, std::span<const Event> wait_for = {}) {
    return copy_bytes(src.get(), src_offset * sizeof(T), dst.get(), dst_offset * sizeof(T), count * sizeof(T), wait_for);
  }

  // A 2-D device-side copy: `rows` rows of `row_bytes` bytes, row r read at src_row0 + r of src
  // (rows src_pitch bytes apart, from byte src_col of a row) and written likewise into dst.
  struct RowsRegion {
    cl_mem mem;
    std::size_t row0, col, pitch;  // first row, byte column, bytes between rows
  };
  Event copy_rows(const RowsRegion& src, const RowsRegion& dst, std::size_t row_bytes, std::size_t rows);

  // Sets `bytes` bytes of `mem` from its start to zero (0.0 in every dtype).
  Event zero(cl_mem mem, std::size_t bytes);

  // Launches `kernel` over a 1-, 2- or 3-D range. An empty `local` lets the driver choose.
  Event launch(const Kernel& kernel, std::span<const std::size_t> global,
               std::span<const std::size_t> local = {}, std::span<const Event> wait_for = {});

  // A native kernel (a CPU device whose DeviceInfo::native_kernels is true): `fn` runs on one of
  // the device's host threads, in queue order, with a copy of the `args_bytes` bytes at `args`.
  // Memory reaches it as host pointers from map() (enqueued before it, unmapped after), not as
  // cl_mem arguments: PoCL 3.1 resolves those to an address when the kernel is enqueued, and in the
  // model that corrupted the heap (free(): invalid pointer in PoCL's worker thread), while mapped
  // operands run clean.
  Event native(const std::string& name, void (*fn)(void*), const void* args, std::size_t args_bytes,
               std::span<const Event> wait_for = {});

  // Maps `bytes` at byte `offset` of `mem` for host access, in queue order, without waiting: the
  // pointer is valid for commands enqueued after this (a native kernel) until unmap(mem, pointer).
  void* map(cl_mem mem, std::size_t offset, std::size_t bytes, cl_map_flags flags);
  Event unmap(cl_mem mem, void* pointer);

  // An event that completes when everything enqueued so far has (for other queues' wait lists).
  Event marker();
  // Commands enqueued after this wait for `events` (any contexts' user events, e.g. a collective's
  // Pending::device_event): the device waits, not the host.
  void wait_for(std::span<const Event> events);
  void flush() const;
  // Waits for every queued command; DeviceError for a native kernel's failure (NativeFailure).
  void finish() const;
  // Where this queue's native kernels record a failure; lives as long as the queue.
  NativeFailure* native_failure() const { return native_failure_.get(); }

  // Kernel tracing for benchmarks and profiles: while on, every launch's event is kept with the
  // kernel's name; take_trace() waits for them and returns (name, device milliseconds) in launch
  // order, clearing the record.
  struct TraceEntry {
    std::string kernel;
    double ms = 0;
    std::uint64_t start_ns = 0, end_ns = 0;  // the device's clock (see scheduler/trace.h to align it)
  };
  void set_tracing(bool on) { tracing_ = on; }
  std::vector<TraceEntry> take_trace();

 private:
  enum class Direction { kHostToDevice, kDeviceToHost };
  Event transfer(Direction direction, cl_mem buffer, void* host, std::size_t bytes, bool blocking,
                 std::span<const Event> wait_for);
  Event copy_bytes(cl_mem src, std::size_t src_offset, cl_mem dst, std::size_t dst_offset, std::size_t bytes,
                   std::span<const Event> wait_for);

  ClHandle<cl_command_queue> handle_;
  std::shared_ptr<NativeFailure> native_failure_ = std::make_shared<NativeFailure>();  // stays put when the queue moves
  bool tracing_ = false;
  std::vector<std::pair<std::string, Event>> traced_;
};

}  // namespace paxocl::device
