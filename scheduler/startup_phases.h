// StartupPhases: one info line per start-up phase of a job, with the phase's own time and the time
// since the process started, so that the seconds before the first step are accounted for:
//   [info] start-up: devices opened and the step program built: 2310 ms (2.5 s since start)
// The process start is read from the kernel (/proc/self/stat), so the dynamic loader's time, MPI's
// start-up and the configuration's parsing are counted too; where the process was over 2 s old
// when pax-ocl's statics were initialised, another program ran in it before exec'ing pax-ocl (a
// set-up script), and the time counts from that initialisation instead. Lines are held back until
// release(): a job that stops on a bad layout prints its one-line error alone.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace paxocl::scheduler {

class StartupPhases {
 public:
  StartupPhases();
  // Logs `what` with the time since the previous phase (or the constructor) and since the process
  // started; returns the phase's milliseconds.
  double done(std::string_view what);
  // Logs the phases held back so far, and every later one as it ends.
  void release();
  // Milliseconds since the process started (since the constructor where /proc is unreadable).
  double since_process_start_ms() const;

 private:
  std::chrono::steady_clock::time_point last_;
  double process_age_at_start_ms_ = 0;  // the process's age when this object was made (above)
  std::chrono::steady_clock::time_point made_;
  bool released_ = false;
  std::vector<std::string> held_;  // lines before release()
};

}  // namespace paxocl::scheduler
