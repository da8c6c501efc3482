// ShardPlan (FSDP's split of the parameters) on the host: units, aligned shards that partition
// every unit as evenly as the alignment allows, weight-decay segments, and exact extract / place
// round trips.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/errors.h"
#include "models/initial_parameters.h"
#include "models/shard_plan.h"
#include "tests/model_configs.h"

namespace paxocl::models {
namespace {

struct Case {
  GptConfig config;
  std::size_t alignment;
};

std::vector<Case> cases() {
  return {{testing::gpt_config(3, 36, 100, 3, 12, 16, 500), 64},   // odd sizes: padding everywhere
          {testing::gpt_config(1, 64, 256, 4, 16, 32, 512), 16},   // one block: its range crosses the decay boundary
          {testing::gpt_config(2, 8, 32, 2, 4, 8, 37), 1}};        // alignment 1
}

TEST(ShardPlan, UnitsPackEveryTensorOnceAndDecayTheirMatrices) {
  for (const Case& c : cases()) {
    const ParameterLayout layout(c.config, c.alignment);
    std::size_t packed = 0;
    for (int b = -1; b < layout.num_blocks(); ++b) {
      const ParameterLayout::Unit u = layout.unit(b);
      EXPECT_EQ(u.decayed % c.alignment, 0u);
      for (const TensorSpec& t : layout.tensors()) {
        if (ParameterLayout::block_of(t) != b) continue;
        const std::size_t at = layout.packed_offset(t);
        EXPECT_EQ(at % c.alignment, 0u) << t.name;
        EXPECT_LE(at + t.count, u.size) << t.name;
        EXPECT_EQ(at < u.decayed, t.decay) << t.name;
        packed += t.count;
      }
    }
    EXPECT_EQ(packed, static_cast<std::size_t>(layout.parameter_count()));
  }
}

TEST(ShardPlan, ShardsAreAlignedAndPartitionEveryUnit) {
  for (const Case& c : cases()) {
    const ParameterLayout layout(c.config, c.alignment);
    for (int dcn = 1; dcn <= 3; ++dcn) {
      for (int ici = 1; ici <= 4; ++ici) {
        const ShardPlan plan(layout, dcn, ici);
        for (const ParameterLayout::Unit& u : plan.units()) {
          std::size_t next = 0;
          for (int p = 0; p < dcn; ++p) {
            for (int d = 0; d < ici; ++d) {
              const ShardPlan::Piece s = plan.shard(u.block, p, d);
              ASSERT_EQ(s.begin, next) << "unit " << u.block << " shard " << p << "," << d;
              ASSERT_TRUE(s.begin % c.alignment == 0 || s.begin == u.size);
              EXPECT_EQ(plan.shard_offset(u.block, p, d) % c.alignment, 0u);
              next = s.end;
            }
          }
          EXPECT_EQ(next, u.size) << "unit " << u.block << " over " << dcn << " x " << ici;
        }
      }
    }
  }
}

// As even as the alignment allows (shard_plan.h): counted in alignment blocks (a partial last one
// whole), the pieces of each split, the chunks of a unit and the shards of a chunk, differ by at
// most one block, the larger ones first.
TEST(ShardPlan, PiecesDifferByAtMostOneAlignmentBlockLargerFirst) {
  for (const Case& c : cases()) {
    const ParameterLayout layout(c.config, c.alignment);
    auto blocks = [&](const ShardPlan::Piece& p) { return (p.end - p.begin + c.alignment - 1) / c.alignment; };
    auto expect_even = [&](const std::vector<ShardPlan::Piece>& pieces, const std::string& what) {
      for (std::size_t i = 1; i < pieces.size(); ++i) {
        EXPECT_LE(blocks(pieces[i]), blocks(pieces[i - 1])) << what << ", piece " << i;
        EXPECT_LE(blocks(pieces.front()), blocks(pieces[i]) + 1) << what << ", piece " << i;
      }
    };
    for (int dcn = 1; dcn <= 3; ++dcn) {
      for (int ici = 1; ici <= 4; ++ici) {
        const ShardPlan plan(layout, dcn, ici);
        for (const ParameterLayout::Unit& u : plan.units()) {
          const std::string unit = "unit " + std::to_string(u.block) + " over " + std::to_string(dcn) + " x " +
                                   std::to_string(ici) + ", alignment " + std::to_string(c.alignment);
          std::vector<ShardPlan::Piece> chunks;
          for (int p = 0; p < dcn; ++p) {
            chunks.push_back(plan.chunk(u.block, p));
            std::vector<ShardPlan::Piece> shards;
            for (int d = 0; d < ici; ++d) shards.push_back(plan.shard(u.block, p, d));
            expect_even(shards, unit + ", chunk " + std::to_string(p));
          }
          expect_even(chunks, unit);
        }
      }
    }
  }
}

TEST(ShardPlan, ExtractAndPlaceRoundTripAndSegmentsFollowTheDecayOfEachElement) {
  for (const Case& c : cases()) {
    const ParameterLayout layout(c.config, c.alignment);
    std::vector<float> flat = initial_parameters(layout, 7, 0.5f), decay_flags(layout.total(), 0.0f);
    std::mt19937 rng(3);
    for (const TensorSpec& t : layout.tensors()) {
      for (std::size_t i = 0; i < t.count; ++i) {
        flat[t.offset + i] = std::uniform_real_distribution<float>(-1, 1)(rng);
        decay_flags[t.offset + i] = t.decay ? 1.0f : 2.0f;  // 0 stays padding
      }
    }
    for (int dcn = 1; dcn <= 3; ++dcn) {
      for (int ici = 1; ici <= 4; ++ici) {
        const ShardPlan plan(layout, dcn, ici);
        std::vector<float> rebuilt(layout.total(), 0.0f);
        for (int p = 0; p < dcn; ++p) {
          for (int d = 0; d < ici; ++d) {
            const std::vector<float> shards = plan.extract(flat, p, d);
            ASSERT_EQ(shards.size(), plan.shard_floats(p, d));
            plan.place(shards, p, d, rebuilt);
            const std::vector<float> flags = plan.extract(decay_flags, p, d);
            for (const ShardPlan::Segment& s : plan.decay_segments(p, d)) {
              EXPECT_EQ(s.offset % c.alignment, 0u);
              for (std::size_t i = s.offset; i < s.offset + s.count; ++i) {
                if (flags[i] != 0.0f) {
                  ASSERT_EQ(flags[i] == 1.0f, s.decay) << "element " << i << " of shard " << p << "," << d;
                }
              }
            }
          }
        }
        ASSERT_EQ(rebuilt, flat) << dcn << " x " << ici;
      }
    }
  }
}

TEST(ShardPlan, ZeroPartsIsAConfigError) {
  const ParameterLayout layout(cases().front().config, 64);
  EXPECT_THROW(ShardPlan(layout, 0, 1), paxocl::ConfigError);
  EXPECT_THROW(ShardPlan(layout, 1, 0), paxocl::ConfigError);
}

}  // namespace
}  // namespace paxocl::models
