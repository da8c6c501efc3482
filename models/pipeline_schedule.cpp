#include "models/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::models {

PipelineSchedule pipeline_schedule_from_name(std::string_view name) {
  if (name == "gpipe") return PipelineSchedule::kGpipe;
  if (name == "1f1b") return PipelineSchedule::kOneForwardOneBackward;
  if (name == "circular") return PipelineSchedule::kCircular;
  throw ConfigError(fmt::format("PIPELINE_SCHEDULE={}: use gpipe, 1f1b or circular", name));
}

const char* pipeline_schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::kGpipe: return "gpipe";
    case PipelineSchedule::kOneForwardOneBackward: return "1f1b";
    case PipelineSchedule::kCircular: return "circular";
  }
  return "?";
}

StageSpan stage_span(int blocks, int stages, int stage) {
  if (stages < 1 || blocks % stages != 0 || stage < 0 || stage >= stages) {
    throw std::logic_error(fmt::format("stage_span: stage {} of {} over {} blocks", stage, stages, blocks));
  }
  const int per_stage = blocks / stages;
  return StageSpan{stage, stages, stage * per_stage, (stage + 1) * per_stage};
}

std::vector<PipelineOp> stage_ops(PipelineSchedule schedule, int stages, int stage, int microbatches, int repeat) {
  using Kind = PipelineOp::Kind;
  std::vector<PipelineOp> ops;
  if (schedule == PipelineSchedule::kCircular) {
    ops.reserve(2 * static_cast<std::size_t>(microbatches) * static_cast<std::size_t>(repeat));
    for (int c = 0; c < repeat; ++c) {
      for (int j = 0; j < microbatches; ++j) ops.push_back({Kind::kForward, j, c});
    }
    for (int c = repeat - 1; c >= 0; --c) {
      for (int j = 0; j < microbatches; ++j) ops.push_back({Kind::kBackward, j, c});
    }
    return ops;
  }
  if (repeat != 1) throw std::logic_error("stage_ops: chunks beyond the first need the circular schedule");
  ops.reserve(2 * static_cast<std::size_t>(microbatches));
  const int ahead = schedule == PipelineSchedule::kGpipe ? microbatches : std::min(stages - 1 - stage, microbatches);
  int forward = 0, backward = 0;
  for (; forward < ahead; ++forward) ops.push_back({Kind::kForward, forward});
  for (; forward < microbatches; ++forward) {  // steady state: one forward, one backward
    ops.push_back({Kind::kForward, forward});
    ops.push_back({Kind::kBackward, backward++});
  }
  for (; backward < microbatches; ++backward) ops.push_back({Kind::kBackward, backward});
  return ops;
}

int microbatches_in_flight(PipelineSchedule schedule, int stages, int stage, int microbatches) {
  if (schedule == PipelineSchedule::kCircular) return microbatches;  // every forward of a chunk comes first
  int held = 0, most = 0;
  for (const PipelineOp& op : stage_ops(schedule, stages, stage, microbatches)) {
    held += op.kind == PipelineOp::Kind::kForward ? 1 : -1;
    most = std::max(most, held);
  }
  return most;
}

double bubble_fraction(int stages, int microbatches, int repeat) {
  return static_cast<double>(stages - 1) / (repeat * microbatches + stages - 1);
}

}  // namespace paxocl::models
