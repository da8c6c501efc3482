// Step traces: chosen training steps (TRACE_STEPS) as a Chrome / Perfetto trace
// (job_log_dir/trace.json, open it in ui.perfetto.dev): a process per MPI rank, a track per device
// compute queue (kernels, from OpenCL profiling timestamps) and one for communication (host
// timers of the collectives), on one time base. Also the overlap summary of a step: how long
// communication ran and how much of it no compute hid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/queue.h"

namespace paxocl::scheduler {

// The track of collectives' host-timed events; every other track is a device's kernels.
inline constexpr const char* kCommunicationTrack = "communication";

struct TraceEvent {
  std::string name;
  std::string track;  // "device 0 compute", "communication"
  std::int64_t start_ns = 0, end_ns = 0;  // host steady_clock
};

// host steady_clock ns minus the device's profiling clock ns, estimated with a marker (OpenCL 1.2
// has no clock query): error about the time of one queue round trip.
std::int64_t device_clock_offset_ns(device::Queue& queue);

struct CommOverlap {
  double comm_ms = 0;     // time with any communication running
  double exposed_ms = 0;  // of it, time with no kernel running on any device
  double hidden_fraction() const { return comm_ms > 0 ? 1.0 - exposed_ms / comm_ms : 1.0; }
};
CommOverlap measure_overlap(const std::vector<TraceEvent>& events);

// Chrome trace events ("X" slices plus track names) of one rank.
nlohmann::json chrome_events(const std::vector<TraceEvent>& events, int rank);

}  // namespace paxocl::scheduler
