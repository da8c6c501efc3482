// The next-token sampler: one token id from a row of logits, with temperature, top-k and top-p
// (nucleus) sampling as praxis's DefaultNextTokenSampler (praxis/sample_decode.py) applies them.
//
// The distribution, for logits l over the model's real vocabulary (V ids, no padding):
//   temperature 0     argmax, the lowest id on ties (praxis's greedy decode); no draw.
//   otherwise         p(i) = exp(l_i / T) / sum over kept j of exp(l_j / T) for kept ids, 0 elsewhere.
// The kept ids, as praxis chooses them (top-k first, then top-p):
//   top_k > 0         the k largest logits; ties at the k-th place keep the lowest ids (lax.top_k).
//                     k >= V keeps all.
//   top_p < 1         then, of those, the smallest set of the most probable whose mass reaches
//                     top_p, the boundary token included, and every id whose logit equals the
//                     boundary logit (praxis masks logits below the cutoff logit). The mass is
//                     softmax(l) renormalised over the top-k set, at temperature 1: praxis masks
//                     the raw logits and applies the temperature afterwards (as Gumbel noise
//                     scaled by T), so T reshapes the probabilities inside the nucleus but does
//                     not change which tokens are in it (Hugging Face instead divides by T first).
//                     When rounding leaves the cumulative mass below top_p, everything is kept.
// A draw takes u, a uniform double in [0, 1) from the top 53 bits of one rng() output, and returns
// the first id (in increasing order) whose cumulative weight passes u * total, so a seed gives the
// same tokens with every standard library (unlike std::discrete_distribution or
// std::generate_canonical, which are implementation-defined).
#pragma once

#include <random>
#include <span>
#include <vector>

namespace paxocl::sampling {

struct SamplingOptions {
  float temperature = 1.0f;  // 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
};

// Temperature finite and >= 0, top_k >= 0, 0 < top_p <= 1; otherwise a ConfigError naming the flag
// (--temperature, --top_k, --top_p) and the rule.
void validate(const SamplingOptions& options);

// One token id drawn from sampling_distribution(logits, options) with `rng` (no draw when the
// temperature is 0). Validates the options; DataError when logits is empty, holds a NaN or +inf,
// or is -inf everywhere.
int sample_token(std::span<const float> logits, const SamplingOptions& options, std::mt19937_64& rng);

// The probabilities sample_token draws from, over all V ids (0 outside the kept set); for tests
// and for `bench`. Same checks as sample_token.
std::vector<double> sampling_distribution(std::span<const float> logits, const SamplingOptions& options);

}  // namespace paxocl::sampling
