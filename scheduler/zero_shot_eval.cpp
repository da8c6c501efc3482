#include "scheduler/zero_shot_eval.h"

#include <algorithm>
#include <numeric>

namespace paxocl::scheduler {

ZeroShotResult zero_shot_evaluation(const collectives::ProcessWorld& world, StepProgram& program,
                                    const config::JobConfig& job, inputs::ZeroShotTask task,
                                    const std::vector<inputs::ZeroShotExample>& examples) {
  const int rows = static_cast<int>(program.evaluation_model().max_batch());
  // Sequence parallelism splits a batch's rows x length over the tensor axis t: lengths a multiple
  // of t / gcd(rows, t) make it divide.
  const int t = job.mesh.along(device::MeshAxis::kTensor);
  const int multiple = job.step.sequence_parallel && t > 1 ? t / std::gcd(rows, t) : 1;
  const std::vector<inputs::ScoringBatch> batches = inputs::scoring_batches(examples, rows, multiple);
  // Candidate c of example e sits at first[e] + c of the job's score vector (3 doubles each).
  std::vector<std::size_t> first(examples.size() + 1, 0);
  for (std::size_t e = 0; e < examples.size(); ++e) first[e + 1] = first[e] + examples[e].candidates.size();
  std::vector<double> sums(3 * first.back(), 0.0);

  const auto hosts = static_cast<std::size_t>(job.input.num_infeed_hosts);
  const auto host = static_cast<std::size_t>(job.input.infeed_host_index);
  const int tensor_processes = job.mesh.dcn[static_cast<std::size_t>(device::MeshAxis::kTensor)];
  const bool counts = world.rank() % tensor_processes == 0;  // a host's first process
  const std::size_t busiest = (batches.size() + hosts - 1) / hosts;
  const std::size_t runs = program.evaluation_is_collective() ? busiest : 0;
  for (std::size_t k = 0;; ++k) {
    const std::size_t b = k * hosts + host;
    const bool mine = b < batches.size();
    if (!mine && k >= runs) break;
    if (!mine) {  // a collective pass with nothing of this host's left: the first batch, weighted 0
      inputs::Batch idle = batches.front().batch;
      std::fill(idle.weights.begin(), idle.weights.end(), 0.0f);
      program.score(idle);
      continue;
    }
    const inputs::ScoringBatch& s = batches[b];
    const models::PositionScores& p = program.score(s.batch);
    const std::vector<inputs::CandidateScore> scores = inputs::candidate_scores(s, p.losses, p.correct);
    if (!counts) continue;
    for (std::size_t r = 0; r < s.rows.size(); ++r) {
      const std::size_t at = 3 * (first[s.rows[r].first] + s.rows[r].second);
      sums[at] += scores[r].log_likelihood;
      sums[at + 1] += static_cast<double>(scores[r].tokens);
      sums[at + 2] += static_cast<double>(scores[r].greedy);
    }
  }
  world.all_reduce_sum(sums);
  std::vector<std::vector<inputs::CandidateScore>> per_example(examples.size());
  for (std::size_t e = 0; e < examples.size(); ++e) {
    for (std::size_t c = 0; c < examples[e].candidates.size(); ++c) {
      const std::size_t at = 3 * (first[e] + c);
      per_example[e].push_back({sums[at], static_cast<long>(sums[at + 1]), static_cast<long>(sums[at + 2])});
    }
  }
  ZeroShotResult result;
  result.metrics = inputs::zero_shot_metrics(task, examples, per_example);
  result.scores = std::move(per_example);
  return result;
}

}  // namespace paxocl::scheduler
