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
//   circular (praxis's CircularLayerwiseShardablePipelined, CIRCULAR_REPEAT = r): the blocks split
//          into p*r chunks of L/(p*r), chunk c on stage c mod p (round robin), so a microbatch
//          passes the ring of stages r times; stage s holds chunks s, s+p, ..., each a "virtual
//          stage" v = c*p + s (below: chunk index c = v / p). A stage runs every microbatch's
//          forward of its chunk 0, then of its chunk 1, ..., then the backwards from its last
//          chunk down (m a multiple of p keeps the ring full): it holds all m microbatches of
//          every chunk, and the bubble shrinks to (p-1)/(r*m+p-1).
// Every schedule runs microbatch j's backward after its forward and each chunk's backwards in
// order 0 .. m-1, so the gradients are summed in the same order by each. The idle fraction of a
// step (the bubble) is (p-1)/(m+p-1) for gpipe and 1f1b.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace paxocl::models {

enum class PipelineSchedule { kGpipe, kOneForwardOneBackward, kCircular };

// "gpipe" | "1f1b" | "circular"; ConfigError listing them for anything else.
PipelineSchedule pipeline_schedule_from_name(std::string_view name);
const char* pipeline_schedule_name(PipelineSchedule schedule);

// Blocks [first, end) of stage `stage` of `stages` over `blocks` blocks (stages must divide blocks).
// Under the circular schedule, stages = p*r virtual stages and stage = c*p + s.
struct StageSpan {
  int stage = 0, stages = 1;
  int first = 0, end = 0;
  bool first_stage() const { return stage == 0; }          // holds the embedding
  bool last_stage() const { return stage == stages - 1; }  // holds the final norm, head and loss
  int blocks() const { return end - first; }
};
StageSpan stage_span(int blocks, int stages, int stage);

// A stage's pass over one microbatch, of its chunk `chunk` (0 but under the circular schedule).
struct PipelineOp {
  enum class Kind { kForward, kBackward };
  Kind kind = Kind::kForward;
  int microbatch = 0;
  int chunk = 0;
  bool operator==(const PipelineOp&) const = default;
};
// Stage `stage`'s passes in the order it runs them: every microbatch's forward and backward once
// per chunk (`repeat` chunks under the circular schedule, else 1).
std::vector<PipelineOp> stage_ops(PipelineSchedule schedule, int stages, int stage, int microbatches, int repeat = 1);
// The most microbatches whose forward stage `stage` has run and whose backward it has not, per
// chunk it holds.
int microbatches_in_flight(PipelineSchedule schedule, int stages, int stage, int microbatches);
// The fraction of a step a stage idles for the pipeline to fill and drain: (p-1)/(r*m+p-1), r = 1
// but under the circular schedule.
double bubble_fraction(int stages, int microbatches, int repeat = 1);

}  // namespace paxocl::models
