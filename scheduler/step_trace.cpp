#include "scheduler/step_trace.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace paxocl::scheduler {

namespace {
std::int64_t host_now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

using Interval = std::pair<std::int64_t, std::int64_t>;

std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}
}  // namespace

std::int64_t device_clock_offset_ns(device::Queue& queue) {
  queue.finish();
  const std::int64_t before = host_now_ns();
  const device::Event marker = queue.marker();
  marker.wait();
  const std::int64_t after = host_now_ns();
  const auto device_ns = static_cast<std::int64_t>(marker.profile_ns(CL_PROFILING_COMMAND_END));
  return (before + after) / 2 - device_ns;
}

CommOverlap measure_overlap(const std::vector<TraceEvent>& events) {
  std::vector<Interval> comm, compute;
  for (const TraceEvent& e : events) (e.track == kCommunicationTrack ? comm : compute).emplace_back(e.start_ns, e.end_ns);
  const std::vector<Interval> c = merged(comm), k = merged(compute);
  CommOverlap o;
  for (const Interval& i : c) {
    o.comm_ms += static_cast<double>(i.second - i.first) * 1e-6;
    std::int64_t covered = 0;
    for (const Interval& j : k) covered += std::max<std::int64_t>(0, std::min(i.second, j.second) - std::max(i.first, j.first));
    o.exposed_ms += static_cast<double>(i.second - i.first - covered) * 1e-6;
  }
  return o;
}

nlohmann::json chrome_events(const std::vector<TraceEvent>& events, int rank) {
  nlohmann::json out = nlohmann::json::array();
  std::set<std::string> tracks;
  for (const TraceEvent& e : events) tracks.insert(e.track);
  int tid = 0;
  std::map<std::string, int> ids;
  out.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", "rank " + std::to_string(rank)}}}});
  for (const std::string& t : tracks) {
    ids[t] = tid;
    out.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", tid++}, {"args", {{"name", t}}}});
  }
  for (const TraceEvent& e : events) {
    out.push_back({{"name", e.name},
                   {"ph", "X"},
                   {"pid", rank},
                   {"tid", ids[e.track]},
                   {"ts", static_cast<double>(e.start_ns) * 1e-3},
                   {"dur", static_cast<double>(e.end_ns - e.start_ns) * 1e-3}});
  }
  return out;
}

}  // namespace paxocl::scheduler
