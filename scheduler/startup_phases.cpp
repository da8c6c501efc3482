#include "scheduler/startup_phases.h"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace paxocl::scheduler {

namespace {

// The process's age in ms: now (CLOCK_BOOTTIME) minus its start time (field 22 of /proc/self/stat,
// clock ticks since boot); 0 where either is unavailable.
double process_age_ms() {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  const std::size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i < 22) continue;
    const long ticks = sysconf(_SC_CLK_TCK);
    timespec now{};
    if (ticks <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return 0;
    const double started_ms = std::stod(field) * 1000.0 / static_cast<double>(ticks);
    const double now_ms = static_cast<double>(now.tv_sec) * 1000.0 + static_cast<double>(now.tv_nsec) / 1e6;
    return now_ms > started_ms ? now_ms - started_ms : 0;
  }
  return 0;
}

// The process's age when this file's statics are initialised, right after the dynamic loader has
// mapped the libraries, and when that was. A shell script that exec's pax-ocl (scripts/run.sh,
// after its set-up and build) hands its own start time on with its process: an age of seconds
// here is the script's, not the loader's.
const double kAgeAtLoadMs = process_age_ms();
const auto kLoaded = std::chrono::steady_clock::now();
constexpr double kLoaderMsAtMost = 2000;

}  // namespace

StartupPhases::StartupPhases() : last_(std::chrono::steady_clock::now()), made_(last_) {
  process_age_at_start_ms_ = kAgeAtLoadMs <= kLoaderMsAtMost
                                 ? process_age_ms()
                                 : std::chrono::duration<double, std::milli>(made_ - kLoaded).count();
}

double StartupPhases::since_process_start_ms() const {
  return process_age_at_start_ms_ +
         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - made_).count();
}

double StartupPhases::done(std::string_view what) {
  const auto now = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
  last_ = now;
  held_.push_back(fmt::format("start-up: {}: {:.0f} ms ({:.1f} s since start)", what, ms, since_process_start_ms() / 1000.0));
  if (released_) release();
  return ms;
}

void StartupPhases::release() {
  released_ = true;
  for (const std::string& line : held_) spdlog::info("{}", line);
  held_.clear();
}

}  // namespace paxocl::scheduler
