// Event: RAII cl_event. Events from a profiling-enabled Queue report device timestamps.
// A user event (Event::user) is completed by the host (e.g. by the communication side of a
// collective) and can sit in a device queue's wait list.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "device/cl_error.h"
#include "device/cl_handle.h"
#include "device/context.h"

namespace paxocl::device {

class Event {
 public:
  Event() = default;
  explicit Event(cl_event owned) : handle_(owned) {}

  static Event user(const Context& context) {
    cl_int err = CL_SUCCESS;
    cl_event ev = clCreateUserEvent(context.get(), &err);
    check_cl(err, "clCreateUserEvent", "creating a host-completed event");
    return Event(ev);
  }

  cl_event get() const { return handle_.get(); }
  explicit operator bool() const { return static_cast<bool>(handle_); }

  void wait() const {
    cl_event ev = handle_.get();
    check_cl(clWaitForEvents(1, &ev), "clWaitForEvents", "waiting for a device operation");
  }
  // Completes a user event: CL_COMPLETE, or a negative error status that fails its dependants.
  void set_user_status(cl_int status) const {
    check_cl(clSetUserEventStatus(handle_.get(), status), "clSetUserEventStatus",
             "completing a host-side event");
  }
  cl_int status() const {
    cl_int s = 0;
    check_cl(clGetEventInfo(handle_.get(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, nullptr),
             "clGetEventInfo", "querying an event's status");
    return s;
  }
  // Device timestamps in nanoseconds (needs a profiling queue; the event must be complete).
  std::uint64_t profile_ns(cl_profiling_info what) const {
    cl_ulong t = 0;
    check_cl(clGetEventProfilingInfo(handle_.get(), what, sizeof t, &t, nullptr),
             "clGetEventProfilingInfo", "reading a kernel's device timestamps");
    return t;
  }
  double elapsed_ms() const {
    return static_cast<double>(profile_ns(CL_PROFILING_COMMAND_END) -
                               profile_ns(CL_PROFILING_COMMAND_START)) * 1e-6;
  }

 private:
  ClHandle<cl_event> handle_;
};

// The raw handles of a list of events, for an enqueue call's wait list.
inline std::vector<cl_event> raw_events(std::span<const Event> events) {
  std::vector<cl_event> raw;
  raw.reserve(events.size());
  for (const Event& e : events) raw.push_back(e.get());
  return raw;
}

}  // namespace paxocl::device
