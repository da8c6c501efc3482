#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "common/errors.h"

namespace paxocl::sampling {

void validate(const SamplingOptions& options) {
  if (!std::isfinite(options.temperature) || options.temperature < 0.0f) {
    throw ConfigError(fmt::format("--temperature={}: must be a finite number >= 0 (0 = greedy)", options.temperature));
  }
  if (options.top_k < 0) throw ConfigError(fmt::format("--top_k={}: must be >= 0 (0 = off)", options.top_k));
  if (!(options.top_p > 0.0f && options.top_p <= 1.0f)) {  // also refuses NaN
    throw ConfigError(fmt::format("--top_p={}: must be in (0, 1] (1 = off)", options.top_p));
  }
}

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Largest logit first, ties to the lower id: a strict total order, so every sort and partial sort
// gives the same sequence with every standard library (and top-k ties keep the lowest ids).
struct ByLogitDescending {
  std::span<const float> logits;
  bool operator()(int a, int b) const {
    const float la = logits[static_cast<std::size_t>(a)], lb = logits[static_cast<std::size_t>(b)];
    return la > lb || (la == lb && a < b);
  }
};

void check_logits(std::span<const float> logits) {
  if (logits.empty()) throw DataError("sampling: no logits (a vocabulary of 0 ids)");
  bool any_finite = false;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i]) || logits[i] == kInf) {
      throw DataError(fmt::format("sampling: the logit of id {} is {}; the model's output is not finite", i, logits[i]));
    }
    any_finite = any_finite || logits[i] != -kInf;
  }
  if (!any_finite) throw DataError("sampling: every logit is -inf; no token can be drawn");
}

// The first id of the largest logit.
int argmax(std::span<const float> logits) {
  return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Weights over all V ids: exp((l - max) / T) for the ids top-k and top-p keep, 0 for the others;
// `total` is their sum (> 0: the largest kept logit weighs 1).
struct Weights {
  std::vector<double> weights;
  double total = 0;
};

// The ids top-k then top-p keep, in no particular order.
std::vector<int> kept_ids(std::span<const float> logits, const SamplingOptions& options) {
  const int vocab = static_cast<int>(logits.size());
  const ByLogitDescending by_logit{logits};
  std::vector<int> ids(static_cast<std::size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  const bool top_k = options.top_k > 0 && options.top_k < vocab;
  const bool top_p = options.top_p < 1.0f;
  if (top_k) {
    std::partial_sort(ids.begin(), ids.begin() + options.top_k, ids.end(), by_logit);
    ids.resize(static_cast<std::size_t>(options.top_k));
  } else if (top_p) {
    std::sort(ids.begin(), ids.end(), by_logit);
  }
  if (!top_p) return ids;
  // softmax(l) over the top-k set at temperature 1 (praxis masks the raw logits), accumulated from
  // the most probable: the first id whose cumulative mass reaches top_p is the boundary.
  const double max = logits[static_cast<std::size_t>(ids.front())];
  std::vector<double> mass(ids.size());
  double sum = 0;
  for (std::size_t j = 0; j < ids.size(); ++j) {
    mass[j] = std::exp(static_cast<double>(logits[static_cast<std::size_t>(ids[j])]) - max);
    sum += mass[j];
  }
  const double threshold = static_cast<double>(options.top_p) * sum;
  double cumulative = 0;
  std::size_t keep = ids.size();  // rounding may never reach top_p: then everything stays
  for (std::size_t j = 0; j < ids.size(); ++j) {
    cumulative += mass[j];
    if (cumulative >= threshold) {
      keep = j + 1;
      break;
    }
  }
  // Ids tied with the boundary logit stay too: praxis masks only logits below the cutoff logit.
  const float cutoff = logits[static_cast<std::size_t>(ids[keep - 1])];
  while (keep < ids.size() && logits[static_cast<std::size_t>(ids[keep])] == cutoff) ++keep;
  ids.resize(keep);
  return ids;
}

Weights sampling_weights(std::span<const float> logits, const SamplingOptions& options) {
  const std::vector<int> kept = kept_ids(logits, options);
  double max = -kInf;
  for (int id : kept) max = std::max(max, static_cast<double>(logits[static_cast<std::size_t>(id)]));
  const double temperature = options.temperature;
  Weights w;
  w.weights.assign(logits.size(), 0.0);
  for (int id : kept) {
    // (l - max) / T <= 0: no overflow for any T > 0; -inf logits weigh exactly 0.
    w.weights[static_cast<std::size_t>(id)] = std::exp((static_cast<double>(logits[static_cast<std::size_t>(id)]) - max) / temperature);
  }
  for (double v : w.weights) w.total += v;  // in id order, as sample_token accumulates
  return w;
}

// A uniform double in [0, 1) from the top 53 bits of one output: the same on every platform
// (std::generate_canonical's use of the engine is not).
double uniform_double(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

int sample_token(std::span<const float> logits, const SamplingOptions& options, std::mt19937_64& rng) {
  validate(options);
  check_logits(logits);
  if (options.temperature == 0.0f) return argmax(logits);
  const Weights w = sampling_weights(logits, options);
  // The cumulative distribution over ids in increasing order: the first id whose running sum
  // passes u * total. Ids of weight 0 never pass it.
  const double target = uniform_double(rng) * w.total;
  double cumulative = 0;
  int last_drawable = 0;
  for (std::size_t i = 0; i < w.weights.size(); ++i) {
    if (w.weights[i] == 0.0) continue;
    cumulative += w.weights[i];
    last_drawable = static_cast<int>(i);
    if (cumulative > target) return last_drawable;
  }
  return last_drawable;  // unreachable in exact arithmetic (u < 1); guards the last rounding
}

std::vector<double> sampling_distribution(std::span<const float> logits, const SamplingOptions& options) {
  validate(options);
  check_logits(logits);
  std::vector<double> probabilities(logits.size(), 0.0);
  if (options.temperature == 0.0f) {
    probabilities[static_cast<std::size_t>(argmax(logits))] = 1.0;
    return probabilities;
  }
  const Weights w = sampling_weights(logits, options);
  for (std::size_t i = 0; i < probabilities.size(); ++i) probabilities[i] = w.weights[i] / w.total;
  return probabilities;
}

}  // namespace paxocl::sampling
