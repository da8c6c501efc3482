// Zero-shot scoring (Pax's `lambada_eval`, CustomMetricsLM's `acc_strict` and `boolq_acc`), the host
// side: examples (inputs/zero_shot_examples.h) into batches, and the metrics from what a forward
// pass says of each position.
//   Each (example, candidate) is one row: ids = context + candidate without its last token, targets
//   the next tokens, weight 1 on the positions that predict a candidate token and 0 elsewhere (on
//   the context, on the padding that fills a batch's rows to its longest row, and on the rows that
//   fill the last batch). With those weights the LM head's per-position loss is the candidate
//   token's cross-entropy and its "correct" flag whether the greedy (first argmax) token was it.
//   Per row: log-likelihood = -sum of the losses, tokens, greedy = sum of the flags.
//   Lambada: acc_strict = examples whose every target token is greedy / examples; token accuracy =
//   greedy / tokens; log_pplx = -log-likelihood / tokens (all over the targets only).
//   BoolQ: the model answers yes when log P(" yes" | prompt) > log P(" no" | prompt) (a tie is no);
//   boolq_acc = right answers / examples.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "inputs/batch.h"
#include "inputs/zero_shot_examples.h"

namespace paxocl::inputs {

struct ScoringBatch {
  Batch batch;                                    // rows_per_batch rows of the longest row's length
  std::vector<std::pair<std::size_t, std::size_t>> rows;  // (example, candidate) of each real row, in order
};

// The examples' rows in order, `rows_per_batch` to a batch (the last filled with weight-0 rows),
// each batch's length rounded up to a multiple of `length_multiple` (sequence parallelism needs
// rows x length to divide by the tensor axis).
std::vector<ScoringBatch> scoring_batches(const std::vector<ZeroShotExample>& examples, int rows_per_batch,
                                          int length_multiple = 1);

struct CandidateScore {
  double log_likelihood = 0;  // sum over the candidate's tokens of log P(token | what precedes it)
  long tokens = 0;
  long greedy = 0;  // tokens that were the first argmax
};

// Each real row's score from the forward's per-position losses and correct flags (b-major, as the
// batch's rows; weights as scoring_batches set them).
std::vector<CandidateScore> candidate_scores(const ScoringBatch& scored, std::span<const float> losses,
                                             std::span<const float> correct);

struct ZeroShotMetrics {
  long examples = 0;
  long tokens = 0;                // target tokens scored (Lambada; BoolQ: the right answers')
  double acc_strict = 0;          // Lambada
  double token_accuracy = 0;      // Lambada
  double log_pplx = 0;            // Lambada: over the target tokens
  double boolq_acc = 0;           // BoolQ
};

// `scores[e][c]`: example e's candidate c.
ZeroShotMetrics zero_shot_metrics(ZeroShotTask task, const std::vector<ZeroShotExample>& examples,
                                  const std::vector<std::vector<CandidateScore>>& scores);

}  // namespace paxocl::inputs
