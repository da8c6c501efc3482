// Pipeline parallelism's arithmetic (host only): which blocks a stage holds, the order in which a
// stage runs its microbatches' forward and backward passes, and what that costs in held
// activations and idle time. The step program (scheduler/pipeline_step.h) runs these orders; the
// planner (plan/) counts them.
//
// A stage axis of p splits the L blocks into p contiguous stages of L/p (praxis's
// LayerwiseShardablePipelined); the embedding lives on stage 0, the final norm, head and loss on
// stage p-1. A model replica's batch runs as m microbatches:
//   gpipe  every forward (0 .. m-1), then every backward (0 .. m-1): a stage holds all m
//          microbatches' activations;
//   1f1b   stage s runs min(p-1-s, m) forwards ahead, then alternates one forward and one backward
//          (PipeDream-Flush / Megatron-LM's non-interleaved schedule), then the remaining
//          backwards: it holds at most min(p-s, m) microbatches.
// Both run microbatch j's backward after its forward and the backwards in order 0 .. m-1, so the
// gradients are summed in the same order by either schedule. The idle fraction of a step (the
// bubble) is (p-1)/(m+p-1) for both.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace paxocl::models {

enum class PipelineSchedule { kGpipe, kOneForwardOneBackward };

// "gpipe" | "1f1b"; ConfigError listing both for anything else.
PipelineSchedule pipeline_schedule_from_name(std::string_view name);
const char* pipeline_schedule_name(PipelineSchedule schedule);

// Blocks [first, end) of stage `stage` of `stages` over `blocks` blocks (stages must divide blocks).
struct StageSpan {
  int stage = 0, stages = 1;
  int first = 0, end = 0;
  bool first_stage() const { return stage == 0; }          // holds the embedding
  bool last_stage() const { return stage == stages - 1; }  // holds the final norm, head and loss
  int blocks() const { return end - first; }
};
StageSpan stage_span(int blocks, int stages, int stage);

// A stage's pass over one microbatch.
struct PipelineOp {
  enum class Kind { kForward, kBackward };
  Kind kind = Kind::kForward;
  int microbatch = 0;
  bool operator==(const PipelineOp&) const = default;
};
// Stage `stage`'s passes in the order it runs them: every microbatch's forward and backward once.
std::vector<PipelineOp> stage_ops(PipelineSchedule schedule, int stages, int stage, int microbatches);
// The most microbatches whose forward stage `stage` has run and whose backward it has not.
int microbatches_in_flight(PipelineSchedule schedule, int stages, int stage, int microbatches);
// The fraction of a step a stage idles for the pipeline to fill and drain: (p-1)/(m+p-1).
double bubble_fraction(int stages, int microbatches);

}  // namespace paxocl::models
