#include "inputs/zero_shot_scoring.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace paxocl::inputs {

namespace {
std::size_t row_length(const ZeroShotExample& e, std::size_t candidate) {
  return e.context.size() + e.candidates.at(candidate).size() - 1;
}
}  // namespace

std::vector<ScoringBatch> scoring_batches(const std::vector<ZeroShotExample>& examples, int rows_per_batch,
                                          int length_multiple) {
  if (rows_per_batch < 1 || length_multiple < 1) throw std::logic_error("scoring_batches: counts below 1");
  std::vector<std::pair<std::size_t, std::size_t>> all;
  for (std::size_t e = 0; e < examples.size(); ++e) {
    for (std::size_t c = 0; c < examples[e].candidates.size(); ++c) all.emplace_back(e, c);
  }
  const auto per = static_cast<std::size_t>(rows_per_batch);
  std::vector<ScoringBatch> out;
  for (std::size_t first = 0; first < all.size(); first += per) {
    ScoringBatch s;
    s.rows.assign(all.begin() + static_cast<std::ptrdiff_t>(first),
                  all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), first + per)));
    std::size_t T = 1;
    for (const auto& [e, c] : s.rows) T = std::max(T, row_length(examples[e], c));
    const auto multiple = static_cast<std::size_t>(length_multiple);
    T = (T + multiple - 1) / multiple * multiple;
    s.batch = Batch{rows_per_batch, static_cast<int>(T), {}, {}, {}};
    s.batch.ids.assign(per * T, 0);
    s.batch.targets.assign(per * T, 0);
    s.batch.weights.assign(per * T, 0.0f);
    for (std::size_t r = 0; r < s.rows.size(); ++r) {
      const ZeroShotExample& ex = examples[s.rows[r].first];
      std::vector<int> tokens = ex.context;
      const std::vector<int>& candidate = ex.candidates.at(s.rows[r].second);
      tokens.insert(tokens.end(), candidate.begin(), candidate.end());
      for (std::size_t t = 0; t + 1 < tokens.size(); ++t) {
        s.batch.ids[r * T + t] = tokens[t];
        s.batch.targets[r * T + t] = tokens[t + 1];
        if (t + 1 >= ex.context.size()) s.batch.weights[r * T + t] = 1.0f;  // predicts a candidate token
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<CandidateScore> candidate_scores(const ScoringBatch& scored, std::span<const float> losses,
                                             std::span<const float> correct) {
  const auto T = static_cast<std::size_t>(scored.batch.seq_len);
  const std::size_t positions = static_cast<std::size_t>(scored.batch.batch) * T;
  if (losses.size() < positions || correct.size() < positions) {
    throw std::logic_error(fmt::format("candidate_scores: {} positions, {} losses", positions, losses.size()));
  }
  std::vector<CandidateScore> out(scored.rows.size());
  for (std::size_t r = 0; r < scored.rows.size(); ++r) {
    for (std::size_t t = 0; t < T; ++t) {
      if (scored.batch.weights[r * T + t] == 0.0f) continue;
      out[r].log_likelihood -= losses[r * T + t];
      out[r].tokens += 1;
      out[r].greedy += correct[r * T + t] > 0.0f ? 1 : 0;
    }
  }
  return out;
}

ZeroShotMetrics zero_shot_metrics(ZeroShotTask task, const std::vector<ZeroShotExample>& examples,
                                  const std::vector<std::vector<CandidateScore>>& scores) {
  if (scores.size() != examples.size()) throw std::logic_error("zero_shot_metrics: a score list per example");
  ZeroShotMetrics m;
  m.examples = static_cast<long>(examples.size());
  long strict = 0, greedy = 0, right = 0;
  double log_likelihood = 0;
  for (std::size_t e = 0; e < examples.size(); ++e) {
    const std::vector<CandidateScore>& s = scores[e];
    if (task == ZeroShotTask::kLambada) {
      const CandidateScore& target = s.at(0);
      strict += target.greedy == target.tokens ? 1 : 0;
      greedy += target.greedy;
      m.tokens += target.tokens;
      log_likelihood += target.log_likelihood;
    } else {
      const int said = s.at(0).log_likelihood > s.at(1).log_likelihood ? 0 : 1;  // a tie is no
      right += said == examples[e].answer ? 1 : 0;
      m.tokens += s.at(static_cast<std::size_t>(examples[e].answer)).tokens;
    }
  }
  const double n = static_cast<double>(std::max<long>(m.examples, 1));
  if (task == ZeroShotTask::kLambada) {
    m.acc_strict = static_cast<double>(strict) / n;
    m.token_accuracy = m.tokens > 0 ? static_cast<double>(greedy) / static_cast<double>(m.tokens) : 0.0;
    m.log_pplx = m.tokens > 0 ? -log_likelihood / static_cast<double>(m.tokens) : 0.0;
  } else {
    m.boolq_acc = static_cast<double>(right) / n;
  }
  return m;
}

}  // namespace paxocl::inputs
