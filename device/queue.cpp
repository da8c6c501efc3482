#include "device/queue.h"

#include <algorithm>

#include "common/errors.h"

namespace paxocl::device {

namespace {
// OpenCL wants a null pointer, not a pointer to an empty array, for an empty wait list.
struct WaitList {
  explicit WaitList(std::span<const Event> events) : raw(raw_events(events)) {}
  cl_uint size() const { return static_cast<cl_uint>(raw.size()); }
  const cl_event* data() const { return raw.empty() ? nullptr : raw.data(); }
  std::vector<cl_event> raw;
};
}  // namespace

void NativeFailure::record(const std::string& what) {
  std::lock_guard lock(mutex_);
  if (what_.empty()) what_ = what.empty() ? "a native kernel failed" : what;
}

void NativeFailure::throw_if_recorded() {
  std::string what;
  {
    std::lock_guard lock(mutex_);
    what.swap(what_);
  }
  if (!what.empty()) throw DeviceError(what);
}

Queue::Queue(const Context& context, cl_device_id device) {
  cl_int err = CL_SUCCESS;
  // clCreateCommandQueue is the 1.2 entry point; every ICD still exports it.
  cl_command_queue q = clCreateCommandQueue(context.get(), device, CL_QUEUE_PROFILING_ENABLE, &err);
  check_cl(err, "clCreateCommandQueue", "creating a profiling command queue");
  handle_ = ClHandle<cl_command_queue>(q);
}

Event Queue::transfer(Direction direction, cl_mem buffer, void* host, std::size_t bytes, bool blocking,
                      std::span<const Event> wait_for) {
  WaitList wait(wait_for);
  cl_event ev = nullptr;
  const cl_bool block = blocking ? CL_TRUE : CL_FALSE;
  if (direction == Direction::kHostToDevice) {
    check_cl(clEnqueueWriteBuffer(handle_.get(), buffer, block, 0, bytes, host, wait.size(), wait.data(), &ev),
             "clEnqueueWriteBuffer", "copying " + format_bytes(bytes) + " host to device");
  } else {
    check_cl(clEnqueueReadBuffer(handle_.get(), buffer, block, 0, bytes, host, wait.size(), wait.data(), &ev),
             "clEnqueueReadBuffer", "copying " + format_bytes(bytes) + " device to host");
  }
  Event done(ev);
  if (blocking) native_failure_->throw_if_recorded();
  return done;
}

Event Queue::copy_bytes(cl_mem src, std::size_t src_offset, cl_mem dst, std::size_t dst_offset, std::size_t bytes,
                       std::span<const Event> wait_for) {
  WaitList wait(wait_for);
  cl_event ev = nullptr;
  check_cl(clEnqueueCopyBuffer(handle_.get(), src, dst, src_offset, dst_offset, bytes, wait.size(), wait.data(), &ev),
           "clEnqueueCopyBuffer", "copying " + format_bytes(bytes) + " between device buffers");
  return Event(ev);
}

Event Queue::launch(const Kernel& kernel, std::span<const std::size_t> global,
                    std::span<const std::size_t> local, std::span<const Event> wait_for) {
  WaitList wait(wait_for);
  cl_event ev = nullptr;
  check_cl(clEnqueueNDRangeKernel(handle_.get(), kernel.get(), static_cast<cl_uint>(global.size()),
                                  nullptr, global.data(), local.empty() ? nullptr : local.data(),
                                  wait.size(), wait.data(), &ev),
           "clEnqueueNDRangeKernel", "launching kernel '" + kernel.name() + "'");
  Event event(ev);
  if (tracing_) traced_.emplace_back(kernel.name(), event);
  return event;
}

Event Queue::native(const std::string& name, void (*fn)(void*), const void* args, std::size_t args_bytes,
                    std::span<const Event> wait_for) {
  WaitList wait(wait_for);
  cl_event ev = nullptr;
  // OpenCL copies `args` before returning; the cast is its C signature's.
  check_cl(clEnqueueNativeKernel(handle_.get(), fn, const_cast<void*>(args), args_bytes, 0, nullptr, nullptr,
                                 wait.size(), wait.data(), &ev),
           "clEnqueueNativeKernel", "running native kernel '" + name + "'");
  Event event(ev);
  if (tracing_) traced_.emplace_back(name, event);
  return event;
}

Event Queue::copy_rows(const RowsRegion& src, const RowsRegion& dst, std::size_t row_bytes, std::size_t rows) {
  const std::array<std::size_t, 3> src_origin = {src.col, src.row0, 0}, dst_origin = {dst.col, dst.row0, 0},
                                   region = {row_bytes, rows, 1};
  cl_event ev = nullptr;
  check_cl(clEnqueueCopyBufferRect(handle_.get(), src.mem, dst.mem, src_origin.data(), dst_origin.data(), region.data(),
                                   src.pitch, 0, dst.pitch, 0, 0, nullptr, &ev),
           "clEnqueueCopyBufferRect", "copying " + std::to_string(rows) + " rows of " + format_bytes(row_bytes));
  return Event(ev);
}

Event Queue::zero(cl_mem mem, std::size_t bytes) {
  const cl_uchar pattern = 0;
  cl_event ev = nullptr;
  check_cl(clEnqueueFillBuffer(handle_.get(), mem, &pattern, sizeof pattern, 0, bytes, 0, nullptr, &ev),
           "clEnqueueFillBuffer", "zeroing " + format_bytes(bytes));
  return Event(ev);
}

void* Queue::map(cl_mem mem, std::size_t offset, std::size_t bytes, cl_map_flags flags) {
  cl_int err = CL_SUCCESS;
  void* pointer = clEnqueueMapBuffer(handle_.get(), mem, CL_FALSE, flags, offset, bytes, 0, nullptr, nullptr, &err);
  check_cl(err, "clEnqueueMapBuffer", "mapping " + format_bytes(bytes) + " of a buffer for a native kernel");
  return pointer;
}

Event Queue::unmap(cl_mem mem, void* pointer) {
  cl_event ev = nullptr;
  check_cl(clEnqueueUnmapMemObject(handle_.get(), mem, pointer, 0, nullptr, &ev), "clEnqueueUnmapMemObject",
           "unmapping a native kernel's buffer");
  return Event(ev);
}

std::vector<Queue::TraceEntry> Queue::take_trace() {
  std::vector<TraceEntry> out;
  out.reserve(traced_.size());
  for (const auto& [name, event] : traced_) {
    event.wait();
    out.push_back({name, event.elapsed_ms(), event.profile_ns(CL_PROFILING_COMMAND_START),
                   event.profile_ns(CL_PROFILING_COMMAND_END)});
  }
  traced_.clear();
  return out;
}

Event Queue::marker() {
  cl_event ev = nullptr;
  check_cl(clEnqueueMarkerWithWaitList(handle_.get(), 0, nullptr, &ev), "clEnqueueMarkerWithWaitList",
           "marking a point in a command queue");
  return Event(ev);
}

void Queue::wait_for(std::span<const Event> events) {
  if (events.empty()) return;
  std::vector<cl_event> list;
  for (const Event& e : events) list.push_back(e.get());
  check_cl(clEnqueueBarrierWithWaitList(handle_.get(), static_cast<cl_uint>(list.size()), list.data(), nullptr),
           "clEnqueueBarrierWithWaitList", "making a queue wait for other queues' or the host's events");
}

void Queue::flush() const { check_cl(clFlush(handle_.get()), "clFlush", "submitting queued commands"); }
void Queue::finish() const {
  check_cl(clFinish(handle_.get()), "clFinish", "waiting for queued commands to complete");
  native_failure_->throw_if_recorded();
}

}  // namespace paxocl::device
