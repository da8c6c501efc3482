// Zero-shot scoring's host side (inputs/zero_shot_scoring.h): the rows a forward pass scores
// (context and candidate shifted by one, weight only where a candidate token is predicted, padding
// weighted 0), each row's log-likelihood and greedy tokens from per-position losses, and Pax's
// metrics (acc_strict, token accuracy, log-perplexity over the targets, boolq_acc), worked by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "inputs/zero_shot_scoring.h"

namespace paxocl::testing {
namespace {

using inputs::CandidateScore;
using inputs::ZeroShotExample;
using inputs::ZeroShotTask;

ZeroShotExample example(std::vector<int> context, std::vector<std::vector<int>> candidates, int answer = 0) {
  return ZeroShotExample{1, std::move(context), std::move(candidates), answer};
}

TEST(ZeroShotScoring, RowsPredictTheCandidateFromTheContext) {
  // Example 0: context [1 2 3], target [4 5]; example 1 (BoolQ-like): context [6], candidates [7] and [8 9].
  const std::vector<ZeroShotExample> examples = {example({1, 2, 3}, {{4, 5}}), example({6}, {{7}, {8, 9}}, 1)};
  const auto batches = inputs::scoring_batches(examples, 2);
  ASSERT_EQ(batches.size(), 2u);
  const inputs::Batch& b0 = batches[0].batch;
  EXPECT_EQ(b0.batch, 2);
  EXPECT_EQ(b0.seq_len, 4);  // the longest row: 3 + 2 - 1
  EXPECT_EQ(batches[0].rows, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 0}}));
  // row 0: ids 1 2 3 4, targets 2 3 4 5, weights on the positions predicting 4 and 5
  EXPECT_EQ(std::vector<int>(b0.ids.begin(), b0.ids.begin() + 4), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(std::vector<int>(b0.targets.begin(), b0.targets.begin() + 4), (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(std::vector<float>(b0.weights.begin(), b0.weights.begin() + 4), (std::vector<float>{0, 0, 1, 1}));
  // row 1: ids 6, target 7, weight 1; the rest padding
  EXPECT_EQ(b0.ids[4], 6);
  EXPECT_EQ(b0.targets[4], 7);
  EXPECT_EQ(std::vector<float>(b0.weights.begin() + 4, b0.weights.end()), (std::vector<float>{1, 0, 0, 0}));
  // the last batch: one real row (6 8 -> 8 9), one weight-0 filler row
  const inputs::Batch& b1 = batches[1].batch;
  EXPECT_EQ(b1.batch, 2);
  EXPECT_EQ(b1.seq_len, 2);
  EXPECT_EQ(batches[1].rows, (std::vector<std::pair<std::size_t, std::size_t>>{{1, 1}}));
  EXPECT_EQ(b1.ids, (std::vector<int>{6, 8, 0, 0}));
  EXPECT_EQ(b1.targets, (std::vector<int>{8, 9, 0, 0}));
  EXPECT_EQ(b1.weights, (std::vector<float>{1, 1, 0, 0}));
  b0.validate(10, 4);
  b1.validate(10, 4);

  // Per-position losses and greedy flags (what the LM head returns, weighted): row 0 predicts its
  // target's tokens at cross-entropies 0.5 and 1.5, the second not greedy; row 1 at 0.25, greedy.
  const std::vector<float> losses = {9, 9, 0.5f, 1.5f, 0.25f, 0, 0, 0};
  const std::vector<float> correct = {1, 1, 1, 0, 1, 0, 0, 0};
  const std::vector<CandidateScore> s = inputs::candidate_scores(batches[0], losses, correct);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_DOUBLE_EQ(s[0].log_likelihood, -2.0);
  EXPECT_EQ(s[0].tokens, 2);
  EXPECT_EQ(s[0].greedy, 1);
  EXPECT_DOUBLE_EQ(s[1].log_likelihood, -0.25);
  EXPECT_EQ(s[1].greedy, 1);
}

// Sequence parallelism: a batch's length rounded up (padding weighted 0), the scores unchanged.
TEST(ZeroShotScoring, LengthsRoundUpToAMultiple) {
  const std::vector<ZeroShotExample> examples = {example({1, 2, 3}, {{4, 5}})};
  const auto batches = inputs::scoring_batches(examples, 1, 3);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].batch.seq_len, 6);
  EXPECT_EQ(batches[0].batch.weights, (std::vector<float>{0, 0, 1, 1, 0, 0}));
}

TEST(ZeroShotScoring, LambadaMetricsByHand) {
  const std::vector<ZeroShotExample> examples = {example({1}, {{2, 3}}), example({1}, {{2}}), example({1}, {{2, 3, 4}})};
  // all greedy / one of one greedy / two of three greedy
  const std::vector<std::vector<CandidateScore>> scores = {{{-1.0, 2, 2}}, {{-0.5, 1, 1}}, {{-4.5, 3, 2}}};
  const inputs::ZeroShotMetrics m = inputs::zero_shot_metrics(ZeroShotTask::kLambada, examples, scores);
  EXPECT_EQ(m.examples, 3);
  EXPECT_EQ(m.tokens, 6);
  EXPECT_DOUBLE_EQ(m.acc_strict, 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.token_accuracy, 5.0 / 6);
  EXPECT_DOUBLE_EQ(m.log_pplx, 6.0 / 6);
}

TEST(ZeroShotScoring, BoolqAnswersYesWhenYesIsLikelierAndATieIsNo) {
  const std::vector<ZeroShotExample> examples = {example({1}, {{2}, {3}}, 0), example({1}, {{2}, {3}}, 1),
                                                 example({1}, {{2}, {3}}, 0), example({1}, {{2}, {3}}, 1)};
  const std::vector<std::vector<CandidateScore>> scores = {
      {{-1.0, 1, 1}, {-2.0, 1, 0}},   // says yes, right
      {{-1.0, 1, 1}, {-2.0, 1, 0}},   // says yes, wrong
      {{-3.0, 1, 0}, {-3.0, 1, 0}},   // a tie: no, wrong
      {{-3.0, 1, 0}, {-1.0, 1, 1}}};  // says no, right
  const inputs::ZeroShotMetrics m = inputs::zero_shot_metrics(ZeroShotTask::kBoolq, examples, scores);
  EXPECT_EQ(m.examples, 4);
  EXPECT_DOUBLE_EQ(m.boolq_acc, 0.5);
}

}  // namespace
}  // namespace paxocl::testing
