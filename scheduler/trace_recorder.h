// TraceRecorder: the TRACE_STEPS of a training job (step_trace.h): turns tracing on around each
// chosen step, logs the step's communication overlap, and at the end gathers every rank's events
// into job_log_dir/trace.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/process_world.h"
#include "scheduler/step_program.h"

namespace paxocl::scheduler {

class TraceRecorder {
 public:
  TraceRecorder(std::vector<long> steps, StepProgram& program);  // steps are 1-based

  void begin_step(long step);  // before step `step` runs
  void end_step(long step, int rank);
  // Collective: rank 0 writes every rank's events to `file` (nothing when no step was chosen).
  void write(const collectives::ProcessWorld& world, const std::filesystem::path& file) const;

 private:
  bool chosen(long step) const;
  std::vector<long> steps_;
  StepProgram& program_;
  std::vector<std::int64_t> clock_offsets_;  // per device: host ns - device ns
  nlohmann::json events_ = nlohmann::json::array();
};

}  // namespace paxocl::scheduler
