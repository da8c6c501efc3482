// Pipeline parallelism's host arithmetic (models/pipeline_schedule.h, models/stage_split.h): every
// schedule (gpipe, 1f1b, circular) runs each microbatch's forward and backward once, in an order that a simulated pipeline
// with blocking receives completes without a deadlock, holding the activations it promises; the
// stages' tensors cover the model's exactly once (the tied token table held by both ends, owned by
// the first), and a whole image survives extract and place.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>
#include <set>

#include "common/errors.h"
#include "models/pipeline_schedule.h"
#include "models/stage_split.h"
#include "models/tensor_names.h"
#include "tests/model_configs.h"

namespace paxocl::models {
namespace {

using Kind = PipelineOp::Kind;
constexpr PipelineSchedule kSchedules[] = {PipelineSchedule::kGpipe, PipelineSchedule::kOneForwardOneBackward};

TEST(PipelineSchedule, EachMicrobatchOnceForwardBeforeBackwardBackwardsInOrder) {
  for (PipelineSchedule schedule : kSchedules) {
    for (int p = 1; p <= 5; ++p) {
      for (int m = 1; m <= 9; ++m) {
        for (int s = 0; s < p; ++s) {
          SCOPED_TRACE(::testing::Message() << pipeline_schedule_name(schedule) << " p=" << p << " m=" << m << " s=" << s);
          const std::vector<PipelineOp> ops = stage_ops(schedule, p, s, m);
          ASSERT_EQ(ops.size(), 2u * static_cast<std::size_t>(m));
          std::vector<int> forwards, backwards;
          std::set<int> open;
          int most = 0;
          for (const PipelineOp& op : ops) {
            if (op.kind == Kind::kForward) {
              forwards.push_back(op.microbatch);
              open.insert(op.microbatch);
            } else {
              ASSERT_TRUE(open.count(op.microbatch)) << "backward " << op.microbatch << " before its forward";
              open.erase(op.microbatch);
              backwards.push_back(op.microbatch);
            }
            most = std::max(most, static_cast<int>(open.size()));
          }
          std::vector<int> in_order(static_cast<std::size_t>(m));
          std::iota(in_order.begin(), in_order.end(), 0);
          EXPECT_EQ(forwards, in_order);
          EXPECT_EQ(backwards, in_order);  // the gradients add up in one order whatever the schedule
          const int promised = schedule == PipelineSchedule::kGpipe ? m : std::min(p - s, m);
          EXPECT_EQ(most, promised);
          EXPECT_EQ(microbatches_in_flight(schedule, p, s, m), promised);
        }
      }
    }
  }
}

// Every stage runs its ops in order; a forward of virtual stage v > 0 (chunk c of stage s: v =
// c*p + s) waits for v-1's forward of the microbatch, a backward of v < p*r-1 for v+1's backward
// (messages queue without bound, as StageMessages' do). Each round runs every op that can run; a
// round without progress is a deadlock. Returns the rounds.
int simulate(PipelineSchedule schedule, int p, int m, int r) {
  std::vector<std::vector<PipelineOp>> ops;
  for (int s = 0; s < p; ++s) ops.push_back(stage_ops(schedule, p, s, m, r));
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::set<std::tuple<int, int, int>> done;  // (virtual stage, kind, microbatch)
  const int last = p * r - 1;
  int rounds = 0;
  while (std::any_of(next.begin(), next.end(), [&](std::size_t n) { return n < 2 * static_cast<std::size_t>(m * r); })) {
    std::vector<std::tuple<int, int, int>> ran;
    for (int s = 0; s < p; ++s) {
      auto& n = next[static_cast<std::size_t>(s)];
      if (n == ops[static_cast<std::size_t>(s)].size()) continue;
      const PipelineOp& op = ops[static_cast<std::size_t>(s)][n];
      const int v = op.chunk * p + s;
      const bool forward = op.kind == Kind::kForward;
      const bool ready = forward ? (v == 0 || done.count({v - 1, 0, op.microbatch}))
                                 : (v == last || done.count({v + 1, 1, op.microbatch}));
      if (!ready) continue;
      ran.emplace_back(v, forward ? 0 : 1, op.microbatch);
      ++n;
    }
    if (ran.empty()) {
      ADD_FAILURE() << "deadlock after " << rounds << " rounds";
      return -1;
    }
    done.insert(ran.begin(), ran.end());
    ++rounds;
  }
  return rounds;
}

TEST(PipelineSchedule, SimulatedPipelineCompletesAndTakesTheBubbleItClaims) {
  for (PipelineSchedule schedule : kSchedules) {
    for (int p = 1; p <= 6; ++p) {
      for (int m = 1; m <= 12; ++m) {
        SCOPED_TRACE(::testing::Message() << pipeline_schedule_name(schedule) << " p=" << p << " m=" << m);
        // With forward and backward taking a round each, a step takes 2(m + p - 1) rounds: the
        // stages idle (p - 1) / (m + p - 1) of it.
        EXPECT_EQ(simulate(schedule, p, m, 1), 2 * (m + p - 1));
        EXPECT_DOUBLE_EQ(bubble_fraction(p, m), static_cast<double>(p - 1) / (m + p - 1));
      }
    }
  }
}

// The circular schedule: chunks of L/(p*r) blocks, a round each; with m a multiple of p the ring
// stays full and a step takes 2(r*m + p - 1) rounds: the bubble (p-1)/(r*m+p-1).
TEST(PipelineSchedule, CircularScheduleShrinksTheBubble) {
  for (int p = 1; p <= 4; ++p) {
    for (int r = 1; r <= 3; ++r) {
      for (int m = p; m <= 3 * p; m += p) {
        SCOPED_TRACE(::testing::Message() << "p=" << p << " r=" << r << " m=" << m);
        EXPECT_EQ(simulate(PipelineSchedule::kCircular, p, m, r), 2 * (r * m + p - 1));
        EXPECT_DOUBLE_EQ(bubble_fraction(p, m, r), static_cast<double>(p - 1) / (r * m + p - 1));
        for (int s = 0; s < p; ++s) {
          const std::vector<PipelineOp> ops = stage_ops(PipelineSchedule::kCircular, p, s, m, r);
          ASSERT_EQ(ops.size(), 2u * static_cast<std::size_t>(m * r));
          std::set<std::tuple<int, int, int>> seen;
          for (const PipelineOp& op : ops) seen.insert({op.chunk, static_cast<int>(op.kind), op.microbatch});
          EXPECT_EQ(seen.size(), ops.size());  // each chunk's forward and backward of each microbatch once
          EXPECT_EQ(microbatches_in_flight(PipelineSchedule::kCircular, p, s, m), m);
        }
      }
    }
  }
  EXPECT_THROW(stage_ops(PipelineSchedule::kGpipe, 2, 0, 4, 2), std::logic_error);
}

TEST(PipelineSchedule, NamesAndSpans) {
  EXPECT_EQ(pipeline_schedule_from_name("gpipe"), PipelineSchedule::kGpipe);
  EXPECT_EQ(pipeline_schedule_from_name("1f1b"), PipelineSchedule::kOneForwardOneBackward);
  EXPECT_EQ(pipeline_schedule_from_name("circular"), PipelineSchedule::kCircular);
  EXPECT_THROW(pipeline_schedule_from_name("zigzag"), ConfigError);
  const StageSpan s = stage_span(12, 4, 2);
  EXPECT_EQ(s.first, 6);
  EXPECT_EQ(s.end, 9);
  EXPECT_FALSE(s.first_stage());
  EXPECT_FALSE(s.last_stage());
  EXPECT_TRUE(stage_span(12, 4, 3).last_stage());
  EXPECT_THROW(stage_span(10, 4, 0), std::logic_error);
}

// Every element of the whole image is owned by exactly one stage; each stage gets its tensors'
// values; the tied table is on both ends of a GPT and left out of the last stage's norm.
void expect_stages_cover(const ModelConfig& config, int stages, bool tied) {
  const ParameterLayout whole(config, 64);
  std::vector<float> image(whole.total());
  std::iota(image.begin(), image.end(), 1.0f);
  std::vector<float> rebuilt(whole.total(), 0.0f);
  std::vector<int> owners(whole.total(), 0);
  for (int s = 0; s < stages; ++s) {
    const StageSpan span = stage_span(config.num_blocks(), stages, s);
    const ParameterLayout local(stage_tensor_defs(config.tensor_defs(), span), span.blocks(), 64);
    const StageSplit split(whole, local, span);
    EXPECT_EQ(local.num_blocks(), span.blocks());
    const std::vector<float> part = split.extract(image);
    for (const TensorSpec& t : local.tensors()) {
      const TensorSpec& w = whole.at(t.name);
      for (std::size_t i = 0; i < t.count; ++i) ASSERT_EQ(part[t.offset + i], image[w.offset + i]) << t.name;
      if (t.block >= 0) {
        EXPECT_EQ(t.block + span.first, w.block) << t.name;
      }
    }
    std::vector<float> placed(whole.total(), 0.0f);
    split.place(part, placed);
    for (std::size_t i = 0; i < placed.size(); ++i) {
      if (placed[i] != 0.0f) {
        ++owners[i];
        rebuilt[i] = placed[i];
      }
    }
    const bool end = span.first_stage() || span.last_stage();
    EXPECT_EQ(split.shared_ranges().size(), tied && end && stages > 1 ? 1u : 0u) << "stage " << s;
    EXPECT_EQ(split.replica_ranges().size(), tied && span.last_stage() && stages > 1 ? 1u : 0u) << "stage " << s;
  }
  for (const TensorSpec& t : whole.tensors()) {
    for (std::size_t i = 0; i < t.count; ++i) ASSERT_EQ(owners[t.offset + i], 1) << t.name << " element " << i;
  }
  for (const TensorSpec& t : whole.tensors()) {
    for (std::size_t i = 0; i < t.count; ++i) ASSERT_EQ(rebuilt[t.offset + i], image[t.offset + i]) << t.name;
  }
}

TEST(StageSplit, StagesCoverTheModelOnce) {
  const ModelConfig gpt = testing::gpt_config(6, 16, 32, 2, 8, 8, 40);
  for (int stages : {1, 2, 3, 6}) expect_stages_cover(gpt, stages, true);
  const ModelConfig llama = testing::tiny_llama_config(4);
  for (int stages : {1, 2, 4}) expect_stages_cover(llama, stages, false);
}

}  // namespace
}  // namespace paxocl::models
