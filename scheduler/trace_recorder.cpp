#include "scheduler/trace_recorder.h"

#include <algorithm>
#include <fstream>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "device/kernel_times.h"

namespace paxocl::scheduler {

TraceRecorder::TraceRecorder(std::vector<long> steps, StepProgram& program) : steps_(std::move(steps)), program_(program) {
  if (steps_.empty()) return;
  for (device::Device* d : program_.devices()) clock_offsets_.push_back(device_clock_offset_ns(d->queue()));
}

bool TraceRecorder::chosen(long step) const { return std::find(steps_.begin(), steps_.end(), step) != steps_.end(); }

void TraceRecorder::begin_step(long step) {
  if (chosen(step)) program_.set_tracing(true);
}

void TraceRecorder::end_step(long step, int rank) {
  if (!chosen(step)) return;
  const std::vector<TraceEvent> events = program_.take_trace(clock_offsets_, step);
  const CommOverlap o = measure_overlap(events);
  if (program_.communicates()) {
    spdlog::info("step {} trace: {} events; communication {:.2f} ms, exposed {:.2f} ms ({:.0f}% hidden behind compute)",
                 step, events.size(), o.comm_ms, o.exposed_ms, 100 * o.hidden_fraction());
  } else {
    spdlog::info("step {} trace: {} events; no communication (one replica)", step, events.size());
  }
  device::KernelTimes times;  // summed over the process's devices
  for (const TraceEvent& e : events) {
    if (e.track != kCommunicationTrack) times.add(e.name, static_cast<double>(e.end_ns - e.start_ns) * 1e-6);
  }
  spdlog::info("step {} kernels (device ms, calls; {:.2f} ms in all on {} device{}): {}", step, times.total_ms(),
               program_.devices().size(), program_.devices().size() == 1 ? "" : "s", times.format());
  for (auto& e : chrome_events(events, rank)) events_.push_back(e);
}

void TraceRecorder::write(const collectives::ProcessWorld& world, const std::filesystem::path& file) const {
  if (steps_.empty()) return;
  const std::vector<std::string> parts = world.all_gather(events_.dump());  // every rank's events
  if (world.rank() != 0) return;
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& p : parts) {
    for (auto& e : nlohmann::json::parse(p)) all.push_back(e);
  }
  std::ofstream(file) << nlohmann::json{{"traceEvents", all}}.dump() << "\n";
  spdlog::info("trace of steps {} written to {} (open it in ui.perfetto.dev)", fmt::join(steps_, ","), file.string());
}

}  // namespace paxocl::scheduler
